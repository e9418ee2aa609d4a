package pickle

import (
	"errors"
	"fmt"
)

// The kinds of error, matched with errors.Is on the *Error that wraps them.
var (
	// ErrForbidden: an opcode that would look up or call a Python object
	// (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX,
	// PERSID, BINPERSID, EXT1/2/4). Snapshots never contain one.
	ErrForbidden = errors.New("forbidden opcode")
	// ErrOpcode: an opcode this decoder does not support, or no opcode at all.
	ErrOpcode = errors.New("unsupported opcode")
	// ErrTruncated: the input ended inside an opcode or before STOP.
	ErrTruncated = errors.New("truncated input")
	// ErrLength: a declared length is negative or exceeds the remaining input.
	ErrLength = errors.New("bad declared length")
	// ErrLimit: a configured limit (Options) was exceeded.
	ErrLimit = errors.New("limit exceeded")
	// ErrMalformed: the opcodes do not make sense (stack underflow, missing
	// MARK, unknown memo index, wrong operand type, bad protocol, data after
	// STOP, invalid UTF-8).
	ErrMalformed = errors.New("malformed input")
	// ErrUnsupported: valid pickle that this decoder does not represent: an
	// integer wider than 64 bits, or a recursive or mutated-after-use
	// container.
	ErrUnsupported = errors.New("unsupported value")
)

// Error is a problem at one place of the input, for example
//
//	offset 3: BINUNICODE8 (0x8d): declared length exceeds remaining input (1099511627776 > 0 bytes)
type Error struct {
	Offset int64  // byte offset of the opcode at fault, or where the input ended
	Op     byte   // the opcode byte; meaningful when OpName is not empty
	OpName string // the opcode's name ("REDUCE"), "unknown", or empty
	Msg    string // what is wrong
	Err    error  // the kind: one of the Err* sentinels
}

func (e *Error) Error() string {
	s := fmt.Sprintf("offset %d: ", e.Offset)
	if e.OpName != "" {
		s += fmt.Sprintf("%s (%#02x): ", e.OpName, e.Op)
	}
	return s + e.Msg
}

// Unwrap returns the error's kind, so errors.Is(err, ErrForbidden) works.
func (e *Error) Unwrap() error { return e.Err }
