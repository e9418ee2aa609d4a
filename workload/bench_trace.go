// A benchmark run as a workload: its per-request lengths (or SGLang's
// random-dataset lengths), arrivals as the client made them, and the
// vllm-bench format of Read. See ReadBench and BenchResult.Trace.

package workload

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/gpufrag/gpufrag/internal/pyrand"
)

// benchArrivalStream is the stream of rand.NewPCG(seed, stream) a run's
// drawn arrivals use (its lengths are NumPy's draws: clientLengths).
const benchArrivalStream = 0xbe7c_a771

// Trace turns the run into a workload of the vllm-bench format, one
// request per request the client sent, in the order it sent them:
//
//   - Lengths are the run's input_lens and output_lens. A run without them
//     is an ErrField error that says how to get them (vLLM's
//     --save-detailed, SGLang's --output-details), except for SGLang's
//     random dataset, whose lengths are drawn again as bench_serving draws
//     them (see BenchRandom and clientLengths): the client's own when they
//     add up to the totals the run prints (Trace.ClientLengths, with a note
//     that says so), else draws from the same distribution, with a warning
//     that compares the totals.
//     Failed requests are kept, as prefill-only requests (their
//     output_lens is 0), because the client sent them.
//   - Arrivals are the client's own when the file has start_times (newer
//     vLLM with --save-detailed): start time less client queue time,
//     relative to the first. Otherwise they are drawn as the client draws
//     them: every request at 0 for an infinite request_rate; else the
//     first at 0 and each next one a gap later, gaps gamma-distributed
//     with shape Burstiness and mean 1/RequestRate (vLLM's get_request;
//     exponential for Burstiness 1 and SGLang; constant for +Inf),
//     seeded with Seed. vLLM's newest get_request also stretches the
//     drawn times so the last one falls at num_prompts/request_rate; this
//     package does not (a 1-2% difference of span). A run without
//     request_rate and start_times is an ErrField error.
//   - Trace.MaxConcurrency is the run's MaxConcurrency: requests arrive
//     as above and wait at the client for one of that many slots.
//
// IDs are "r1", "r2", ... and Line is the request's 1-based position in
// the run's arrays (one line holds them all). The run's warnings are the
// trace's Warnings and go into its Summary.
func (r *BenchResult) Trace() (*Trace, error) { return r.trace(ReadOptions{}) }

// benchLens is one request's lengths.
type benchLens struct{ in, out int }

func (r *BenchResult) trace(opts ReadOptions) (*Trace, error) {
	t := &Trace{Name: r.File, Format: VLLMBench, Timed: true, MaxConcurrency: r.MaxConcurrency, Bench: r}
	lens, note, own, e := r.lengths()
	if e != nil {
		return nil, e
	}
	t.ClientLengths = own
	arrivals, drawn, note2, e := r.arrivals(len(lens), opts.ArrivalSeed)
	if e != nil {
		return nil, e
	}
	t.DrawnFrom = drawn
	var notes []string
	notes = append(notes, r.Warnings...)
	for _, n := range []string{note, note2} {
		if n != "" {
			notes = append(notes, r.prefix()+n)
		}
	}
	var firstBad *Error
	for i, l := range lens {
		if opts.MaxRows > 0 && len(t.Requests) >= opts.MaxRows {
			notes = append(notes, fmt.Sprintf("%sstopped after %d requests (MaxRows): requests %d to %d were left out",
				r.prefix(), opts.MaxRows, i+1, len(lens)))
			t.LeftOut = len(lens) - i
			break
		}
		if l.in < 1 {
			e := r.fieldErr(fmt.Sprintf("input_lens[%d]", i), "must be a positive integer (got 0): a request without a prompt has nothing to prefill")
			if !opts.SkipBadRows {
				return nil, e
			}
			if firstBad == nil {
				firstBad, t.firstSkip = e, e
			}
			t.Skipped++
			t.warn(e.Error() + " (skipped)")
			continue
		}
		t.Requests = append(t.Requests, Request{ID: fmt.Sprintf("r%d", i+1), Arrival: arrivals[i],
			PromptTokens: l.in, OutputTokens: l.out, N: 1, Line: i + 1})
	}
	if len(t.Requests) == 0 {
		if firstBad != nil {
			return nil, noRows(t, firstBad, r.Line)
		}
		return nil, &Error{File: r.File, Line: r.Line, Err: ErrNoRows, Msg: r.prefix() + "no requests: the run's per-request arrays are empty"}
	}
	for _, n := range notes {
		t.warn(displayName(r.File) + ": " + n)
	}
	t.notes = notes
	sort.SliceStable(t.Requests, func(i, j int) bool { return t.Requests[i].Arrival < t.Requests[j].Arrival })
	return t, nil
}

// lengths returns the run's request lengths, a note when they were
// drawn rather than read, and whether they are the client's own (read, or
// drawn again as the client drew them).
func (r *BenchResult) lengths() ([]benchLens, string, bool, *Error) {
	if r.Detail&DetailLens != 0 {
		lens := make([]benchLens, len(r.Requests))
		for i, q := range r.Requests {
			lens[i] = benchLens{q.InputTokens, q.OutputTokens}
		}
		return lens, "", true, nil
	}
	if r.Random != nil && (r.Dataset == "random" || r.Dataset == "random-ids") {
		return r.randomLengths()
	}
	how := "vLLM writes input_lens and output_lens with --save-detailed (v0.8 and older always)"
	if r.Harness == HarnessSGLang {
		how = "SGLang bench_serving writes them with --output-details"
	}
	return nil, "", false, r.fieldErr("input_lens", "missing: the run has no per-request lengths (%s); rerun the client with it, "+
		"or give the lengths another way: a length-only trace (such as Vidur's CSV) at the run's request rate", how)
}

// maxBenchDrawn bounds the requests randomLengths draws (1,000,000, the
// bound sim/scenario puts on generated workloads): a few bytes of JSON must
// not ask for ten million requests.
const maxBenchDrawn = 1_000_000

// randomLengths draws the lengths of SGLang's random dataset.
func (r *BenchResult) randomLengths() ([]benchLens, string, bool, *Error) {
	rd := r.Random
	n := r.NumPrompts
	countNote := ""
	if n == 0 {
		if r.Completed < 0 {
			return nil, "", false, r.fieldErr("completed", "missing: the run has neither per-request lengths nor num_prompts, "+
				"so the number of requests it sent is unknown")
		}
		n = r.Completed + max(r.Failed, 0)
		countNote = fmt.Sprintf(" (the file gives no num_prompts: the %d requests completed", r.Completed)
		if r.Failed > 0 {
			countNote += fmt.Sprintf(" and %d failed", r.Failed)
		}
		countNote += ")"
	}
	if n > maxBenchDrawn {
		return nil, "", false, &Error{File: r.File, Line: r.Line, Field: "num_prompts", Err: ErrTooLarge, Msg: fmt.Sprintf(
			"%s%d requests to draw lengths for is more than %d (the simulator's bound on generated requests)", r.prefix(), n, maxBenchDrawn)}
	}
	if rd.InputLen < 1 {
		return nil, "", false, r.fieldErr("random_input_len", "must be a positive integer to draw prompts from (got %d)", rd.InputLen)
	}
	// Python's int() of a non-negative product truncates, as floor does.
	inLo := max(int(float64(rd.InputLen)*rd.RangeRatio), 1)
	outLo := int(float64(rd.OutputLen) * rd.RangeRatio)
	lens, own := r.clientLengths(n, inLo, outLo)
	if !own && outLo == 0 && rd.OutputLen > 0 {
		// Releases that draw outputs from at least 1, as prompts.
		if l, ok := r.clientLengths(n, inLo, 1); ok {
			lens, own, outLo = l, true, 1
		}
	}
	var sumIn, sumOut int64
	for _, l := range lens {
		sumIn += int64(l.in)
		sumOut += int64(l.out)
	}
	if own {
		return lens, fmt.Sprintf("the run has no per-request lengths (SGLang bench_serving writes them with --output-details): "+
			"its %d lengths%s are the client's own, drawn again as bench_serving draws them (NumPy's legacy generator seeded with %d: "+
			"prompts uniform on [%d, %d] tokens, then outputs on [%d, %d]); they add up to the file's totals (%d prompt and %d output tokens)",
			n, countNote, r.Seed, inLo, rd.InputLen, outLo, rd.OutputLen, sumIn, sumOut), true, nil
	}
	note := fmt.Sprintf("the run has no per-request lengths (SGLang bench_serving writes them with --output-details): "+
		"%d lengths%s are drawn here as SGLang's random dataset draws them, prompts uniform on [%d, %d] tokens and outputs on [%d, %d], "+
		"seeded with %d; they are not the client's own draws", n, countNote, inLo, rd.InputLen, outLo, rd.OutputLen, r.Seed)
	var totals []string
	if r.TotalInputTokens >= 0 {
		totals = append(totals, fmt.Sprintf("%d prompt tokens in the file, %d drawn", r.TotalInputTokens, sumIn))
	}
	if r.TotalOutputTokens >= 0 {
		totals = append(totals, fmt.Sprintf("%d output tokens in the file, %d drawn", r.TotalOutputTokens, sumOut))
	}
	if len(totals) > 0 {
		note += " (" + strings.Join(totals, ", ") + ")"
	}
	return lens, note, false, nil
}

// clientLengths draws n lengths as SGLang's bench_serving draws its random
// dataset (sample_random_requests): np.random.seed(seed), then
// np.random.randint(inLo, InputLen+1, size=n) for the prompts and
// randint(outLo, OutputLen+1, size=n) for the outputs, from NumPy's legacy
// Mersenne Twister (pyrand). own says the draws are the client's: they add
// up to the totals the file prints, both of which it must give (a run with
// another seed, another release's bounds or another order would not match;
// SGLang 0.4.0's five datacrunch runs match to the token,
// TestBenchSGLangClientDraws). Without a match the lengths are still
// NumPy's draws from the same distribution.
func (r *BenchResult) clientLengths(n, inLo, outLo int) (lens []benchLens, own bool) {
	rd := r.Random
	// NumPy refuses a seed above 2^32 - 1: no client drew from one, so own
	// is false below.
	in, out := SGLangRandomLengths(uint32(r.Seed), n, inLo, rd.InputLen, outLo, rd.OutputLen)
	lens = make([]benchLens, n)
	var sumIn, sumOut int64
	for i := range lens {
		lens[i] = benchLens{in[i], out[i]}
		sumIn += int64(in[i])
		sumOut += int64(out[i])
	}
	own = r.Seed <= math.MaxUint32 && r.TotalInputTokens >= 0 && r.TotalOutputTokens >= 0 &&
		sumIn == r.TotalInputTokens && sumOut == r.TotalOutputTokens
	return lens, own
}

// SGLangRandomLengths draws n prompt and output lengths as SGLang's
// bench_serving draws its random dataset after np.random.seed(seed): all
// the prompts (np.random.randint(inLo, inMax+1, size=n)), then all the
// outputs (randint(outLo, outMax+1, size=n)), from NumPy's legacy Mersenne
// Twister. The lower bounds are the release's: SGLang 0.4.0 draws prompts
// from max(int(inMax × ratio), 1) and outputs from int(outMax × ratio),
// later releases both from at least 1. Bounds with lo > max (which NumPy
// refuses) give lo.
func SGLangRandomLengths(seed uint32, n, inLo, inMax, outLo, outMax int) (prompts, outputs []int) {
	var mt pyrand.MT
	mt.InitGenrand(seed)
	prompts = make([]int, n)
	for i := range prompts {
		prompts[i] = mt.NPRandint(inLo, inMax+1)
	}
	outputs = make([]int, n)
	for i := range outputs {
		outputs[i] = mt.NPRandint(outLo, outMax+1)
	}
	return prompts, outputs
}

// arrivals returns n arrival times in ns, the seed they were drawn from
// (nil when they are not drawn: Trace.DrawnFrom), and a note when they need
// one; seed, when not nil, replaces the run's seed for drawn arrivals
// (ReadOptions.ArrivalSeed).
func (r *BenchResult) arrivals(n int, seed *uint64) ([]int64, *uint64, string, *Error) {
	out := make([]int64, n)
	unused := ""
	if seed != nil {
		unused = fmt.Sprintf("arrival seed %d changes nothing: ", *seed)
	}
	if r.Detail&DetailStartTimes != 0 && len(r.Requests) == n {
		out, note, e := r.clientArrivals(out)
		if unused != "" && e == nil {
			note = strings.TrimPrefix(note+"; "+unused+"the run saved its start times", "; ")
		}
		return out, nil, note, e
	}
	switch {
	case r.RequestRate == 0:
		return nil, nil, "", r.fieldErr("request_rate", "missing: the rate the client sent requests at (requests per second, "+
			"or \"inf\" for all at once) is needed to make its arrivals, and the run has no start_times; "+
			"add it to the run's object, e.g. \"request_rate\": 4.0")
	case math.IsInf(r.RequestRate, 1):
		if unused != "" {
			return out, nil, unused + "the run sent every request at once", nil
		}
		return out, nil, "", nil
	}
	s, note := r.Seed, ""
	if seed != nil {
		s, note = *seed, fmt.Sprintf("arrivals drawn from seed %d, not the run's own (%d): one draw of many, as the client's were", *seed, r.Seed)
	}
	var drawn *uint64
	if !math.IsInf(r.Burstiness, 1) {
		drawn = &s // evenly spaced gaps draw nothing
	}
	rng := rand.New(rand.NewPCG(s, benchArrivalStream))
	b := r.Burstiness
	mean := 1e9 / r.RequestRate // ns
	var at int64
	for i := 1; i < n; i++ {
		var gap float64
		switch {
		case math.IsInf(b, 1):
			gap = mean
		case b == 1:
			gap = rng.ExpFloat64() * mean
		default:
			gap = gammaSample(rng, b) * mean / b
		}
		at = addGap(at, gapNS(gap))
		out[i] = at
	}
	return out, drawn, note, nil
}

// clientArrivals fills out with the client's own arrival times: start
// time less queue time, relative to the earliest.
func (r *BenchResult) clientArrivals(out []int64) ([]int64, string, *Error) {
	origin := math.Inf(1)
	for _, q := range r.Requests {
		origin = math.Min(origin, q.Start-q.Queue)
	}
	for i, q := range r.Requests {
		d := q.Start - q.Queue - origin
		if !(d <= maxBenchSeconds) {
			return nil, "", r.fieldErr(fmt.Sprintf("start_times[%d]", i), "is %.6g s after the first request's arrival: over %d ns", d, maxTime)
		}
		out[i] = int64(math.Round(d * 1e9))
	}
	note := ""
	if r.Detail&DetailQueueTimes == 0 && r.MaxConcurrency > 0 {
		note = fmt.Sprintf("the run has start_times but no queue_times, so its arrivals include the time requests waited "+
			"for one of the client's %d slots", r.MaxConcurrency)
	}
	return out, note, nil
}

// readBenchTrace is Read for the vllm-bench format: the run opts.Run of the
// file (the only one when opts.Run is 0) as a Trace.
func readBenchTrace(r io.Reader, name string, opts ReadOptions) (*Trace, error) {
	runs, err := ReadBench(r, name)
	if err != nil {
		return nil, err
	}
	run := opts.Run
	switch {
	case run < 0:
		return nil, configErr("run %d is negative (0 reads a file of one run)", run)
	case run == 0 && len(runs) > 1:
		var sb strings.Builder
		fmt.Fprintf(&sb, "the file holds %d benchmark runs: choose one (1 to %d), "+
			"or save one run's line alone (sed -n %dp FILE > run%d.jsonl)", len(runs), len(runs), runs[1].Line, 2)
		for i, b := range runs {
			if i == MaxWarnings {
				fmt.Fprintf(&sb, "; and %d more", len(runs)-i)
				break
			}
			sb.WriteString("; " + b.Summary())
		}
		return nil, &Error{File: name, Line: runs[1].Line, Err: ErrConfig, Msg: sb.String()}
	case run == 0:
		run = 1
	case run > len(runs):
		return nil, &Error{File: name, Line: runs[len(runs)-1].Line, Err: ErrConfig,
			Msg: fmt.Sprintf("run %d was asked for, but the file holds %d benchmark run%s", run, len(runs), plural(len(runs)))}
	}
	return runs[run-1].trace(opts)
}

// benchSniffBytes is how much of the input's start sniffBench looks at (4
// KiB): vLLM writes backend and request_rate among its first ten keys
// (about 300 bytes, more with --metadata), SGLang as its first and third.
const benchSniffBytes = 4 << 10

// sniffBench tells a benchmark result from the start of r, for Read's Auto:
// after a BOM and white space, a JSON object whose first benchSniffBytes
// hold the keys "backend" and "request_rate" (no other format's line has
// them; a JSONL or Mooncake line with such keys as text would escape their
// quotes), or AccelMark's "schema_version" and "suite_id", which ReadBench
// refuses with its reason (Detect would only see a first line "{"). It returns a reader that yields r's input from its start, with
// r's first error kept for every later read (bufio's Peek would otherwise
// consume it), and VLLMBench or Auto.
func sniffBench(r io.Reader) (io.Reader, Format) {
	br := bufio.NewReaderSize(&stickyReader{r: r}, benchSniffBytes)
	head, _ := br.Peek(benchSniffBytes)
	head = bytes.TrimLeft(bytes.TrimPrefix(head, bom), " \t\r\n")
	if len(head) > 0 && head[0] == '{' && (bytes.Contains(head, []byte(`"request_rate"`)) && bytes.Contains(head, []byte(`"backend"`)) ||
		bytes.Contains(head, []byte(`"schema_version"`)) && bytes.Contains(head, []byte(`"suite_id"`))) {
		return br, VLLMBench
	}
	return br, Auto
}

// stickyReader returns the first error of r from then on.
type stickyReader struct {
	r   io.Reader
	err error
}

func (s *stickyReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	s.err = err
	return n, err
}
