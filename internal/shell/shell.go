// Package shell quotes words for the shell scripts and command lines
// csimigrate prints for review and runs: one quoting for all of them.
package shell

import "strings"

// safe are the bytes a word may hold and still be left bare.
const safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,"

// Quote is s as one word for a POSIX shell: as it is when it holds only
// bytes no shell treats specially, else in single quotes, each single quote
// in it written as '"'"'.
func Quote(s string) string {
	if s != "" && strings.Trim(s, safe) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}
