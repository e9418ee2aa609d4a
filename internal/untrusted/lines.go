package untrusted

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// The kinds of InputError, matched with errors.Is.
var (
	// ErrBinary: the input starts with binary data (a NUL byte, a control
	// character, bytes that are not UTF-8, a compressed or archive file's
	// magic number, UTF-16 text), not text.
	ErrBinary = errors.New("not a text file")
	// ErrLineTooLong: a line is longer than the reader's line limit.
	ErrLineTooLong = errors.New("line too long")
	// ErrTooLarge: the input is longer than the reader's total limit.
	ErrTooLarge = errors.New("input too large")
)

// InputError is a problem with the input as a stream of lines or as the
// start of a document, found by LineReader, CheckText or CheckJSONStart
// before any reader parses it. Readers turn it into their
// own error type (with their limit's name); Msg says what was found and
// what to do, without the file name or line.
type InputError struct {
	Line   int   // the 1-based line at fault
	Offset int64 // byte offset of the problem: the line's start, the bad byte, the limit
	Msg    string
	Err    error // ErrBinary, ErrNotJSON, ErrLineTooLong or ErrTooLarge
}

func (e *InputError) Error() string { return Format("", e.Line, "", e.Msg) }

// Unwrap returns the error's kind.
func (e *InputError) Unwrap() error { return e.Err }

var bom = []byte("\uFEFF")

// Limits are the bounds a LineReader enforces, with the names a message
// gives them so that a user can find them (a constant or a flag).
type Limits struct {
	Line     int    // the longest line, in bytes without its ending (>= 1)
	LineName string // e.g. "workload.MaxLineBytes"
	Total    int64  // the longest input, in bytes (>= 1)
	// TotalName names Total; TotalHint, optional, says what to do when the
	// input is longer (e.g. "read a part of it with --max-rows").
	TotalName, TotalHint string
}

// LineReader splits a stream into lines ending in "\n", "\r\n" or a lone
// "\r" (old Mac files; the last line may lack an ending), numbering them
// from 1 and dropping a UTF-8 byte order mark at the start. It enforces
// bounds at once, without reading past them: the start of the input must
// be text (CheckText: its first SniffBytes hold no NUL byte, control
// character or invalid UTF-8, and no compressed-file signature), no line may be longer than Limits.Line bytes (without its
// ending), and the whole input may not be longer than Limits.Total bytes.
// Memory stays within the line limit plus a small buffer.
type LineReader struct {
	r          io.Reader
	buf        []byte // buffered input is buf[start:end]
	start, end int
	scanned    int   // buf[start:start+scanned] holds no line ending
	err        error // the error that ended reading (io.EOF at the end)
	read       int64 // bytes read from r
	line       int   // lines returned so far
	off        int64 // offset of buf[start] in the input
	sniffed    bool
	lim        Limits
	empty      int   // consecutive reads that returned nothing
	failed     error // the error Next returned, returned again by every later call
}

// initialBuf is the first buffer size (64 KiB, bufio's order): lines of
// real traces are far shorter, and the buffer grows only up to the line
// limit when a longer line needs it.
const initialBuf = 64 << 10

// maxEmptyReads stops a reader that keeps returning 0 bytes and no error
// (bufio uses the same count before io.ErrNoProgress).
const maxEmptyReads = 100

// NewLineReader returns a LineReader over r with the given limits.
func NewLineReader(r io.Reader, lim Limits) *LineReader {
	return &LineReader{r: r, lim: lim}
}

// Line is the number of the line Next last returned (0 before the first).
func (lr *LineReader) Line() int { return lr.line }

// Offset is the byte offset just past the line Next last returned and its
// ending.
func (lr *LineReader) Offset() int64 { return lr.off }

// Next returns the next line without its ending; the slice is valid until
// the next call. At the end of the input it returns io.EOF; an *InputError
// when a bound is crossed; an error from the underlying reader as it is.
// After an error every later call returns an error.
func (lr *LineReader) Next() ([]byte, error) {
	if lr.failed != nil {
		return nil, lr.failed
	}
	b, err := lr.next()
	if err != nil && err != io.EOF {
		lr.failed = err
	}
	return b, err
}

func (lr *LineReader) next() ([]byte, error) {
	if !lr.sniffed {
		if err := lr.sniff(); err != nil {
			return nil, err
		}
	}
	for {
		data := lr.buf[lr.start:lr.end]
		if i := indexEOL(data, lr.scanned); i >= 0 {
			n := i + 1
			if data[i] == '\r' {
				if i+1 == len(data) && lr.err == nil { // a "\n" may follow in the next read
					lr.scanned = i
					if err := lr.fill(); err != nil {
						return nil, err
					}
					continue
				}
				if i+1 < len(data) && data[i+1] == '\n' {
					n++
				}
			}
			if i > lr.lim.Line {
				return nil, lr.tooLong()
			}
			return lr.emit(data[:i], n), nil
		}
		lr.scanned = len(data)
		if len(data) > lr.lim.Line {
			return nil, lr.tooLong()
		}
		if lr.err != nil {
			if len(data) == 0 || lr.err != io.EOF {
				return nil, lr.err
			}
			return lr.emit(data, len(data)), nil // the last line, without an ending
		}
		if err := lr.fill(); err != nil {
			return nil, err
		}
	}
}

// emit consumes n bytes holding line b and its ending and returns b.
func (lr *LineReader) emit(b []byte, n int) []byte {
	lr.start += n
	lr.off += int64(n)
	lr.scanned = 0
	lr.line++
	return b
}

// indexEOL returns the index of the first "\r" or "\n" in b at or after
// from, or -1.
func indexEOL(b []byte, from int) int {
	b = b[from:]
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		i = j
	}
	if i == len(b) {
		return -1
	}
	return from + i
}

func (lr *LineReader) tooLong() error {
	lr.err = &InputError{Line: lr.line + 1, Offset: lr.off, Err: ErrLineTooLong,
		Msg: fmt.Sprintf("longer than %s (%s): not a text file of lines, or its line breaks are missing",
			Size(int64(lr.lim.Line)), lr.lim.LineName)}
	return lr.err
}

// fill reads more input into the buffer, growing it up to the line limit.
// It returns an error only when the input crosses the total limit or the
// reader makes no progress; an error of the reader (io.EOF included) is
// kept in lr.err for Next to act on once the buffered lines are used up.
func (lr *LineReader) fill() error {
	if lr.start > 0 && (lr.end == len(lr.buf) || lr.start == lr.end) {
		copy(lr.buf, lr.buf[lr.start:lr.end])
		lr.end -= lr.start
		lr.start = 0
	}
	if lr.end == len(lr.buf) {
		n := max(2*len(lr.buf), initialBuf)
		n = min(n, lr.lim.Line+2) // room for the longest line and "\r\n"
		if n <= len(lr.buf) {
			n = len(lr.buf) + 1 // cannot happen: Next stops at maxLine+1 buffered bytes
		}
		nb := make([]byte, n)
		copy(nb, lr.buf[:lr.end])
		lr.buf = nb
	}
	n, err := lr.r.Read(lr.buf[lr.end:])
	if n < 0 || n > len(lr.buf)-lr.end {
		n, err = 0, errors.New("loc: the reader returned an invalid count")
	}
	lr.end += n
	lr.read += int64(n)
	if lr.read > lr.lim.Total {
		lr.err = &InputError{Line: lr.line + 1, Offset: lr.lim.Total, Err: ErrTooLarge,
			Msg: fmt.Sprintf("the input goes on past %s (%s)", Size(lr.lim.Total), lr.lim.TotalName)}
		if lr.lim.TotalHint != "" {
			lr.err.(*InputError).Msg += "; " + lr.lim.TotalHint
		}
		return lr.err
	}
	switch {
	case err != nil:
		lr.err = err
	case n == 0:
		if lr.empty++; lr.empty >= maxEmptyReads {
			lr.err = io.ErrNoProgress
		}
	default:
		lr.empty = 0
	}
	return nil
}

// sniff reads the first SniffBytes and refuses input that is not text
// (CheckText).
func (lr *LineReader) sniff() error {
	lr.sniffed = true
	for lr.end < SniffBytes && lr.err == nil {
		if err := lr.fill(); err != nil {
			return err
		}
	}
	head := lr.buf[:min(lr.end, SniffBytes)]
	if err := CheckText(head, lr.end < SniffBytes); err != nil {
		return err
	}
	if bytes.HasPrefix(head, bom) { // not part of the first line, nor of its length
		lr.start += len(bom)
		lr.off += int64(len(bom))
	}
	return nil
}
