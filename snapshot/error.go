package snapshot

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/snapshot/pickle"
)

// The kinds of error, matched with errors.Is on the *Error that wraps them.
// Errors of the pickle layer also match the pickle package's kinds
// (errors.Is(err, pickle.ErrForbidden)).
var (
	// ErrDecode: the file is not a pickle this package can decode safely.
	ErrDecode = errors.New("snapshot: cannot decode pickle")
	// ErrField: a known field is missing, has the wrong type or a bad value.
	ErrField = errors.New("snapshot: bad field")
	// ErrLimit: the snapshot expands past Options.MaxItems.
	ErrLimit = errors.New("snapshot: limit exceeded")
)

// Error is a problem with one snapshot file, for example
//
//	dump.pickle: offset 5120: field "segments[3].blocks[7].size": want int, got str
type Error struct {
	Name   string // the snapshot's name as given to Read; may be empty
	Offset int64  // byte offset of the value at fault, or -1 if unknown
	Field  string // the field path, or empty
	Msg    string // what is wrong
	Err    error  // the kind: ErrDecode, ErrField or ErrLimit
	Cause  error  // the *pickle.Error behind an ErrDecode, or nil
}

func (e *Error) Error() string {
	var sb strings.Builder
	if e.Name != "" {
		sb.WriteString(e.Name)
		sb.WriteString(": ")
	}
	if e.Cause != nil {
		sb.WriteString(e.Cause.Error())
		return sb.String()
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&sb, "offset %d: ", e.Offset)
	}
	if e.Field != "" {
		fmt.Fprintf(&sb, "field %q: ", e.Field)
	}
	sb.WriteString(e.Msg)
	return sb.String()
}

// Unwrap returns the kind and, for decode errors, the pickle error, so that
// errors.Is works with both packages' sentinels.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

func decodeErr(name string, err error) error {
	var pe *pickle.Error
	if errors.As(err, &pe) {
		return &Error{Name: name, Offset: pe.Offset, Msg: pe.Msg, Err: ErrDecode, Cause: pe}
	}
	if name == "" {
		name = "snapshot"
	}
	return fmt.Errorf("reading %s: %w", name, err)
}
