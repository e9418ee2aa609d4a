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
	ErrDecode = errors.New("cannot decode pickle")
	// ErrField: a known field is missing, has the wrong type or a bad value.
	ErrField = errors.New("bad field")
	// ErrLimit: the snapshot expands past Options.MaxBuiltBytes.
	ErrLimit = errors.New("limit exceeded")
	// ErrNotSnapshot: the first bytes show the input is something else (a
	// torch.save ZIP archive, a compressed file, text, zeros). Such errors
	// match ErrDecode too.
	ErrNotSnapshot = errors.New("not a memory snapshot")
)

// Error is a problem with one snapshot file, for example
//
//	dump.pickle: offset 5120: field "segments[3].blocks[7].size": want int, got str
type Error struct {
	Name   string // the snapshot's name as given to Read; may be empty
	Offset int64  // byte offset of the value at fault, or -1 if unknown
	Field  string // the field path, or empty
	Msg    string // what is wrong
	Err    error  // the kind: ErrDecode, ErrField, ErrLimit or ErrNotSnapshot
	Cause  error  // the *pickle.Error behind an ErrDecode, or nil
	// Hint, when not empty, says what the file probably is or what to do;
	// it follows the message after "; ".
	Hint string
}

func (e *Error) Error() string {
	var sb strings.Builder
	if e.Name != "" {
		sb.WriteString(e.Name)
		sb.WriteString(": ")
	}
	if e.Cause != nil {
		sb.WriteString(e.Cause.Error())
	} else {
		if e.Offset >= 0 {
			fmt.Fprintf(&sb, "offset %d: ", e.Offset)
		}
		if e.Field != "" {
			fmt.Fprintf(&sb, "field %q: ", e.Field)
		}
		sb.WriteString(e.Msg)
	}
	if e.Hint != "" {
		sb.WriteString("; ")
		sb.WriteString(e.Hint)
	}
	return sb.String()
}

// Unwrap returns the kind and, for decode errors, the pickle error, so that
// errors.Is works with both packages' sentinels.
func (e *Error) Unwrap() []error {
	errs := []error{e.Err}
	if e.Err == ErrNotSnapshot {
		errs = append(errs, ErrDecode)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

// decodeErr wraps an error of the pickle decoder; head is the start of the
// input, for a hint about what the file is.
func decodeErr(name string, err error, head []byte) error {
	var pe *pickle.Error
	if errors.As(err, &pe) {
		e := &Error{Name: name, Offset: pe.Offset, Msg: pe.Msg, Err: ErrDecode, Cause: pe}
		switch {
		case errors.Is(err, pickle.ErrForbidden):
			e.Hint = "the pickle holds Python objects (a torch.save checkpoint's data.pkl, or another program's pickle), not a memory snapshot; " + howToSnapshot
		case len(head) >= minText && looksLikeText(head):
			e.Hint = "the input looks like text, not a pickle"
		}
		return e
	}
	if name == "" {
		name = "snapshot"
	}
	return fmt.Errorf("reading %s: %w", name, err)
}
