package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/workload"
	"pgregory.net/rapid"
)

// stepKinds runs c on reqs step by step (no fast paths) and returns, per
// step, "p" for a prefill-only step, "d" for decode-only and "m" for mixed.
func stepKinds(t *testing.T, c Config, reqs []workload.Request) string {
	t.Helper()
	e, err := New(c, reqs)
	if err != nil {
		t.Fatal(err)
	}
	var kinds strings.Builder
	stepThrough(t, e, 10_000, func() {
		var pre, dec bool
		for _, b := range e.batch {
			pre, dec = pre || b.prefill, dec || !b.prefill
		}
		switch {
		case pre && dec:
			kinds.WriteByte('m')
		case pre:
			kinds.WriteByte('p')
		case dec:
			kinds.WriteByte('d')
		}
	})
	if e.res.RequestsCompleted != len(reqs) {
		t.Fatalf("%d of %d requests completed", e.res.RequestsCompleted, len(reqs))
	}
	return kinds.String()
}

// TestEngineModes: r1 decodes when r2's and r3's prompts arrive. vLLM V1
// (and V0 with chunked prefill, and SGLang with mixed chunks) puts the new
// prefill beside r1's decode; V0 without chunked prefill and SGLang run the
// prefills alone while r1 waits. SGLang also splits r3's 300-token prompt
// at the 128-token budget, in prefill-only steps.
func TestEngineModes(t *testing.T) {
	ms := int64(time.Millisecond)
	reqs := []workload.Request{
		{ID: "r1", Arrival: 0, PromptTokens: 10, OutputTokens: 6, N: 1},
		{ID: "r2", Arrival: 1 * ms, PromptTokens: 20, OutputTokens: 2, N: 1},
		{ID: "r3", Arrival: 1 * ms, PromptTokens: 300, OutputTokens: 2, N: 1},
	}
	tests := []struct {
		name    string
		engine  EngineKind
		chunked bool
		mixed   bool
		want    string
	}{
		// Step 1: r1's prompt (r2, r3 arrive during it). Step 2: r1's
		// decode, r2's prompt and 107 of r3's (128 − 1 − 20). Step 3: two
		// decodes (r2 ends) and 126 more of r3. Step 4: r1's decode and
		// r3's last 67. Steps 5, 6: decodes (r3, then r1 end).
		{"vllm-v1", EngineVLLMV1, true, false, "pmmmdd"},
		{"vllm-v0 chunked", EngineVLLMV0, true, false, "pmmmdd"},
		// Whole prompts (the budget is raised to the context): r2 and r3 in
		// one prefill step, then everyone decodes.
		{"vllm-v0", EngineVLLMV0, false, false, "ppddddd"},
		// 300 tokens in chunks of 128 − 20 = 108, 128 and 64, alone.
		{"sglang", EngineSGLang, true, false, "ppppddddd"},
		{"sglang mixed", EngineSGLang, true, true, "pmmmdd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tinyConfig(64 << 20)
			c.Engine, c.ChunkedPrefill, c.MixedChunk = tt.engine, tt.chunked, tt.mixed
			c.MaxBatchTokens = 128
			if got := stepKinds(t, c, reqs); got != tt.want {
				t.Errorf("steps %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEngineModesAccounting runs the three engines on drawn configurations
// and workloads, with and without a Profile, through runEngine's checks:
// every request ends in one state, no token is lost or counted twice, and
// Close leaves nothing allocated.
func TestEngineModesAccounting(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawConfig(rt)
		c.Engine = EngineKind(rapid.IntRange(0, 2).Draw(rt, "engine"))
		c.MixedChunk = c.Engine == EngineSGLang && rapid.Bool().Draw(rt, "mixed")
		if rapid.Bool().Draw(rt, "profile") {
			p := toyProfile()
			p.Engine = c.Engine
			c.Profile = p
		}
		reqs := make([]workload.Request, rapid.IntRange(0, 12).Draw(rt, "requests"))
		var at int64
		for i := range reqs {
			at += int64(rapid.IntRange(0, 20).Draw(rt, "gap-ms")) * int64(time.Millisecond)
			reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i), Arrival: at,
				PromptTokens: rapid.IntRange(1, 600).Draw(rt, "prompt"),
				OutputTokens: rapid.IntRange(0, 60).Draw(rt, "output"), N: 1}
		}
		if _, err := New(c, reqs); err != nil {
			return // a config that cannot run (too little memory)
		}
		runEngine(rt, c, reqs)
	})
}

// TestProfileFastPaths: under a Profile the decode runs of fastpath.go give
// exactly the step-by-step engine's run (they time steps from work without
// the prefill fields).
func TestProfileFastPaths(t *testing.T) {
	m, g := presetPair(t, "llama-3.1-8b", "h100-80g")
	n := 300
	if testing.Short() || invariants.Enabled {
		n = 40
	}
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("q%d", i), Arrival: int64(i) * 150 * int64(time.Millisecond),
			PromptTokens: 50 + (i*7919)%3950, OutputTokens: 1 + (i*104729)%700, N: 1}
	}
	for _, eng := range []EngineKind{EngineVLLMV1, EngineVLLMV0, EngineSGLang} {
		for _, tp := range []int{1, 2} {
			c := DefaultConfig(m, g)
			c.TP, c.Engine, c.ChunkedPrefill = tp, eng, eng != EngineVLLMV0
			var err error
			if c.Profile, err = DefaultProfile(g.Name, eng, ""); err != nil {
				t.Fatal(err)
			}
			fast, _, ok := runBoth(t, c, reqs)
			if !ok {
				t.Fatalf("%v tp %d: cannot run", eng, tp)
			}
			if fast.runs.steps == 0 {
				t.Fatalf("%v tp %d: no decode runs", eng, tp)
			}
		}
	}
}

// TestProfileChangesTime: the same run under a Profile and under the
// roofline gives the same tokens but other times, and the profile's own
// arithmetic: one request of a 1,000-token prompt and 2 output tokens
// takes the prefill step and one decode step, as Profile.StepTime sums
// them, plus the profile's per-request latency (Overhead.RequestNs) in
// its TTFT and E2E.
func TestProfileChangesTime(t *testing.T) {
	m, g := presetPair(t, "llama-3.1-8b", "h100-80g")
	reqs := []workload.Request{{ID: "a", PromptTokens: 1000, OutputTokens: 2, N: 1}}
	c := DefaultConfig(m, g)
	_, roof := runEngine(t, c, reqs)
	var err error
	if c.Profile, err = DefaultProfile("h100-80g", EngineVLLMV1, ""); err != nil {
		t.Fatal(err)
	}
	_, prof := runEngine(t, c, reqs)
	sh := NewShape(m, 1, model.BF16)
	var pre, dec Step
	pre.AddPrefill(0, 1000, 1)
	dec.AddDecode(1000, 1)
	if c.Profile.Overhead.RequestNs <= 0 {
		t.Fatal("the profile has no per-request latency to check")
	}
	ttft := c.Profile.StepTime(sh, pre).TotalNs + c.Profile.Overhead.RequestNs
	total := ttft + c.Profile.StepTime(sh, dec).TotalNs
	if got := int64(prof.TTFT.P50 * 1e9); abs64(got-ttft) > 1 {
		t.Errorf("TTFT %d ns, want the prefill step's %d", got, ttft)
	}
	if got := int64(prof.E2E.P50 * 1e9); abs64(got-total) > 1 {
		t.Errorf("latency %d ns, want the two steps' %d", got, total)
	}
	if roof.OutputTokens != prof.OutputTokens || roof.Steps != prof.Steps || roof.TTFT == prof.TTFT {
		t.Errorf("roofline %+v\nprofile %+v", summary(roof), summary(prof))
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestWeightDType: int4 weights take a quarter of bf16's memory, leaving
// more for KV, and decode faster under a profile (weight-bound steps read
// a quarter of the bytes).
func TestWeightDType(t *testing.T) {
	m, g := presetPair(t, "llama-3.1-8b", "a100-80g")
	reqs := []workload.Request{{ID: "a", PromptTokens: 100, OutputTokens: 50, N: 1}}
	run := func(wd model.DType) Result {
		c := DefaultConfig(m, g)
		c.WeightDType = wd
		// The prior: its 2 ms step overhead leaves the weight reads most
		// of a decode step (the fitted profile's larger overhead does not).
		var err error
		if c.Profile, err = PriorProfile("a100-80g", EngineVLLMV1, ""); err != nil {
			t.Fatal(err)
		}
		_, res := runEngine(t, c, reqs)
		return res
	}
	bf, i4 := run(0), run(model.INT4)
	// 8,030,261,248 params: 16.06 GB in bf16; in int4 half a byte each
	// but for the embedding, lm_head and norms (2 × 525,336,576 + 266,240 =
	// 1,050,939,392), which stay at two: 1.5 B less a parameter for the rest.
	if d := i4.KVBudgetBytes - bf.KVBudgetBytes; d != 3*(8_030_261_248-1_050_939_392)/2 {
		t.Errorf("int4 KV budget %d B above bf16's, want 10,468,982,784", d)
	}
	if !(i4.TPOT.P50 < bf.TPOT.P50/2) {
		t.Errorf("int4 TPOT %g s, bf16 %g s: want under half", i4.TPOT.P50, bf.TPOT.P50)
	}
	if run(model.BF16).TPOT != bf.TPOT {
		t.Error("weight dtype bf16 differs from the model's own bf16")
	}
}

// TestConfigProfileErrors: a profile for another GPU or engine, a bad
// profile, mixed chunks outside SGLang and a bad weight dtype are refused
// by New, naming the field.
func TestConfigProfileErrors(t *testing.T) {
	h100, err := DefaultProfile("h100-80g", EngineVLLMV1, "")
	if err != nil {
		t.Fatal(err)
	}
	badEff := toyProfile()
	badEff.Linear.WeightBWEff = 0
	tests := []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"other gpu", func(c *Config) { c.Profile = h100 }, `profile: it is for gpu "h100-80g", the config's GPU is "toy"`},
		{"other engine", func(c *Config) { c.Profile = toyProfile(); c.Engine = EngineSGLang }, "profile: it is for engine vllm-v1, the config's engine is sglang"},
		{"bad profile", func(c *Config) { c.Profile = badEff }, "profile: bad profile: linear.weight_bw_eff"},
		{"mixed chunk", func(c *Config) { c.MixedChunk = true }, "mixed chunk"},
		{"engine", func(c *Config) { c.Engine = 7 }, "engine"},
		{"weight dtype", func(c *Config) { c.WeightDType = 99 }, "weight dtype"},
	}
	for _, tt := range tests {
		c := tinyConfig(64 << 20)
		tt.set(&c)
		_, err := New(c, nil)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want ErrBadConfig saying %q", tt.name, err, tt.want)
		}
	}
	if k, err := ParseEngine("SGLang"); err != nil || k != EngineSGLang {
		t.Errorf("ParseEngine(SGLang) = %v, %v", k, err)
	}
	if _, err := ParseEngine("tgi"); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "vllm-v1, vllm-v0, sglang") {
		t.Errorf("ParseEngine(tgi): %v", err)
	}
}
