// The CSV formats: Azure, Sarathi/Vidur, FineServe and BurstGPT. See package
// workload for the overview and the columns of each.

package workload

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// csvSpec lists the columns a CSV format uses. Other columns are allowed
// and ignored; matching is case-insensitive and ignores surrounding spaces.
type csvSpec struct {
	format   Format
	cols     []string // the columns used, in the order row() indexes them
	required []bool   // parallel to cols
}

// Column indexes into csvSpec.cols, per format.
const (
	azTime, azPrompt, azOutput                     = 0, 1, 2
	vdPrompt, vdOutput, vdTotal                    = 0, 1, 2
	fsPrompt, fsOutput, fsTime                     = 0, 1, 2
	bgTime, bgPrompt, bgOutput, bgTotal, bgSession = 0, 1, 2, 3, 4
)

var csvSpecs = map[Format]*csvSpec{
	Azure:     {Azure, []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}, []bool{true, true, true}},
	Vidur:     {Vidur, []string{"num_prefill_tokens", "num_decode_tokens", "num_total_tokens"}, []bool{true, true, false}},
	FineServe: {FineServe, []string{"input_length", "output_length", "timestamp"}, []bool{true, true, false}},
	BurstGPT: {BurstGPT, []string{"Timestamp", "Request tokens", "Response tokens", "Total tokens", "Session ID"},
		[]bool{true, true, true, false, false}},
}

// index maps header fields to spec columns: idx[i] is the field holding
// cols[i], or -1.
func (s *csvSpec) index(header []string) (idx []int, e *Error) {
	idx = make([]int, len(s.cols))
	for i := range idx {
		idx[i] = -1
	}
	for j, h := range header {
		h = strings.TrimSpace(h)
		for i, c := range s.cols {
			if strings.EqualFold(h, c) {
				if idx[i] >= 0 {
					return nil, &Error{Field: c, Err: ErrColumn, Msg: fmt.Sprintf(
						"duplicate column: columns %d and %d of the %v header both hold it (remove or rename one)", idx[i]+1, j+1, s.format)}
				}
				idx[i] = j
			}
		}
	}
	for i, c := range s.cols {
		if idx[i] < 0 && s.required[i] {
			return nil, &Error{Field: c, Err: ErrColumn,
				Msg: fmt.Sprintf("missing column (a %v header has %s)", s.format, strings.Join(s.requiredCols(), ","))}
		}
	}
	return idx, nil
}

func (s *csvSpec) requiredCols() []string {
	var r []string
	for i, c := range s.cols {
		if s.required[i] {
			r = append(r, c)
		}
	}
	return r
}

// present counts the required columns header holds (each once however
// often it appears).
func (s *csvSpec) present(header []string) int {
	n := 0
	for i, c := range s.cols {
		if s.required[i] && hasColumn(header, c) {
			n++
		}
	}
	return n
}

type csvParser struct {
	spec    *csvSpec
	idx     []int
	nfields int
	fields  []string // the last row's fields, reused from row to row
}

func (p *csvParser) header(b []byte) *Error {
	cols, err := splitCSV(b)
	if err != nil {
		return &Error{Err: ErrSyntax, Msg: "header: " + err.Error()}
	}
	idx, e := p.spec.index(cols)
	if e != nil {
		return e
	}
	p.idx, p.nfields = idx, len(cols)
	return nil
}

func (p *csvParser) row(b []byte) (row, *Error) {
	fields, err := splitCSVInto(b, p.fields[:0])
	if err != nil {
		return row{}, &Error{Err: ErrSyntax, Msg: err.Error()}
	}
	p.fields = fields
	if len(fields) != p.nfields {
		return row{}, &Error{Err: ErrSyntax, Msg: fmt.Sprintf("has %d fields, the header has %d", len(fields), p.nfields)}
	}
	// get returns column i's name and trimmed value ("" when absent).
	get := func(i int) (string, string) {
		if p.idx[i] < 0 {
			return p.spec.cols[i], ""
		}
		return p.spec.cols[i], strings.TrimSpace(fields[p.idx[i]])
	}
	var rw row
	var e *Error
	switch p.spec.format {
	case Azure:
		rw.req.PromptTokens, e = tokens(get(azPrompt))
		if e == nil {
			rw.req.OutputTokens, e = outTokens(get(azOutput))
		}
		if e == nil {
			rw.time, e = azureTime(get(azTime))
			rw.hasTime = true
		}
	case Vidur:
		rw.req.PromptTokens, e = tokens(get(vdPrompt))
		if e == nil {
			rw.req.OutputTokens, e = outTokens(get(vdOutput))
		}
		if e == nil {
			e = checkTotal(rw.req)(get(vdTotal))
		}
	case FineServe:
		rw.req.PromptTokens, e = tokens(get(fsPrompt))
		if e == nil {
			rw.req.OutputTokens, e = outTokens(get(fsOutput))
		}
		if name, v := get(fsTime); e == nil && v != "" {
			// Microseconds: the full upstream file spans 0 to 2.88e10,
			// which is 8 h in µs and 333 days in the README's ms.
			rw.time, e = scaled(name, v, 3)
			rw.hasTime = true
		}
	case BurstGPT:
		rw.req.PromptTokens, e = tokens(get(bgPrompt))
		if e == nil {
			rw.req.OutputTokens, e = outTokens(get(bgOutput))
		}
		if e == nil {
			e = checkTotal(rw.req)(get(bgTotal))
		}
		if name, v := get(bgTime); e == nil {
			rw.time, e = scaled(name, v, 9) // seconds
			rw.hasTime = true
		}
		if name, v := get(bgSession); e == nil && v != "" {
			if len(v) > MaxIDBytes {
				e = fieldErr(name, "longer than %d bytes (workload.MaxIDBytes; got %s)", MaxIDBytes, clip(v))
			}
			rw.req.Session = v
		}
	}
	if e != nil {
		return row{}, e
	}
	return rw, nil
}

// splitCSV splits one CSV record (untrusted.SplitCSV; a quoted field cannot span
// lines). An error names the column.
func splitCSV(b []byte) ([]string, error) { return splitCSVInto(b, nil) }

// splitCSVInto is splitCSV appending to out. A record without quotes (every
// row of the real traces) costs one string, the whole line, whose fields
// are substrings of it: no string per field, no slice per row when out has
// room.
func splitCSVInto(b []byte, out []string) ([]string, error) {
	if bytes.IndexByte(b, '"') < 0 {
		s := string(b)
		for {
			i := strings.IndexByte(s, ',')
			if i < 0 {
				return append(out, s), nil
			}
			out = append(out, s[:i])
			s = s[i+1:]
		}
	}
	fields, bad, msg := untrusted.SplitCSV(b, out)
	if msg != "" {
		return nil, fmt.Errorf("malformed CSV: column %d: %s", bad+1, msg)
	}
	return fields, nil
}

// tokens parses a prompt length: an integer from 1 to MaxTokens. Every real
// trace has prompts of at least one token (a request without a prompt has
// nothing to prefill).
func tokens(field, v string) (int, *Error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) && v[0] != '-' {
		n, err = MaxTokens+1, nil // all digits, past int64
	}
	if err != nil || n < 1 {
		if v == "" {
			return 0, fieldErr(field, "missing (a positive integer)")
		}
		return 0, fieldErr(field, "must be a positive integer (got %s)", clip(v))
	}
	if n > MaxTokens {
		return 0, fieldErr(field, "must be at most %d (got %s)", MaxTokens, clip(v))
	}
	return int(n), nil
}

// outTokens parses an output length: an integer from 0 to MaxTokens (0 is a
// failed or prefill-only request; FineServe has 62 in its first half).
func outTokens(field, v string) (int, *Error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) && v[0] != '-' {
		n, err = MaxTokens+1, nil // all digits, past int64
	}
	if err != nil || n < 0 {
		if v == "" {
			return 0, fieldErr(field, "missing (a non-negative integer)")
		}
		return 0, fieldErr(field, "must be a non-negative integer (got %s)", clip(v))
	}
	if n > MaxTokens {
		return 0, fieldErr(field, "must be at most %d (got %s)", MaxTokens, clip(v))
	}
	return int(n), nil
}

// checkTotal checks an optional total-tokens column against the sum.
func checkTotal(r Request) func(field, v string) *Error {
	return func(field, v string) *Error { return checkTotalOf(r, field, v) }
}

func checkTotalOf(r Request, field, v string) *Error {
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n != int64(r.PromptTokens+r.OutputTokens) {
		return fieldErr(field, "must equal prompt + output = %d (got %s)", r.PromptTokens+r.OutputTokens, clip(v))
	}
	return nil
}

// Azure timestamps are naive datetimes with up to 9 fractional digits
// (2023: "2023-11-16 18:15:46.6805900"); the 2024 trace adds "+00:00".
// Naive times are taken as UTC.
var azureLayouts = []string{"2006-01-02 15:04:05", "2006-01-02 15:04:05Z07:00", time.RFC3339Nano}

func azureTime(field, v string) (int64, *Error) {
	if v == "" {
		return 0, fieldErr(field, "missing (a time like 2023-11-16 18:15:46.6805900)")
	}
	t, ok := naiveTime(v)
	for _, l := range azureLayouts {
		if ok {
			break
		}
		var err error
		t, err = time.Parse(l, v)
		ok = err == nil
	}
	if !ok {
		return 0, fieldErr(field, "must be a time like 2023-11-16 18:15:46.6805900 (got %s)", clip(v))
	}
	if t.Year() < 1970 || t.Year() > 2100 { // keeps UnixNano within 0..maxTime
		return 0, fieldErr(field, "year out of range 1970-2100 (got %s)", clip(v))
	}
	return t.UnixNano(), nil
}

// naiveTime parses the one shape every row of the Azure traces has,
// "2023-11-16 18:15:46.6805900" (the fraction optional, of any length),
// as time.Parse reads it with azureLayouts[0]: the fraction's digits past
// the ninth are dropped, the time is UTC. It is time.Parse's result at a
// sixth of its cost; anything else, a value out of range included, is
// !ok and goes to time.Parse, which gives the same time or the error
// (TestNaiveTime, FuzzNaiveTime).
func naiveTime(v string) (time.Time, bool) {
	const shape = "dddd-dd-dd dd:dd:dd"
	if len(v) < len(shape) {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		x := 0
		for _, c := range []byte(v[i : i+n]) {
			x = x*10 + int(c-'0')
		}
		return x
	}
	for i := range len(shape) {
		if c := v[i]; shape[i] == 'd' && (c < '0' || c > '9') || shape[i] != 'd' && c != shape[i] {
			return time.Time{}, false
		}
	}
	ns := 0
	if frac := v[len(shape):]; frac != "" {
		if frac[0] != '.' || len(frac) == 1 {
			return time.Time{}, false
		}
		for i, c := range []byte(frac[1:]) {
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
			if i < 9 {
				ns = ns*10 + int(c-'0')
			}
		}
		for k := len(frac) - 1; k < 9; k++ {
			ns *= 10
		}
	}
	year, month, day := num(0, 4), time.Month(num(5, 2)), num(8, 2)
	hour, minute, sec := num(11, 2), num(14, 2), num(17, 2)
	if month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, month, day, hour, minute, sec, ns, time.UTC)
	if t.Day() != day { // 31 April, 29 February of a common year: time.Parse refuses it
		return time.Time{}, false
	}
	return t, true
}

// maxTime bounds a parsed time: 2^62 ns is 146 years, far beyond any
// trace, and keeps arithmetic on arrivals (differences, rescaling) from
// overflowing.
const maxTime = int64(1) << 62

// scaled parses a non-negative decimal number v and returns v × 10^exp
// rounded down to an integer: exp 9 turns seconds
// into ns, 6 ms into ns, 3 µs into ns. Digits below 1 ns are dropped.
// An exponent form ("1e3") is accepted through float parsing.
func scaled(field, v string, exp int) (int64, *Error) {
	bad := func() (int64, *Error) {
		if v == "" {
			return 0, fieldErr(field, "missing (a non-negative number)")
		}
		return 0, fieldErr(field, "must be a non-negative number (got %s)", clip(v))
	}
	big := func() (int64, *Error) {
		return 0, fieldErr(field, "too large: over %d ns (got %s)", maxTime, clip(v))
	}
	if strings.ContainsAny(v, "eE") {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return bad()
		}
		f *= math.Pow10(exp)
		if f >= float64(maxTime) {
			return big()
		}
		return int64(f), nil
	}
	ip, fp, dot := strings.Cut(v, ".")
	if ip == "" && (!dot || fp == "") {
		return bad()
	}
	var n int64
	for i, c := range ip + fp {
		if c < '0' || c > '9' {
			return bad()
		}
		if i >= len(ip)+exp { // below 1 ns
			continue
		}
		n = n*10 + int64(c-'0')
		if n >= maxTime {
			return big()
		}
	}
	for k := len(fp); k < exp; k++ {
		n *= 10
		if n >= maxTime {
			return big()
		}
	}
	return n, nil
}
