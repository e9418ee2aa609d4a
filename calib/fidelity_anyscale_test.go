package calib

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/pyrand"
	"github.com/gpufrag/gpufrag/sim"
)

// TestPyMT holds the Mersenne Twister to CPython 3.11's random module:
// random.seed(0xCADE); [random.RandInt(10, 50000) for _ in range(5)];
// random.random().
func TestPyMT(t *testing.T) {
	var m pyrand.MT
	m.SeedInt(0xCADE)
	var got []int
	for range 5 {
		got = append(got, m.RandInt(10, 50000))
	}
	if want := []int{15316, 7116, 41059, 27999, 25081}; !slices.Equal(got, want) {
		t.Errorf("randint(10, 50000) × 5 after seed(0xCADE) = %v, want %v", got, want)
	}
	if r := m.Random(); r != 0.02068305909620205 {
		t.Errorf("random() then = %v, want 0.02068305909620205", r)
	}
}

// TestAnyscaleLengths checks the redrawn runs. The one independent
// check is the 32-token run: issue #4 of the repository prints the run's
// log, response_token_count 15610 over 1,000 requests (the server counts
// max(len, 1) tokens a request). The other sums and prefixes are CPython
// 3.11's of the same algorithm (benchmark_throughput.py's draws, run with
// NumPy's legacy seeding and exponential written out), a guard against a
// change here.
func TestAnyscaleLengths(t *testing.T) {
	cases := []struct {
		respRange, sum int
		head           []int
	}{
		{32, 15610, []int{23, 12, 9, 1, 13, 11, 15, 5, 3, 14, 9, 11}},
		{128, 54331, []int{23, 12, 85, 95, 127, 9, 41, 87, 92, 114, 69, 64}},
		{512, 122108, []int{437, 174, 23, 12, 85, 337, 95, 127, 130, 131, 9, 41}},
		{1536, 129570, []int{437, 174, 23, 12, 85, 337, 95, 127, 130, 131, 9, 41}},
	}
	for _, c := range cases {
		in, out := fidAnyscaleLens(fidAnyscaleRun{promptMean: 512, n: 1000, respMean: 128, respRange: c.respRange})
		if len(in) != 1000 || len(out) != 1000 {
			t.Fatalf("range %d: %d prompts, %d outputs", c.respRange, len(in), len(out))
		}
		sum := 0
		for i := range in {
			if in[i] != 512 {
				t.Fatalf("range %d: prompt %d has %d tokens, want 512", c.respRange, i, in[i])
			}
			sum += max(out[i], 1)
		}
		if sum != c.sum {
			t.Errorf("range %d: output tokens %d, want %d", c.respRange, sum, c.sum)
		}
		if !slices.Equal(out[:len(c.head)], c.head) {
			t.Errorf("range %d: first outputs %v, want %v", c.respRange, out[:len(c.head)], c.head)
		}
	}
}

// TestAnyscaleFigures checks the source's figures against the redrawn
// runs: each output throughput is the printed (prompt + output)
// throughput × output ÷ (prompt + output) tokens of the run, and each
// figure translates into a simulation of its run with the harness's
// sleep.
func TestAnyscaleFigures(t *testing.T) {
	pub, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range pub.Figures {
		f := &pub.Figures[i]
		if f.Source != fidAnyscaleSource {
			continue
		}
		n++
		w := f.Setup.Workload
		_, out := fidAnyscaleLens(fidAnyscaleRun{promptMean: w.InputLen, n: w.NumPrompts, respMean: w.OutputLen, respRange: w.MaxTokens})
		tokens := w.InputLen * w.NumPrompts
		for _, o := range out {
			tokens += max(o, 1)
		}
		if got := tokens - w.InputLen*w.NumPrompts; w.TotalOutputTokens != got {
			t.Errorf("%s: total_output_tokens %d, the redrawn run has %d", f.ID, w.TotalOutputTokens, got)
		}
		// The client's figure, (prompt + output tokens) ÷ span, from the
		// output throughput recorded: the whole number the table prints
		// (the 32-token log's 5751.92, 2 decimals).
		tps := f.Value * float64(tokens) / float64(w.TotalOutputTokens)
		want := fmt.Sprintf("%.0f tok/s", math.Round(tps))
		if strings.Contains(f.Ref, ", log vllm_range_") {
			want = fmt.Sprintf("tokens_per_s %.2f", tps)
		} else if math.Abs(tps-math.Round(tps)) > 1e-6 {
			t.Errorf("%s: %v tok/s × %d tokens ÷ %d output = %v tok/s, not a whole number", f.ID, f.Value, tokens, w.TotalOutputTokens, tps)
		}
		if !strings.Contains(f.Precision, want) {
			t.Errorf("%s: the client's throughput is %v tok/s; the precision (%q) does not name %q", f.ID, tps, f.Precision, want)
		}
		p, err := fidTranslate(f, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", f.ID, err)
		}
		if p.skip != "" || p.sim == nil {
			t.Fatalf("%s: not simulated: %s", f.ID, p.skip)
		}
		if len(p.sim.reqs) != w.NumPrompts || p.sim.cfg.Engine != sim.EngineVLLMV0 || p.sim.cfg.ChunkedPrefill ||
			p.sim.cfg.MaxBatchTokens != w.MaxNumBatchedTokens {
			t.Errorf("%s: %d requests, engine %v, chunked %v, %d batched tokens", f.ID, len(p.sim.reqs), p.sim.cfg.Engine, p.sim.cfg.ChunkedPrefill, p.sim.cfg.MaxBatchTokens)
		}
		v, ok := p.pick(&sim.Result{SimulatedSeconds: 100, Steps: 1000, OutputTokens: 30000, OutputTokensPerS: 300})
		if want := 30000 / (100 + 1000*fidAnyscaleSleepNs/1e9); !ok || math.Abs(v-want) > 1e-9 {
			t.Errorf("%s: picked %v from 30,000 tokens in 100 s and 1,000 steps, want %v (the sleep before each step)", f.ID, v, want)
		}
	}
	if n == 0 {
		t.Fatalf("no figure of source %s", fidAnyscaleSource)
	}
}

var anyscaleTrace = flag.String("anyscale-trace", "", "TestAnyscaleLatencyTrace writes the latency run's requests here as gpufrag JSONL (-anyscale-n, -anyscale-qps)")
var anyscaleN = flag.Int("anyscale-n", 5000, "prompts of the latency run written by -anyscale-trace")
var anyscaleQPS = flag.Float64("anyscale-qps", 1, "request rate of the latency run written by -anyscale-trace")
var anyscaleRange = flag.Int("anyscale-range", 0, "with -anyscale-trace, write the throughput run of this output cap (32, 128, 512, 1536: 1,000 prompts of 512 tokens, all at 0) instead")

// fidAnyscaleLatencyTrace is benchmark_configs/vllm_variable_size_latency's
// run of n prompts at qps: prompts of 128 to 384 tokens (mean 256, range
// 256), outputs as the throughput runs draw them (mean 128, at most 1,536),
// arrivals 0 and then NumPy exponential gaps of mean 1/qps, drawn after the
// outputs from the same generator. Its figures (issue #4's median E2E
// latencies at qps 1 and 4) are not recorded: E2E is no metric of the
// dataset and the issue does not say how many prompts it sent (the
// committed script: 5,000, at qps 8, 16 and 32).
func fidAnyscaleLatencyTrace(n int, qps float64) (in, out []int, arrival []float64) {
	in, out, np := fidAnyscaleDraw(fidAnyscaleRun{promptMean: 256, promptRange: 256, n: n, respMean: 128, respRange: 1536})
	t := 0.0
	for range n {
		arrival = append(arrival, t)
		t += np.StandardExponential() / qps
	}
	return in, out, arrival
}

// TestAnyscaleLatencyTrace holds the latency run's draws to CPython 3.11's
// (the same algorithm run in Python) and, with -anyscale-trace FILE,
// writes the run (or, with -anyscale-range, a throughput run) for gpufrag
// simulate --trace FILE (docs/calibrate.md, issue 24's ninth session).
func TestAnyscaleLatencyTrace(t *testing.T) {
	for _, c := range []struct {
		n               int
		in, out         int
		second, last    float64
		headIn, headOut []int
	}{
		{1000, 258009, 128231, 0.2514625843417309, 1008.955864460816, []int{247, 183, 346, 323, 138}, []int{221, 44, 77, 208, 204}},
		{5000, 1290681, 632820, 1.5060320823258426, 5010.504638207153, []int{247, 183, 346, 323, 138}, []int{37, 470, 129, 30, 37}},
	} {
		in, out, arr := fidAnyscaleLatencyTrace(c.n, 1)
		si, so := 0, 0
		for i := range in {
			si += in[i]
			so += max(out[i], 1)
		}
		if si != c.in || so != c.out || !slices.Equal(in[:5], c.headIn) || !slices.Equal(out[:5], c.headOut) {
			t.Errorf("n %d: prompt tokens %d (want %d), output %d (want %d), first %v / %v (want %v / %v)", c.n, si, c.in, so, c.out, in[:5], out[:5], c.headIn, c.headOut)
		}
		if math.Abs(arr[1]-c.second) > 1e-9 || math.Abs(arr[c.n-1]-c.last) > 1e-6 {
			t.Errorf("n %d: arrivals %v, ..., %v; want %v, ..., %v", c.n, arr[1], arr[c.n-1], c.second, c.last)
		}
	}
	if *anyscaleTrace == "" {
		return
	}
	in, out, arr := fidAnyscaleLatencyTrace(*anyscaleN, *anyscaleQPS)
	if *anyscaleRange > 0 {
		in, out = fidAnyscaleLens(fidAnyscaleRun{promptMean: 512, n: 1000, respMean: 128, respRange: *anyscaleRange})
		arr = make([]float64, len(in))
	}
	var b strings.Builder
	for i := range in {
		fmt.Fprintf(&b, "{\"id\":\"r%d\",\"arrival_s\":%s,\"prompt_tokens\":%d,\"output_tokens\":%d}\n", i, strconv.FormatFloat(arr[i], 'g', -1, 64), in[i], max(out[i], 1))
	}
	if err := os.WriteFile(*anyscaleTrace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAnyscaleRefusesUnboundedDraws: a figure whose output mean is far above
// its cap (each output redrawn while above it) is skipped with a reason, not
// drawn for ever.
func TestAnyscaleRefusesUnboundedDraws(t *testing.T) {
	for _, w := range []Workload{
		{InputLen: 512, NumPrompts: 1000, OutputLen: 1 << 20, MaxTokens: 32},
		{InputLen: 512, NumPrompts: 1 << 30, OutputLen: 128, MaxTokens: 32},
	} {
		f := &Figure{ID: "x", Source: fidAnyscaleSource}
		f.Setup.Workload = w
		reqs, _, skip := fidAnyscaleRequests(f)
		if skip == "" || reqs != nil {
			t.Errorf("%+v: drawn (%d requests), want a skip", w, len(reqs))
		}
	}
}
