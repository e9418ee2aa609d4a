package optrace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// MaxLineBytes is the longest line Read accepts (1 MiB, without the line
// ending). A valid op needs well under a hundred bytes plus its id; the cap
// keeps a file without newlines from being read into memory as one line,
// and Read fails as soon as a line crosses it.
const MaxLineBytes = 1 << 20

// MaxInputBytes bounds the whole input Read takes (4 GiB, as for request
// traces): far beyond a trace of MaxOps short ops (about 1.5 GiB of JSON),
// it stops an endless stream of blank lines.
const MaxInputBytes int64 = 4 << 30

// MaxOps bounds the ops of one trace (2^25, 33,554,432). An op costs about
// 64 bytes in memory with a short id, so the bound keeps a trace within
// about 2 GiB, and replaying it through a handful of allocators within
// minutes.
const MaxOps = 1 << 25

// lineLimits are Read's bounds on lines and on the whole input.
var lineLimits = untrusted.Limits{Line: MaxLineBytes, LineName: "optrace.MaxLineBytes",
	Total: MaxInputBytes, TotalName: "optrace.MaxInputBytes"}

// opLimit is MaxOps, as a variable that the package's tests lower.
var opLimit = MaxOps

// The kinds of error, matched with errors.Is on the *Error that wraps them.
var (
	// ErrNotText: the input starts with binary data (a NUL byte, a control
	// character, bytes that are not UTF-8, a gzip, zstd, bzip2, xz or ZIP
	// signature, UTF-16 text) in its first untrusted.SniffBytes, not lines of text.
	ErrNotText = errors.New("optrace: not a text trace")
	// ErrSyntax: the line is not a single JSON object (malformed JSON,
	// something after the object, or a line longer than MaxLineBytes).
	ErrSyntax = errors.New("optrace: syntax error")
	// ErrTooLarge: the input goes on past MaxInputBytes or holds more than
	// MaxOps ops.
	ErrTooLarge = errors.New("optrace: trace too large")
	// ErrField: a field is unknown, repeated, missing, or has a bad value.
	ErrField = errors.New("optrace: bad field")
	// ErrUnknownID: a free names an id that was never allocated.
	ErrUnknownID = errors.New("optrace: unknown id")
	// ErrDoubleFree: a free names an id that was already freed.
	ErrDoubleFree = errors.New("optrace: double free")
	// ErrLiveID: an alloc reuses an id that is still live.
	ErrLiveID = errors.New("optrace: id still live")
	// ErrNoOps: the input holds no op (it is empty or blank): there is
	// nothing to replay.
	ErrNoOps = errors.New("optrace: no ops")
)

// Error is a problem with one op of a trace. Its message names the trace,
// the line and the field, for example
//
//	ops.jsonl: line 12: field "size": must be a positive integer (got -5)
type Error struct {
	Name  string // the trace's name as given to Read or Validate; may be empty
	Line  int    // 1-based line (or op number for ops built in code)
	Field string // the JSON field at fault, or empty
	Msg   string // what is wrong
	Err   error  // the kind: ErrNotText, ErrSyntax, ErrTooLarge, ErrField, ErrUnknownID, ErrDoubleFree, ErrLiveID or ErrNoOps
}

func (e *Error) Error() string { return untrusted.Format(e.Name, e.Line, e.Field, e.Msg) }

// Unwrap returns the error's kind, so errors.Is(err, ErrDoubleFree) works.
func (e *Error) Unwrap() error { return e.Err }

// Read reads a whole trace in the format of the package doc and checks it
// with Validate. name labels error messages (a file name, "stdin"); it may be
// empty. Ops carry the line they came from; lines may end in LF, CRLF or a
// lone CR. The first error stops reading; it is an *Error unless reading r
// itself failed. Binary input fails at its first bytes, a line longer than
// MaxLineBytes as soon as it crosses the limit, and a trace over
// MaxInputBytes or MaxOps at the limit. A trace without ops (an empty
// file, blank lines only) is an ErrNoOps error: there is nothing to replay.
func Read(r io.Reader, name string) ([]Op, error) {
	lr := untrusted.NewLineReader(r, lineLimits)
	var (
		ops []Op
		ids tracker
	)
	for {
		b, err := lr.Next()
		if err == io.EOF && len(ops) == 0 {
			what := "empty"
			if lr.Line() > 0 {
				what = "blank lines only"
			}
			return nil, &Error{Name: name, Line: max(1, lr.Line()), Err: ErrNoOps,
				Msg: fmt.Sprintf("no ops (%s): want one JSON object per line, such as %s", what, exampleLine)}
		}
		if err == io.EOF {
			return ops, nil
		}
		if err != nil {
			return nil, inputErr(err, name)
		}
		if isBlank(b) {
			continue
		}
		line := lr.Line()
		if len(ops) >= opLimit {
			return nil, &Error{Name: name, Line: line, Err: ErrTooLarge,
				Msg: fmt.Sprintf("more than %d ops (optrace.MaxOps); split the trace", opLimit)}
		}
		op, e := parseLine(b)
		if e != nil {
			e.Name, e.Line = name, line
			return nil, e
		}
		op.Line = line
		if e := ids.apply(op, len(ops)); e != nil {
			e.Name = name
			return nil, e
		}
		ops = append(ops, op)
	}
}

// inputErr turns an error of the line reader into an *Error, and wraps
// one of r itself.
func inputErr(err error, name string) error {
	var ie *untrusted.InputError
	if !errors.As(err, &ie) {
		if name == "" {
			name = "trace"
		}
		return fmt.Errorf("reading %s: %w", name, err)
	}
	e := &Error{Name: name, Line: ie.Line, Err: ErrSyntax, Msg: ie.Msg}
	switch {
	case errors.Is(err, untrusted.ErrBinary):
		e.Err, e.Msg = ErrNotText, "not a text trace: "+strings.TrimPrefix(ie.Msg, "not a text file: ")
	case errors.Is(err, untrusted.ErrTooLarge):
		e.Err = ErrTooLarge
	}
	return e
}

// isBlank reports whether b holds only JSON whitespace (space, tab, CR, LF).
func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// fieldNames are the keys a line may carry, in the order of parseLine's raw values.
var fieldNames = []string{"op", "id", "size", "stream", "pool"}

// parseLine parses one non-blank line into an op, checking everything that
// does not depend on other lines. The returned *Error lacks Name and Line.
func parseLine(b []byte) (Op, *Error) {
	fieldErr := func(field, format string, args ...any) *Error {
		return &Error{Field: field, Msg: fmt.Sprintf(format, args...), Err: ErrField}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return Op{}, syntaxErr(err, "malformed JSON")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Op{}, &Error{Err: ErrSyntax, Msg: fmt.Sprintf("want a JSON object such as %s, got %s", exampleLine, untrusted.Quote(string(b)))}
	}
	var raw [5]json.RawMessage // indexed like fieldNames
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Op{}, syntaxErr(err, "malformed JSON")
		}
		key, ok := tok.(string)
		if !ok { // cannot happen: Token checks that object keys are strings
			return Op{}, &Error{Err: ErrSyntax, Msg: "malformed JSON: object key is not a string"}
		}
		i := index(fieldNames, key)
		if i < 0 {
			return Op{}, fieldErr(clipString(key), "unknown field (known: op, id, size, stream, pool)")
		}
		if raw[i] != nil {
			return Op{}, fieldErr(key, "appears twice")
		}
		if err := dec.Decode(&raw[i]); err != nil {
			return Op{}, syntaxErr(err, "malformed JSON")
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return Op{}, syntaxErr(err, "malformed JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Op{}, &Error{Err: ErrSyntax, Msg: "unexpected text after the JSON object (one op per line)"}
	}

	var op Op
	if raw[0] == nil {
		return Op{}, fieldErr("op", "missing (want alloc, free, empty_cache or sync)")
	}
	var name string
	if json.Unmarshal(raw[0], &name) != nil {
		return Op{}, fieldErr("op", "must be a string (got %s)", clip(raw[0]))
	}
	k, ok := parseKind(name)
	if !ok {
		return Op{}, fieldErr("op", "unknown op %q (want alloc, free, empty_cache or sync)", clipString(name))
	}
	op.Kind = k
	// Which fields the op takes besides "op".
	takesID, takesSize := k == Alloc || k == Free, k == Alloc
	takes := [4]bool{takesID, takesSize, takesSize, takesSize} // id, size, stream, pool
	for i, f := range fieldNames[1:] {
		if raw[i+1] != nil && !takes[i] {
			return Op{}, fieldErr(f, "not allowed for op %q", k)
		}
	}
	if takes[0] {
		if raw[1] == nil {
			return Op{}, fieldErr("id", "missing")
		}
		if json.Unmarshal(raw[1], &op.ID) != nil || op.ID == "" {
			return Op{}, fieldErr("id", "must be a non-empty string (got %s)", clip(raw[1]))
		}
		if len(op.ID) > MaxIDBytes {
			return Op{}, fieldErr("id", "longer than %d bytes", MaxIDBytes)
		}
	}
	if takes[1] {
		if raw[2] == nil {
			return Op{}, fieldErr("size", "missing (bytes, a positive integer)")
		}
		n, err := strconv.ParseInt(string(raw[2]), 10, 64)
		if err != nil || n <= 0 {
			return Op{}, fieldErr("size", "must be a positive integer (got %s)", clip(raw[2]))
		}
		if n > MaxSize {
			return Op{}, fieldErr("size", "must be at most %d (got %s)", MaxSize, clip(raw[2]))
		}
		op.Size = n
	}
	if takes[2] && raw[3] != nil {
		n, err := strconv.ParseInt(string(raw[3]), 10, 64)
		if err != nil || n < 0 || n > MaxStream {
			return Op{}, fieldErr("stream", "must be an integer from 0 to %d (got %s)", MaxStream, clip(raw[3]))
		}
		op.Stream = int(n)
	}
	if takes[3] && raw[4] != nil {
		pool, ok := parsePool(raw[4])
		if !ok {
			return Op{}, fieldErr("pool", "must be a pair of non-negative integers such as [1,0] (got %s)", clip(raw[4]))
		}
		op.Pool = pool
	}
	return op, nil
}

const exampleLine = `{"op":"alloc","id":"a1","size":16777216,"stream":0}`

func syntaxErr(err error, what string) *Error {
	msg := what + ": " + strings.TrimPrefix(err.Error(), "json: ")
	var se *json.SyntaxError
	if errors.As(err, &se) {
		msg += fmt.Sprintf(" (at byte %d)", se.Offset)
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = what + ": the line ends before the object does"
	}
	return &Error{Err: ErrSyntax, Msg: msg}
}

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// clip shortens a raw JSON value for an error message (untrusted.Clip: its first
// untrusted.QuoteBytes bytes and its length).
func clip(b []byte) string { return untrusted.Clip(string(b)) }

func clipString(s string) string { return untrusted.Clip(s) }
