// Errors of reading and generating. See package workload for the overview.

package workload

import (
	"errors"
	"fmt"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// The kinds of error, matched with errors.Is on the *Error that wraps them
// (or, for ErrFormat and ErrConfig, on a plain wrapped error).
var (
	// ErrFormat: the format name is unknown, or Detect cannot tell the
	// format from the first line.
	ErrFormat = errors.New("unknown format")
	// ErrNotText: the input starts with binary data (a NUL byte, a control
	// character, bytes that are not UTF-8, a gzip, zstd, bzip2, xz or ZIP
	// signature, UTF-16 text) in its first untrusted.SniffBytes, not lines of text.
	ErrNotText = errors.New("not a text trace")
	// ErrSyntax: a line is not one CSV record or one JSON object, has a
	// different number of fields than the header, or is longer than
	// MaxLineBytes.
	ErrSyntax = errors.New("syntax error")
	// ErrTooLarge: the input goes on past MaxInputBytes, or holds more
	// than MaxRequests requests or MaxPrefixHashes prefix ids.
	ErrTooLarge = errors.New("trace too large")
	// ErrColumn: the CSV header lacks a required column or repeats one.
	ErrColumn = errors.New("bad header")
	// ErrField: a field is missing, unknown (our JSONL only) or has a bad
	// value: a negative, non-integer or too large token count, a bad time.
	ErrField = errors.New("bad field")
	// ErrOrder: a row of a timed CSV or Mooncake file arrives before the
	// row above it (those files are sorted; an out-of-order row means a
	// damaged or concatenated file).
	ErrOrder = errors.New("arrival out of order")
	// ErrNoRows: the trace has no request: a CSV header without rows, an
	// empty JSONL file, or every row bad and skipped under SkipBadRows (the
	// error then names the first bad row, its field and what was wrong).
	ErrNoRows = errors.New("no requests")
	// ErrConfig: a generator or transform got a bad parameter (a rate that
	// is not positive, an empty list of widths, a timed trace where an
	// untimed one is needed), or ReadOptions.Run picks no run of a
	// vllm-bench file (an *Error naming the file's runs).
	ErrConfig = errors.New("bad configuration")
)

// Error is a problem with one line of a trace file. Its message names the
// file, the line and the field, for example
//
//	azure.csv: line 3: field "ContextTokens": must be a positive integer (got "-5")
type Error struct {
	File  string // the name given to Read; may be empty
	Line  int    // 1-based line; a CSV header is line 1
	Field string // the column or JSON key at fault, or empty
	Msg   string // what is wrong
	Err   error  // the kind: ErrFormat, ErrNotText, ErrSyntax, ErrTooLarge, ErrColumn, ErrField, ErrOrder or ErrNoRows
}

func (e *Error) Error() string { return untrusted.Format(e.File, e.Line, e.Field, e.Msg) }

// Unwrap returns the error's kind, so errors.Is(err, ErrField) works.
func (e *Error) Unwrap() error { return e.Err }

func fieldErr(field, format string, args ...any) *Error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...), Err: ErrField}
}

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
}

// clip quotes raw input for an error message, cut to untrusted.QuoteBytes.
func clip(s string) string { return untrusted.Quote(s) }
