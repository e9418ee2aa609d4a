// Reading trace files: line handling, detection, the row loop. See package
// workload for the overview; csv.go and json.go hold the per-format parsers.

package workload

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// MaxLineBytes is the longest line Read accepts (1 MiB, without the line
// ending). The longest real line, a Mooncake request with 247 hash ids, is
// about 2 KB; the cap keeps a file without newlines from being read into
// memory as one line. A longer line is an ErrSyntax error at once, even
// under SkipBadRows: the reader never reads on through it looking for its
// end (a file of one endless line, such as /dev/zero, would never finish).
const MaxLineBytes = 1 << 20

// MaxInputBytes bounds the whole input Read takes (4 GiB): over a thousand
// times the largest development trace (3 MB, shared/data/traces), and what
// stops an endless stream of blank or skipped lines. Reading stops at
// MaxRows before it, so the start of a larger file can still be read.
const MaxInputBytes int64 = 4 << 30

// MaxRequests bounds the requests of one trace (10,000,000, the simulator
// scenario's bound on generated requests). A request costs about 170 bytes
// in memory with its id, so the bound keeps a trace within about 2 GB.
const MaxRequests = 10_000_000

// MaxPrefixHashes bounds the prefix block ids of one trace, summed over its
// requests (2^27, 1 GiB as uint64). The Mooncake conversation trace has
// 288,500 in 12,031 rows; without the bound, 4 GiB of "0," would decode
// into 16 GiB of ids.
const MaxPrefixHashes = 1 << 27

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
	// MaxRows stops reading after this many requests (0: no limit; a
	// negative value is an ErrConfig error); a warning records that the
	// rest of the file was not read.
	MaxRows int
	// Run picks the run of a vllm-bench file that holds several (1-based);
	// 0 reads a file of one run, and a file of several is then an ErrConfig
	// *Error that lists them. Other formats hold no runs: Run must be 0.
	Run int
	// ArrivalSeed, when set, draws a vllm-bench run's Poisson (or gamma)
	// arrivals from this seed instead of the run's own seed: another draw of
	// a run whose client saved no start times, whose real arrivals are one
	// unknown draw among many. A run with start times, or sent all at once,
	// keeps its arrivals, with a warning that the seed changed nothing.
	// Other formats have no drawn arrivals: it must be nil.
	ArrivalSeed *uint64
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
		return &mooncakeParser{m: map[string]json.RawMessage{}}
	case JSONL:
		return &jsonlParser{m: map[string]json.RawMessage{}}
	}
	return nil
}

// Read's bounds, as variables so that the package's tests can lower them;
// nothing else changes them.
var (
	requestLimit = MaxRequests
	hashLimit    = MaxPrefixHashes
)

// lineLimits are Read's bounds on lines and on the whole input.
var lineLimits = untrusted.Limits{Line: MaxLineBytes, LineName: "workload.MaxLineBytes",
	Total: MaxInputBytes, TotalName: "workload.MaxInputBytes", TotalHint: "read the start of it with a row limit (--max-rows)"}

// Read reads a whole trace. name labels error messages (a file name,
// "stdin"); it may be empty. f is the format, or Auto to detect it: a
// benchmark result (vllm-bench) from its first 4 KiB (see sniffBench),
// every other format from the first line with Detect. Rows are parsed and
// checked as the package doc says (vllm-bench files as ReadBench and
// BenchResult.Trace say); the first bad row stops reading with an *Error
// naming the file, the line and the field, unless opts.SkipBadRows. Input
// that is not text, a line over MaxLineBytes and a trace over
// MaxInputBytes, MaxRequests or MaxPrefixHashes fail at once, whatever the
// options. A trace that ends
// with no request is an ErrNoRows error: a file with a header and no rows,
// or whose every row was bad and skipped (the error names the first). An
// error from r itself is returned wrapped, not as an *Error.
func Read(r io.Reader, name string, f Format, opts ReadOptions) (*Trace, error) {
	if opts.MaxRows < 0 {
		return nil, configErr("a row limit of %d is negative (0 reads every row)", opts.MaxRows)
	}
	if f == Auto {
		r, f = sniffBench(r)
	}
	if f == VLLMBench {
		return readBenchTrace(r, name, opts)
	}
	if opts.Run != 0 {
		return nil, configErr("run %d was asked for, but only benchmark result files (vllm-bench) hold runs", opts.Run)
	}
	if opts.ArrivalSeed != nil {
		return nil, configErr("arrival seed %d: only a benchmark result file (vllm-bench) draws its arrivals from a seed, and %s is not one",
			*opts.ArrivalSeed, name)
	}
	lr := untrusted.NewLineReader(r, lineLimits)
	t := &Trace{Name: name, Format: f}
	fail := func(e *Error) (*Trace, error) {
		e.File = name
		return nil, e
	}
	var (
		p                parser
		first            = true
		prevTime, origin int64
		prevLine         int
		anyTimed, anyUn  bool
		timedMix         = -1   // JSONL: 1 when rows carry arrival_s, 0 when not
		timed            []bool // parallel to t.Requests: the row had a time
		ids              = map[string]int{}
		turns            = map[string]int{}
		nhashes          int    // prefix ids kept so far
		headerLine       int    // the line of a CSV header
		firstBad         *Error // the first row skipped under SkipBadRows
	)
	for {
		b, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, inputErr(err, name)
		}
		if isBlank(b) {
			continue
		}
		line := lr.Line()
		if first {
			first = false
			if t.Format == Auto {
				g, e := detect(b)
				if e != nil {
					e.Line = line
					return fail(e)
				}
				t.Format = g
			}
			p = newParser(t.Format)
			if p == nil {
				return fail(&Error{Line: line, Err: ErrFormat, Msg: fmt.Sprintf("unknown format %v", t.Format)})
			}
			if t.Format != Mooncake && t.Format != JSONL {
				if e := p.header(b); e != nil {
					e.Line = line
					return fail(e)
				}
				headerLine = line
				continue
			}
		}
		if opts.MaxRows > 0 && len(t.Requests) >= opts.MaxRows {
			t.warn(fmt.Sprintf("%s: stopped after %d requests (MaxRows); lines from %d on were not read",
				displayName(name), opts.MaxRows, line))
			t.stoppedAt, t.maxRows = line, opts.MaxRows
			break
		}
		if len(t.Requests) >= requestLimit {
			return fail(&Error{Line: line, Err: ErrTooLarge, Msg: fmt.Sprintf(
				"more than %d requests (workload.MaxRequests); read the start of the file with a row limit (--max-rows)", requestLimit)})
		}
		rw, e := p.row(b)
		if e == nil {
			e = checkRow(t.Format, &rw, prevTime, prevLine, anyTimed, &timedMix)
		}
		if e == nil && rw.id {
			if l, ok := ids[rw.req.ID]; ok {
				e = fieldErr("id", "duplicate of line %d (got %s)", l, clip(rw.req.ID))
			}
		}
		if e != nil {
			e.Line = line
			if !opts.SkipBadRows {
				return fail(e)
			}
			e.File = name
			if firstBad == nil {
				firstBad = e
				t.firstSkip = e
			}
			t.Skipped++
			t.warn(e.Error() + " (skipped)")
			continue
		}
		if nhashes += len(rw.req.PrefixHashes); nhashes > hashLimit {
			return fail(&Error{Line: line, Err: ErrTooLarge, Msg: fmt.Sprintf(
				"more than %d prefix ids in all (workload.MaxPrefixHashes); read the start of the file with a row limit (--max-rows)", hashLimit)})
		}
		rq := rw.req
		rq.Line = line
		if t.Format == JSONL {
			// Only JSONL rows name their ids; the ids made here
			// ("r" and the line) are unique among themselves, and are
			// kept only where a later row could name one of them.
			if !rw.id {
				rq.ID = "r" + strconv.Itoa(line)
			}
			ids[rq.ID] = rq.Line
		}
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
			prevTime, prevLine = rw.time, line
			rq.Arrival = rw.time - origin
		} else {
			anyUn = true
		}
		timed = append(timed, rw.hasTime)
		t.Requests = append(t.Requests, rq)
	}
	if first && t.Format != Mooncake && t.Format != JSONL {
		if t.Format == Auto {
			return fail(&Error{Line: 1, Err: ErrFormat, Msg: "empty file (or only blank lines): cannot detect the format"})
		}
		return fail(&Error{Line: 1, Err: ErrColumn, Msg: "empty file: the CSV header is missing"})
	}
	if t.Format == Auto { // an empty JSONL file read with Auto
		return fail(&Error{Line: 1, Err: ErrFormat, Msg: "empty file (or only blank lines): cannot detect the format"})
	}
	if t.Format != JSONL {
		lineIDs(t.Requests)
	}
	if len(t.Requests) == 0 {
		line := lr.Line()
		if headerLine > 0 {
			line = headerLine
		}
		return fail(noRows(t, firstBad, line))
	}
	t.Timed = anyTimed
	if anyTimed && anyUn { // only FineServe: checkRow refuses the mix elsewhere
		if e := dropUntimed(t, timed); e != nil {
			return fail(e)
		}
	}
	byArrival := func(a, b Request) int {
		return cmp.Or(cmp.Compare(a.Arrival, b.Arrival), cmp.Compare(a.Line, b.Line))
	}
	// Timed CSV and Mooncake files are sorted already (checkRow); the
	// check is one pass where a sort would be n log n moves of Requests.
	if !slices.IsSortedFunc(t.Requests, byArrival) {
		slices.SortStableFunc(t.Requests, byArrival)
	}
	return t, nil
}

// lineIDs names every request "r" and its line, as Read does for a row
// without an id, in one string for all: one allocation rather than one or
// two per request.
func lineIDs(rs []Request) {
	var b []byte
	for _, rq := range rs {
		b = strconv.AppendInt(append(b, 'r'), int64(rq.Line), 10)
	}
	all := string(b)
	for i := range rs {
		n := 1 + digits(rs[i].Line)
		rs[i].ID, all = all[:n], all[n:]
	}
}

// digits is the number of decimal digits of n >= 0.
func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// noRows is the error of a trace that ended without a request; line is
// its CSV header's, or the last line of a JSONL file.
func noRows(t *Trace, firstBad *Error, line int) *Error {
	if firstBad != nil {
		e := *firstBad
		e.Err = ErrNoRows
		e.Msg = fmt.Sprintf("%s; every row is bad (all %d skipped), so the trace has no requests", e.Msg, t.Skipped)
		return &e
	}
	if t.Format == Mooncake || t.Format == JSONL {
		return &Error{Line: max(line, 1), Err: ErrNoRows, Msg: "no requests: the file is empty or blank"}
	}
	return &Error{Line: line, Err: ErrNoRows, Msg: "no requests: the file has a CSV header and no rows"}
}

// dropUntimed drops the rows without a timestamp of a FineServe file that
// also has timed rows, counting them in t.Untimed with a warning that comes
// first in t.Warnings. When they are the majority, dropping them would keep
// a small part of the file as if it were the whole: that is an error.
func dropUntimed(t *Trace, timed []bool) *Error {
	kept := t.Requests[:0]
	firstLine := 0
	for i, rq := range t.Requests {
		if timed[i] {
			kept = append(kept, rq)
			continue
		}
		if t.Untimed++; t.Untimed == 1 {
			firstLine = rq.Line
		}
	}
	total := len(t.Requests)
	if t.Untimed > len(kept) {
		return &Error{Line: firstLine, Field: timeField[t.Format], Err: ErrField, Msg: fmt.Sprintf(
			"missing on %d of %d rows; rows without a timestamp are dropped only when they are a few "+
				"(as at the end of the upstream FineServe files): fill the column in, or empty it on every row to read the file as untimed",
			t.Untimed, total)}
	}
	t.Requests = kept
	t.untimed = fmt.Sprintf("dropped %d of %d rows, which have no timestamp (the first on line %d), because the file has timed rows",
		t.Untimed, total, firstLine)
	t.Warnings = append([]string{displayName(t.Name) + ": " + t.untimed}, t.Warnings...)
	if len(t.Warnings) > MaxWarnings {
		t.Warnings = t.Warnings[:MaxWarnings]
	}
	return nil
}

// inputErr turns an error of the line reader into an *Error, and wraps
// one of r itself.
func inputErr(err error, name string) error {
	var ie *untrusted.InputError
	if !errors.As(err, &ie) {
		return fmt.Errorf("reading %s: %w", displayName(name), err)
	}
	e := &Error{File: name, Line: ie.Line, Err: ErrSyntax, Msg: ie.Msg}
	switch {
	case errors.Is(err, untrusted.ErrBinary):
		e.Err, e.Msg = ErrNotText, "not a text trace: "+strings.TrimPrefix(ie.Msg, "not a text file: ")
	case errors.Is(err, untrusted.ErrTooLarge):
		e.Err = ErrTooLarge
	}
	return e
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

// isBlank reports whether b holds only spaces, tabs and CRs.
func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
