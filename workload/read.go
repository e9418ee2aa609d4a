// Reading trace files: line handling, detection, the row loop. See package
// workload for the overview; csv.go and json.go hold the per-format parsers.

package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// MaxLineBytes is the longest line Read accepts (1 MiB, without the line
// ending). The longest real line, a Mooncake request with 247 hash ids, is
// about 2 KB; the cap keeps a file without newlines from being read into
// memory as one line. A longer line is an ErrSyntax error (or a skipped row
// under SkipBadRows), never cut short.
const MaxLineBytes = 1 << 20

// MaxTokens bounds every token count (16,777,216). The longest real prompt in
// the traces is 126,195 tokens; the bound keeps sums of many counts far
// from overflow while leaving room for multi-million-token contexts.
const MaxTokens = 1 << 24

// MaxN bounds Request.N: more parallel samples than this is a typo.
const MaxN = 1024

// ReadOptions tune Read. The zero value reads the whole file and stops at
// the first bad row.
type ReadOptions struct {
	// SkipBadRows drops rows that fail to parse instead of failing; they
	// are counted in Trace.Skipped and the first MaxWarnings messages are
	// kept in Trace.Warnings. Header problems still fail.
	SkipBadRows bool
	// MaxRows stops reading after this many requests (0: no limit); a
	// warning records that the rest of the file was not read.
	MaxRows int
}

// row is what a format's parser makes of one line.
type row struct {
	req     Request
	time    int64 // arrival in ns on the file's own clock, when hasTime
	hasTime bool
	id      bool // req.ID came from the file
	turn    bool // req.Turn came from the file
}

// parser is one format's reader. header sees the first non-blank line of a
// CSV format; row sees every later non-blank line.
type parser interface {
	header(b []byte) *Error
	row(b []byte) (row, *Error)
}

func newParser(f Format) parser {
	switch f {
	case Azure, Vidur, FineServe, BurstGPT:
		return &csvParser{spec: csvSpecs[f]}
	case Mooncake:
		return mooncakeParser{}
	case JSONL:
		return jsonlParser{}
	}
	return nil
}

// Read reads a whole trace. name labels error messages (a file name,
// "stdin"); it may be empty. f is the format, or Auto to detect it from the
// first line with Detect. Rows are parsed and checked as the package doc
// says; the first bad row stops reading with an *Error naming the file, the
// line and the field, unless opts.SkipBadRows. An error from r itself is
// returned wrapped, not as an *Error.
func Read(r io.Reader, name string, f Format, opts ReadOptions) (*Trace, error) {
	lr := &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
	t := &Trace{Name: name, Format: f}
	fail := func(e *Error) (*Trace, error) {
		e.File = name
		return nil, e
	}
	var p parser
	first := true
	var (
		prevTime, origin int64
		prevLine         int
		anyTimed, anyUn  bool
		timedMix         = -1   // JSONL: 1 when rows carry arrival_s, 0 when not
		timed            []bool // parallel to t.Requests: the row had a time
		ids              = map[string]int{}
		turns            = map[string]int{}
	)
	for {
		b, tooLong, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if name == "" {
				name = "trace"
			}
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		if !tooLong && isBlank(b) {
			continue
		}
		if first {
			first = false
			if tooLong {
				return fail(tooLongErr(lr.line))
			}
			if t.Format == Auto {
				g, err := Detect(b)
				if err != nil {
					return fail(&Error{Line: lr.line, Err: ErrFormat, Msg: err.Error()})
				}
				t.Format = g
			}
			p = newParser(t.Format)
			if p == nil {
				return fail(&Error{Line: lr.line, Err: ErrFormat, Msg: fmt.Sprintf("unknown format %v", t.Format)})
			}
			if t.Format != Mooncake && t.Format != JSONL {
				if e := p.header(b); e != nil {
					e.Line = lr.line
					return fail(e)
				}
				continue
			}
		}
		if opts.MaxRows > 0 && len(t.Requests) >= opts.MaxRows {
			t.warn(fmt.Sprintf("%s: stopped after %d requests (MaxRows); lines from %d on were not read",
				displayName(name), opts.MaxRows, lr.line))
			break
		}
		var rw row
		var e *Error
		if tooLong {
			e = tooLongErr(lr.line)
		} else {
			rw, e = p.row(b)
		}
		if e == nil {
			e = checkRow(t.Format, &rw, prevTime, prevLine, anyTimed, &timedMix)
		}
		if e == nil && rw.id {
			if l, ok := ids[rw.req.ID]; ok {
				e = fieldErr("id", "duplicate of line %d (got %s)", l, clip(rw.req.ID))
			}
		}
		if e != nil {
			e.Line = lr.line
			if !opts.SkipBadRows {
				return fail(e)
			}
			e.File = name
			t.Skipped++
			t.warn(e.Error() + " (skipped)")
			continue
		}
		rq := rw.req
		rq.Line = lr.line
		if !rw.id {
			rq.ID = "r" + strconv.Itoa(lr.line)
		}
		ids[rq.ID] = rq.Line
		if rq.N == 0 {
			rq.N = 1
		}
		if rq.Session != "" && !rw.turn {
			turns[rq.Session]++
			rq.Turn = turns[rq.Session]
		}
		if rw.hasTime {
			if !anyTimed && t.Format != JSONL {
				origin = rw.time
			}
			anyTimed = true
			prevTime, prevLine = rw.time, lr.line
			rq.Arrival = rw.time - origin
		} else {
			anyUn = true
		}
		timed = append(timed, rw.hasTime)
		t.Requests = append(t.Requests, rq)
	}
	if first && t.Format != Mooncake && t.Format != JSONL {
		if t.Format == Auto {
			return fail(&Error{Line: 1, Err: ErrFormat, Msg: "empty file: cannot detect the format"})
		}
		return fail(&Error{Line: 1, Err: ErrColumn, Msg: "empty file: the CSV header is missing"})
	}
	if t.Format == Auto { // an empty JSONL file read with Auto
		return fail(&Error{Line: 1, Err: ErrFormat, Msg: "empty file: cannot detect the format"})
	}
	t.Timed = anyTimed
	if anyTimed && anyUn { // only FineServe: checkRow refuses the mix elsewhere
		kept := t.Requests[:0]
		for i, rq := range t.Requests {
			if timed[i] {
				kept = append(kept, rq)
				continue
			}
			t.Untimed++
			if t.Untimed == 1 {
				t.warn(fmt.Sprintf("%s: line %d: rows without a timestamp are dropped because the file has timed rows",
					displayName(name), rq.Line))
			}
		}
		t.Requests = kept
	}
	sort.SliceStable(t.Requests, func(i, j int) bool {
		a, b := t.Requests[i], t.Requests[j]
		if a.Arrival != b.Arrival {
			return a.Arrival < b.Arrival
		}
		return a.Line < b.Line
	})
	return t, nil
}

// checkRow applies the checks that span rows: timed CSV and Mooncake files
// must be sorted by time; a JSONL file gives arrival_s on every row or on
// none. mix is -1 until the first JSONL row, then 1 (timed) or 0.
func checkRow(f Format, rw *row, prevTime int64, prevLine int, anyTimed bool, mix *int) *Error {
	if f == JSONL {
		m := 0
		if rw.hasTime {
			m = 1
		}
		if *mix >= 0 && *mix != m {
			if m == 0 {
				return fieldErr("arrival_s", "missing, but earlier rows have it (give it on every row or on none)")
			}
			return fieldErr("arrival_s", "present, but earlier rows lack it (give it on every row or on none)")
		}
		*mix = m
		return nil
	}
	if rw.hasTime && anyTimed && rw.time < prevTime {
		e := fieldErr(timeField[f], "arrives before the row on line %d (the file must be sorted by time)", prevLine)
		e.Err = ErrOrder
		return e
	}
	return nil
}

// timeField names each format's arrival column for messages.
var timeField = map[Format]string{Azure: "TIMESTAMP", Mooncake: "timestamp", FineServe: "timestamp",
	BurstGPT: "Timestamp", JSONL: "arrival_s"}

func displayName(name string) string {
	if name == "" {
		return "trace"
	}
	return name
}

func tooLongErr(line int) *Error {
	return &Error{Line: line, Err: ErrSyntax,
		Msg: fmt.Sprintf("longer than %d bytes (not a trace, or a missing line break?)", MaxLineBytes)}
}

// isBlank reports whether b holds only spaces, tabs and CRs.
func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

var bom = []byte("\uFEFF")

// lineReader splits input into lines ending in "\n" or "\r\n" (the last may
// lack an ending), counting them from 1 and dropping a UTF-8 byte order mark
// at the start. A line longer than MaxLineBytes is reported, not returned:
// its bytes are read and dropped up to the next line break.
type lineReader struct {
	br   *bufio.Reader
	line int
	buf  []byte
}

func (lr *lineReader) next() (b []byte, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	read := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if len(chunk) > 0 {
			read = true
		}
		if !tooLong {
			if len(lr.buf)+len(chunk) > MaxLineBytes+2 { // room for "\r\n"
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			return nil, false, err
		}
		if err == io.EOF && !read {
			return nil, false, io.EOF
		}
		break
	}
	lr.line++
	b = lr.buf
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if lr.line == 1 {
		b = bytes.TrimPrefix(b, bom)
	}
	if len(b) > MaxLineBytes {
		tooLong = true
	}
	return b, tooLong, nil
}

// Detect tells the format from a file's first line (further lines, a BOM
// and a CR are ignored). A JSON object with "input_length" is Mooncake, one
// with "prompt_tokens" is our JSONL; a CSV header is matched on its columns:
// ContextTokens is Azure, num_prefill_tokens is Vidur, input_length is
// FineServe, "Request tokens" is BurstGPT. Anything else is an error
// wrapping ErrFormat.
func Detect(header []byte) (Format, error) {
	if i := bytes.IndexByte(header, '\n'); i >= 0 {
		header = header[:i]
	}
	header = bytes.TrimSuffix(bytes.TrimPrefix(header, bom), []byte("\r"))
	trimmed := bytes.TrimSpace(header)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &m); err != nil {
			return Auto, fmt.Errorf("%w: the first line starts like JSON but is not a JSON object: %w", ErrFormat, err)
		}
		switch {
		case m["prompt_tokens"] != nil:
			return JSONL, nil
		case m["input_length"] != nil:
			return Mooncake, nil
		}
		return Auto, fmt.Errorf("%w: a JSON object without \"prompt_tokens\" (jsonl) or \"input_length\" (mooncake)", ErrFormat)
	}
	cols, err := splitCSV(header)
	if err == nil {
		for _, f := range []Format{Azure, Vidur, FineServe, BurstGPT} {
			if csvSpecs[f].matches(cols) {
				return f, nil
			}
		}
	}
	return Auto, fmt.Errorf("%w: cannot tell the format from the first line %s (give it with --format)",
		ErrFormat, clip(string(header)))
}
