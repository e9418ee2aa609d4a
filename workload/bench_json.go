// The text of a benchmark result file: bounded reading, the split into one
// JSON object per run, Python's non-standard number literals, and the
// scanners of the per-request arrays. See ReadBench.

package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// benchLimits bound the text: one line (vLLM writes a run on one line) and
// the whole file may each be MaxBenchBytes (a variable so that tests can
// lower it).
var benchLimits = untrusted.Limits{Line: int(MaxBenchBytes), LineName: "workload.MaxBenchBytes",
	Total: MaxBenchBytes, TotalName: "workload.MaxBenchBytes",
	TotalHint: "split the runs into several files, or save them without --save-detailed"}

// readBenchText reads the whole input through a untrusted.LineReader, so binary
// input, a BOM, CR or CRLF endings and the size bound are handled as for
// every trace, and joins its lines with "\n": line numbers stay those of
// the file. Text that does not start with a JSON object (a CSV trace) is
// refused at its first line, as splitBenchObjects would after reading it
// all.
func readBenchText(r io.Reader, name string) ([]byte, error) {
	lr := untrusted.NewLineReader(r, benchLimits)
	var text []byte
	started := false
	for {
		b, err := lr.Next()
		if err == io.EOF {
			return text, nil
		}
		if err != nil {
			return nil, inputErr(err, name)
		}
		if t := bytes.TrimLeft(b, " \t"); !started && len(t) > 0 {
			if t[0] != '{' {
				return nil, &Error{File: name, Line: lr.Line(), Err: ErrSyntax, Msg: topLevelMsg(t, 0)}
			}
			started = true
		}
		text = append(text, b...)
		text = append(text, '\n')
	}
}

// benchObject is where one run's object lies in the text.
type benchObject struct {
	start, end int // text[start:end] is the object, braces included
	line       int // the line it starts on
}

// The same-length stand-ins for Python's bare literals, which encoding/json
// refuses: JSON strings that the number parsers read back as the values.
const (
	pyInf    = `"Infini"`  // for Infinity (8 bytes)
	pyNegInf = `"-Infini"` // for -Infinity (9 bytes)
	pyNaN    = `"N"`       // for NaN (3 bytes)
)

// splitBenchObjects finds the top-level JSON objects of text (one per run)
// and rewrites, in place and outside strings, Python's Infinity, -Infinity
// and NaN to stand-ins of the same length, so that offsets and lines do not
// move. It checks only what it must to split: that the top level holds
// objects and that each one ends; json.Unmarshal checks the rest.
func splitBenchObjects(text []byte) ([]benchObject, *Error) {
	var (
		objs         []benchObject
		depth, start int
		line         = 1
		inStr, esc   bool
		startLine    int
	)
	for i := 0; i < len(text); i++ {
		c := text[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			case c == '\n': // not valid JSON; Unmarshal says so
				line++
			}
			continue
		}
		switch c {
		case '\n':
			line++
			continue
		case ' ', '\t', '\r':
			continue
		}
		if depth == 0 {
			if c != '{' {
				return nil, &Error{Line: line, Err: ErrSyntax, Msg: topLevelMsg(text[i:], len(objs))}
			}
			if len(objs) >= MaxBenchRuns {
				return nil, &Error{Line: line, Err: ErrTooLarge, Msg: fmt.Sprintf(
					"more than %d runs (workload.MaxBenchRuns); split the file", MaxBenchRuns)}
			}
			start, startLine, depth = i, line, 1
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				objs = append(objs, benchObject{start: start, end: i + 1, line: startLine})
			}
		case 'I':
			if bytes.HasPrefix(text[i:], []byte("Infinity")) {
				copy(text[i:], pyInf)
				i += len(pyInf) - 1
			}
		case '-':
			if bytes.HasPrefix(text[i:], []byte("-Infinity")) {
				copy(text[i:], pyNegInf)
				i += len(pyNegInf) - 1
			}
		case 'N':
			if bytes.HasPrefix(text[i:], []byte("NaN")) {
				copy(text[i:], pyNaN)
				i += len(pyNaN) - 1
			}
		}
	}
	if depth > 0 {
		return nil, &Error{Line: startLine, Err: ErrSyntax, Msg: fmt.Sprintf(
			"the file ends inside the JSON object of run %d, which starts on this line (truncated?)", len(objs)+1)}
	}
	if len(objs) == 0 {
		return nil, &Error{Line: 1, Err: ErrNoRows, Msg: "no benchmark run: the file is empty or blank"}
	}
	return objs, nil
}

// topLevelMsg explains a top level that holds something other than an
// object (at rest, after n objects).
func topLevelMsg(rest []byte, n int) string {
	const want = "want one JSON object per run (vLLM --save-result, SGLang bench_serving --output-file)"
	if n > 0 {
		return fmt.Sprintf("unexpected %s after run %d: %s", untrusted.DescribeJSONStart(rest[:min(len(rest), 16)]), n, want)
	}
	msg := fmt.Sprintf("starts with %s: %s", untrusted.DescribeJSONStart(rest[:min(len(rest), 16)]), want)
	if rest[0] == '[' {
		msg += "; an array of records may be vLLM's .pytorch.json, which leaves out the per-request data: give the --save-result file beside it"
	}
	return msg
}

// syntaxErr turns an error of json.Unmarshal on the object o into an
// *Error on the line it is on, with its byte within that line.
func syntaxErr(text []byte, o benchObject, err error) *Error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &Error{Line: o.line, Err: ErrSyntax, Msg: "malformed JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	off := o.start + int(se.Offset)
	off = min(max(off-1, o.start), len(text)-1) // Offset is just past the bad byte
	line := o.line + bytes.Count(text[o.start:off], []byte("\n"))
	col := off - (bytes.LastIndexByte(text[:off], '\n') + 1) + 1
	return &Error{Line: line, Err: ErrSyntax, Msg: fmt.Sprintf("malformed JSON at byte %d of the line: %s",
		col, strings.TrimPrefix(se.Error(), "json: "))}
}

// describeValue renders a raw JSON value for a message, showing the
// stand-ins as the literals they replaced.
func describeValue(raw []byte) string {
	switch v := string(bytes.TrimSpace(raw)); v {
	case pyInf:
		return "Infinity"
	case pyNegInf:
		return "-Infinity"
	case pyNaN:
		return "NaN"
	default:
		return clip(v)
	}
}

// isNull reports whether raw is absent or the JSON null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// benchFloat parses a JSON number, Python's Infinity, -Infinity or NaN, or
// the strings "inf", "Infinity", "-inf" and "nan" that the clients write
// for them. ok is false for null and absent values.
func benchFloat(raw json.RawMessage) (v float64, ok bool, good bool) {
	t := string(bytes.TrimSpace(raw))
	switch t {
	case "", "null":
		return 0, false, true
	case pyInf, `"inf"`, `"Infinity"`, `"infinity"`:
		return math.Inf(1), true, true
	case pyNegInf, `"-inf"`, `"-Infinity"`:
		return math.Inf(-1), true, true
	case pyNaN, `"nan"`, `"NaN"`:
		return math.NaN(), true, true
	}
	if t[0] != '-' && (t[0] < '0' || t[0] > '9') {
		return 0, false, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false, false
	}
	return f, true, true // ±Inf for 1e400, as Python reads it
}

// benchInt parses a JSON integer from 0 to max; ok is false for null.
func benchInt(raw json.RawMessage, max int64) (v int64, ok bool, good bool) {
	t := string(bytes.TrimSpace(raw))
	if t == "" || t == "null" {
		return 0, false, true
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > max {
		return 0, false, false
	}
	return n, true, true
}

// benchString parses a JSON string; ok is false for null.
func benchString(raw json.RawMessage) (s string, ok bool, good bool) {
	if isNull(raw) {
		return "", false, true
	}
	if json.Unmarshal(raw, &s) != nil {
		return "", false, false
	}
	return s, true, true
}

// benchScalar returns a JSON string's text, a number's literal or true or
// false, as text; ok is false for null and absent values, good false for an
// object or an array.
func benchScalar(raw json.RawMessage) (s string, ok bool, good bool) {
	t := string(bytes.TrimSpace(raw))
	switch {
	case t == "" || t == "null":
		return "", false, true
	case t == "true" || t == "false":
		return t, true, true
	case t[0] == '"':
		return benchString(raw)
	case t[0] == '-' || t[0] >= '0' && t[0] <= '9':
		return t, true, true
	}
	return "", false, false
}

// elements calls fn with each element of the JSON array raw (which
// json.Unmarshal has checked is valid JSON), trimmed; a raw value that is
// not an array is refused with what it is.
func elements(field string, raw []byte, fn func(i int, elem []byte) *Error) *Error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '[' {
		return fieldErr(field, "must be an array (got %s)", describeValue(t))
	}
	i, n := 1, 0
	for {
		for i < len(t) && isJSONSpace(t[i]) {
			i++
		}
		if i >= len(t) || t[i] == ']' {
			return nil
		}
		end := valueEnd(t, i)
		if e := fn(n, t[i:end]); e != nil {
			return e
		}
		n++
		i = end
		for i < len(t) && isJSONSpace(t[i]) {
			i++
		}
		if i < len(t) && t[i] == ',' {
			i++
		}
	}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// valueEnd returns the end of the valid JSON value starting at t[i].
func valueEnd(t []byte, i int) int {
	depth, inStr, esc := 0, false, false
	for j := i; j < len(t); j++ {
		c := t[j]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
				if depth == 0 {
					return j + 1
				}
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 {
				return j
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return j
			}
		}
	}
	return len(t)
}

// intArray parses an array of integers from 0 to MaxTokens.
func intArray(field string, raw []byte) ([]int, *Error) {
	out := make([]int, 0, 64)
	e := elements(field, raw, func(i int, elem []byte) *Error {
		v, ok, good := benchInt(elem, MaxTokens)
		if !good || !ok {
			return fieldErr(entry(field, i), "must be an integer from 0 to %d (got %s)", MaxTokens, describeValue(elem))
		}
		if len(out) >= requestLimit {
			return tooManyRequests(field)
		}
		out = append(out, int(v))
		return nil
	})
	return out, e
}

func tooManyRequests(field string) *Error {
	return &Error{Field: field, Err: ErrTooLarge, Msg: fmt.Sprintf("more than %d requests (workload.MaxRequests)", requestLimit)}
}

// maxBenchSeconds bounds a time in a benchmark file: maxTime ns (146
// years), as every time of a trace.
const maxBenchSeconds = float64(maxTime) / 1e9

// seconds parses one time in seconds: finite and from 0 to maxBenchSeconds,
// or any finite value when signed (a clock reading). name gives the field
// for the error, built only when there is one.
func seconds(name func() string, elem []byte, signed bool) (float64, *Error) {
	v, ok, good := benchFloat(elem)
	if !good || !ok || math.IsNaN(v) || math.IsInf(v, 0) || (!signed && v < 0) || math.Abs(v) > maxBenchSeconds {
		kind := "a non-negative number of seconds"
		if signed {
			kind = "a finite number of seconds"
		}
		return 0, fieldErr(name(), "must be %s (got %s)", kind, describeValue(elem))
	}
	return v, nil
}

// entry names entry i of field: "itls[3]".
func entry(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

// floatArray parses an array of times in seconds.
func floatArray(field string, raw []byte, signed bool) ([]float64, *Error) {
	out := make([]float64, 0, 64)
	e := elements(field, raw, func(i int, elem []byte) *Error {
		if len(out) >= requestLimit {
			return tooManyRequests(field)
		}
		v, e := seconds(func() string { return entry(field, i) }, elem, signed)
		out = append(out, v)
		return e
	})
	return out, e
}

// itlArrays parses itls, an array of arrays of gaps in seconds, into one
// backing slice (so a run of 42,000 gaps is one allocation, not 200);
// *total counts the gaps of every run so far against benchITLLimit.
func itlArrays(field string, raw []byte, total *int) ([][]float64, *Error) {
	var (
		flat []float64
		ends []int
	)
	e := elements(field, raw, func(i int, elem []byte) *Error {
		if len(ends) >= requestLimit {
			return tooManyRequests(field)
		}
		name := func() string { return entry(field, i) }
		if isNull(elem) {
			ends = append(ends, len(flat))
			return nil
		}
		e := elements(name(), elem, func(j int, x []byte) *Error {
			if *total++; *total > benchITLLimit {
				return &Error{Field: name(), Err: ErrTooLarge, Msg: fmt.Sprintf(
					"more than %d inter-token gaps in all (workload.MaxBenchITLs); split the file", benchITLLimit)}
			}
			v, e := seconds(func() string { return entry(name(), j) }, x, false)
			flat = append(flat, v)
			return e
		})
		ends = append(ends, len(flat))
		return e
	})
	if e != nil {
		return nil, e
	}
	out := make([][]float64, len(ends))
	prev := 0
	for i, end := range ends {
		out[i] = flat[prev:end:end]
		prev = end
	}
	return out, nil
}

// errorArray parses errors, an array of strings ("" or null for a request
// that succeeded), each cut to untrusted.QuoteBytes: a traceback is not kept whole.
func errorArray(field string, raw []byte) ([]string, *Error) {
	out := make([]string, 0, 64)
	e := elements(field, raw, func(i int, elem []byte) *Error {
		if len(out) >= requestLimit {
			return tooManyRequests(field)
		}
		if string(elem) == `""` {
			out = append(out, "")
			return nil
		}
		s, _, good := benchString(elem)
		if !good {
			return fieldErr(entry(field, i), "must be a string or null (got %s)", describeValue(elem))
		}
		out = append(out, untrusted.Clip(strings.TrimSpace(s)))
		return nil
	})
	return out, e
}

// benchITLLimit is MaxBenchITLs, a variable so that the package's tests can
// lower it; nothing else changes it.
var benchITLLimit = MaxBenchITLs
