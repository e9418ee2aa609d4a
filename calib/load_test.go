package calib

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// setupL40S is the crusoe runs' 8B setup: Llama-3.1-8B on one L40S under
// vLLM 0.5.5 (V0, chunked prefill at 512 batched tokens, no prefix cache).
func setupL40S(t testing.TB) ReplaySetup {
	t.Helper()
	m, err := model.Preset("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.LookupGPU("l40s-48g")
	if err != nil {
		t.Fatal(err)
	}
	s := NewReplaySetup(m, g, 1)
	s.Engine, s.EngineGiven, s.EngineVersion = sim.EngineVLLMV0, true, "0.5.5"
	s.MaxBatchTokens, s.PrefixCaching = 512, false
	return s
}

// truthFile is a vLLM --save-result file of n requests (512 prompt tokens,
// 128 output tokens each) sent at rate requests/s, whose per-request
// figures are those the simulator gives with the profile truth: a run whose
// true profile is known. Every request has the same lengths, so the
// figures, kept in completion order, are each request's own as far as the
// metrics tell (TTFT and TPOT medians, output tokens over the duration).
func truthFile(t *testing.T, s ReplaySetup, truth *sim.Profile, rate float64, n int, name string) *File {
	t.Helper()
	doc := map[string]any{"backend": "vllm", "request_rate": rate, "burstiness": 1.0, "num_prompts": n, "completed": n}
	in, out := make([]int, n), make([]int, n)
	ttfts, itls := make([]float64, n), make([][]float64, n)
	for i := range n {
		in[i], out[i], ttfts[i], itls[i] = 512, 128, 0.1, []float64{0.01}
	}
	doc["input_lens"], doc["output_lens"], doc["ttfts"], doc["itls"], doc["duration"] = in, out, ttfts, itls, 1.0
	read := func() *File {
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ReadFile(bytes.NewReader(b), name)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// The trace calibrate replays (arrivals drawn with the run's seed),
	// simulated with the truth.
	f := read()
	c, err := newCase(f, f.Runs[0], false, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.ReplayConfig(truth, f.Runs[0])
	cfg.RequestTimes = true
	e, err := sim.New(cfg, c.Requests)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RequestTimes) != n {
		t.Fatalf("%s: %d of %d requests completed with the truth", name, len(res.RequestTimes), n)
	}
	for i, rt := range res.RequestTimes {
		ttfts[i] = rt.TTFT
		itls[i] = make([]float64, rt.Output-1)
		for k := range itls[i] {
			itls[i][k] = rt.TPOT
		}
	}
	doc["duration"] = float64(n*128) / res.OutputTokensPerS
	doc["output_throughput"], doc["total_output_tokens"] = res.OutputTokensPerS, n*128
	return read()
}

// oneLoadCase fits the file at one load and judges the other, from a
// truth that is the start with change applied.
type oneLoadCase struct {
	name       string
	change     func(*sim.Profile)
	fitRate    float64
	otherRate  float64
	regime     string
	mustFit    []string          // fitted, each with a "because"
	mustKeep   map[string]string // kept, with a reason containing the text
	heldOutMax float64           // largest |error| over median TTFT, median TPOT and output throughput of the other load
}

// TestOneLoadRule: runs simulated with a known profile at two loads; the
// calibration fits one and is judged on the other. At a light load the
// rule must not fit what grows with the batch (the data cannot pin it:
// the truth's per-sequence cost is the start's, so fitting it would only
// fit the noise of a load that barely shows it), and the host's speed it
// does fit carries to the heavier load. At a loaded one, whose truth costs
// more per sequence than the start, the cost per sequence is fitted and
// the host's fixed cost kept, and the light load follows. The report says
// why for each, in the words the rule prints.
func TestOneLoadRule(t *testing.T) {
	skipHeavy(t)
	s := setupL40S(t)
	start, err := sim.DefaultProfile(s.GPU.Name, s.Engine, s.EngineVersion)
	if err != nil {
		t.Fatal(err)
	}
	cases := []oneLoadCase{
		{name: "light", change: func(p *sim.Profile) { setHost(p, 1.6*float64(p.Overhead.StepNs)) },
			fitRate: 1, otherRate: 8, regime: RegimeLight,
			mustFit: []string{hostParam},
			mustKeep: map[string]string{
				"overhead.step_ns":      hostParam,
				"overhead.per_seq_ns":   "grows with the batch",
				"overhead.per_token_ns": "grows with the batch",
				"attention.kv_bw_eff":   "grows with the batch",
				"attention.kv_seq_ns":   "grows with the batch",
				"linear.blend_exponent": "grows with the batch",
			},
			heldOutMax: 0.05},
		{name: "loaded", change: func(p *sim.Profile) { p.Overhead.PerSeqNs *= 3 },
			fitRate: 8, otherRate: 1, regime: RegimeLoaded,
			mustFit: []string{"overhead.per_seq_ns"},
			mustKeep: map[string]string{
				hostParam:          "overhead.per_seq_ns, which is fitted",
				"overhead.step_ns": "overhead.per_seq_ns, which is fitted",
			},
			heldOutMax: 0.05},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			truth := start.Clone()
			tc.change(truth)
			fit := truthFile(t, s, truth, tc.fitRate, int(tc.fitRate*240), "fit.json")
			other := truthFile(t, s, truth, tc.otherRate, int(tc.otherRate*240), "other.json")
			rep := calibrate(t, []*File{fit}, []*File{other}, FitOptions{Setup: s})
			if rep.Load.Regime != tc.regime {
				t.Fatalf("regime %q (%s), want %q", rep.Load.Regime, rep.Load.Why, tc.regime)
			}
			byName := map[string]ParamReport{}
			for _, p := range rep.Params {
				byName[p.Name] = p
			}
			for _, n := range tc.mustFit {
				if p := byName[n]; !p.Fitted || p.Because == "" {
					t.Errorf("%s: fitted %v, because %q, reason %q; want it fitted, with a because", n, p.Fitted, p.Because, p.Reason)
				}
			}
			for n, want := range tc.mustKeep {
				if p := byName[n]; p.Fitted || !strings.Contains(p.Reason, want) {
					t.Errorf("%s: fitted %v, reason %q; want kept, the reason naming %q", n, p.Fitted, p.Reason, want)
				}
			}
			var text bytes.Buffer
			if err := rep.WriteText(&text, ""); err != nil {
				t.Fatal(err)
			}
			for _, n := range tc.mustFit {
				if !strings.Contains(text.String(), n+" because ") {
					t.Errorf("the text report has no line %q:\n%s", n+" because ...", text.String())
				}
			}
			if !strings.Contains(text.String(), "Load: one load, "+tc.regime) {
				t.Errorf("the text report does not state the load:\n%s", text.String())
			}
			for _, run := range rep.Runs {
				if !run.Holdout {
					continue
				}
				for _, m := range run.Metrics {
					switch m.Metric {
					case MedianTTFT, MedianTPOT, OutputThroughput:
						if m.AfterErr == nil || math.Abs(*m.AfterErr) > tc.heldOutMax {
							t.Errorf("held out at %g req/s, %v: error %v, want within %.0f%%", tc.otherRate, m.Metric, fmtErr(m.AfterErr), 100*tc.heldOutMax)
						}
					}
				}
			}
		})
	}
}

func fmtErr(e *float64) string {
	if e == nil {
		return "none"
	}
	return fmt.Sprintf("%+.1f%%", 100**e)
}

// TestLoadOf: the regime from the start's mean batch and the measured
// throughput against what was offered; several loads switch the rule off,
// and a run with no drawn rate (all at once, closed loop), or whose
// throughput is not its replayed requests' (a cut file), is never called
// saturated from its throughput.
func TestLoadOf(t *testing.T) {
	mk := func(rate float64, conc int, served float64) *Case {
		c := &Case{Run: &workload.BenchResult{RequestRate: rate, MaxConcurrency: conc}}
		for i := range 10 {
			c.Requests = append(c.Requests, workload.Request{Arrival: int64(i) * 1e9, PromptTokens: 10, OutputTokens: 100}) // 100 tokens a second over 9 s
		}
		c.measured[OutputThroughput] = measure{v: served * 1000 / 9, ok: true}
		return c
	}
	// withTTFTs gives c the per-request TTFTs of 20 requests, the last
	// quarter's `growth` times the rest's (1: no queue).
	withTTFTs := func(c *Case, growth float64) *Case {
		c.Run.Detail = workload.DetailLens | workload.DetailTTFTs
		for i := range 20 {
			ttft := 0.05
			if i >= 15 {
				ttft *= growth
			}
			c.Run.Requests = append(c.Run.Requests, workload.BenchRequest{InputTokens: 10, OutputTokens: 100, TTFT: ttft})
		}
		return c
	}
	cut := func(c *Case) *Case {
		c.measured[OutputThroughput].excluded = "the per-request arrays hold 10 output tokens of the file's total_output_tokens 100"
		return c
	}
	tests := []struct {
		name   string
		cases  []*Case
		batch  float64
		regime string
	}{
		{"light", []*Case{mk(1, 0, 1)}, 3, RegimeLight},
		{"loaded", []*Case{mk(1, 0, 0.95)}, 30, RegimeLoaded},
		{"saturated", []*Case{mk(1, 0, 0.5)}, 30, RegimeSaturated},
		{"saturated even with a small batch", []*Case{mk(1, 0, 0.5)}, 2, RegimeSaturated},
		{"short of the offer with TTFTs that grow: saturated", []*Case{withTTFTs(mk(1, 0, 0.5), 5)}, 30, RegimeSaturated},
		{"short of the offer with flat TTFTs: a drain, not a queue", []*Case{withTTFTs(mk(1, 0, 0.5), 1.2)}, 30, RegimeLoaded},
		{"a drain at a light load", []*Case{withTTFTs(mk(1, 0, 0.5), 1)}, 3, RegimeLight},
		{"all at once: no offered rate", []*Case{mk(math.Inf(1), 0, 0.5)}, 30, RegimeLoaded},
		{"closed loop: no offered rate", []*Case{mk(1, 8, 0.5)}, 3, RegimeLight},
		{"a throughput left out (a cut file) says nothing", []*Case{cut(mk(1, 0, 0.5))}, 3, RegimeLight},
		{"two rates", []*Case{mk(1, 0, 1), mk(2, 0, 1)}, 3, RegimeSeveral},
		{"two concurrencies", []*Case{mk(1, 4, 1), mk(1, 8, 1)}, 3, RegimeSeveral},
	}
	for _, tc := range tests {
		f := &fitter{cases: tc.cases}
		first := map[int]*sim.Result{}
		for i := range tc.cases {
			f.fitIdx = append(f.fitIdx, i)
			first[i] = &sim.Result{Steps: 10, BatchSizeMean: tc.batch}
		}
		lr := f.loadOf(first)
		if lr.Regime != tc.regime || lr.Why == "" {
			t.Errorf("%s: regime %q (%s), want %q", tc.name, lr.Regime, lr.Why, tc.regime)
		}
		if drain := strings.Contains(lr.Why, "the shortfall is the run's drain after its last send"); drain != strings.Contains(tc.name, "drain") {
			t.Errorf("%s: why %q", tc.name, lr.Why)
		}
	}
}

// TestLoadOrderPerSeqFirst: a loaded one load tries the cost per sequence
// first only where the start spends at least half of a step's host time on
// its sequences at the load's mean batch; otherwise the table's order, the
// host's speed first. A light load never tries it first.
func TestLoadOrderPerSeqFirst(t *testing.T) {
	start := &sim.Profile{}
	start.Overhead.StepNs, start.Overhead.PerSeqNs = 2_000_000, 8_000
	first := func(lr LoadReport) string { return paramTable[lr.order(start)[0]].name }
	for _, c := range []struct {
		regime string
		batch  float64
		want   string
	}{
		{RegimeLoaded, 4.7, hostParam},             // 38 µs of sequences against 2 ms fixed
		{RegimeLoaded, 249, hostParam},             // 1.99 ms: still below half
		{RegimeLoaded, 250, "overhead.per_seq_ns"}, // 2 ms: half
		{RegimeSaturated, 400, "overhead.per_seq_ns"},
		{RegimeLight, 400, hostParam},
		{RegimeSeveral, 400, hostParam},
	} {
		if got := first(LoadReport{Regime: c.regime, MeanBatch: c.batch}); got != c.want {
			t.Errorf("%s at %g sequences a step: %s tried first, want %s", c.regime, c.batch, got, c.want)
		}
	}
	if n := len(LoadReport{Regime: RegimeLoaded, MeanBatch: 400}.order(start)); n != len(paramTable) {
		t.Errorf("order lists %d parameters, want %d", n, len(paramTable))
	}
}

// TestWorseThanStart: a fit whose median and largest |error| over the
// fitted metrics both rise is warned about, naming the metric that weighs
// most; one that improves either is not.
func TestWorseThanStart(t *testing.T) {
	const top = "median_itl of a.json (-48.9% after the fit, against a noise of 0.02)"
	worse := ErrorSummary{Metrics: 16, BeforeMedian: 0.066, BeforeMax: 0.609, AfterMedian: 0.178, AfterMax: 36.67}
	if w := worseThanStart(worse, top); !strings.Contains(w, "(6.6% → 17.8%) and on the largest (60.9% → 3667.0%)") || !strings.Contains(w, top+" weighs most") {
		t.Errorf("worse on both: %q", w)
	}
	for _, e := range []ErrorSummary{
		{Metrics: 16, BeforeMedian: 0.066, BeforeMax: 0.609, AfterMedian: 0.05, AfterMax: 0.9}, // a better median
		{Metrics: 16, BeforeMedian: 0.066, BeforeMax: 0.609, AfterMedian: 0.07, AfterMax: 0.3}, // a better max
		{},
	} {
		if w := worseThanStart(e, top); w != "" {
			t.Errorf("%+v: %q", e, w)
		}
	}
}
