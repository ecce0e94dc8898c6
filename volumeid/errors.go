package volumeid

import (
	"errors"
	"strconv"
)

// ErrInvalid is wrapped by every error this package returns for an input it
// cannot parse or compose.
var ErrInvalid = errors.New("invalid volume identifier")

// ParseError describes an identifier that could not be parsed. Identifiers are
// not secret, so the input is included (quoted, and truncated when long).
type ParseError struct {
	// Kind names the identifier type, for example "RBD migration handle".
	Kind string
	// Input is the text that failed to parse.
	Input string
	// Msg says what is wrong and what would be accepted.
	Msg string
}

// Error implements error.
func (e *ParseError) Error() string {
	in := e.Input
	if len(in) > 160 {
		in = in[:160] + "..."
	}
	return "invalid " + e.Kind + " " + strconv.Quote(in) + ": " + e.Msg
}

// Unwrap returns ErrInvalid so that errors.Is(err, ErrInvalid) holds.
func (e *ParseError) Unwrap() error { return ErrInvalid }

func parseErr(kind, in, msg string) error {
	return &ParseError{Kind: kind, Input: in, Msg: msg}
}
