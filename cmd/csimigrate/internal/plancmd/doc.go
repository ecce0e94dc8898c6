// Package plancmd is csimigrate plan: the options that run package plan's
// planner on the input (a file, the sample or the live cluster, vCenter
// where asked) and print its report (internal/output).
package plancmd
