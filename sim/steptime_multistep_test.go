package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// TestSchedulerStepsHost: under vLLM V0's multi-step scheduling
// (Config.SchedulerSteps n) a decode-only step pays 1/n of the host's step
// and per-sequence time; a step with a prefill pays all of it, as vLLM
// runs a prompt in a step of its own. Toy figures (toyShape, toyProfile):
// 4 decodes over no context are 2e6 ns of weights, 4 × 40 ns of KV and
// 1e6 + 4 × 1e4 ns of host time, outside a graph of size 4.
func TestSchedulerStepsHost(t *testing.T) {
	sm := toyProfile().Compile(toyShape())
	four := Step{DecodeSeqs: 4, Sampled: 4}
	if got, want := sm.Time(four).TotalNs, int64(2_000_160+1_040_000); got != want {
		t.Fatalf("one step: %d ns, want %d", got, want)
	}
	ten := sm.WithSchedulerSteps(10)
	if got, want := ten.Time(four).TotalNs, int64(2_000_160+104_000); got != want {
		t.Errorf("10 scheduler steps: %d ns, want %d (a tenth of the host's 1,040,000)", got, want)
	}
	if got := sm.Time(four).TotalNs; got != 3_040_160 {
		t.Errorf("WithSchedulerSteps changed the model it copied: %d ns", got)
	}
	for _, n := range []int{0, 1} {
		if a, b := sm.WithSchedulerSteps(n).Time(four), sm.Time(four); a != b {
			t.Errorf("%d scheduler steps: %+v, want the single-step %+v", n, a, b)
		}
	}
	var pre Step
	pre.AddPrefill(0, 10, 1)
	pre.AddDecode(0, 1)
	if a, b := ten.Time(pre), sm.Time(pre); a != b {
		t.Errorf("a step with a prefill: %+v under 10 scheduler steps, want the full host time %+v", a, b)
	}
	// The decode runs' timer follows Time (TestDecodeTimerExact's check).
	checkDecodeTimer(t, ten, four, 0, 100, 1e6)
}

// checkDecodeTimer checks that st's decode-run timer under sm gives Time's
// total at each decode context in ctxs.
func checkDecodeTimer(t *testing.T, sm *StepModel, st Step, ctxs ...float64) {
	t.Helper()
	d := sm.decodeTimer(st)
	for _, ctx := range ctxs {
		st2 := st
		st2.DecodeContext = ctx
		if got, want := d.at(ctx), sm.Time(st2).TotalNs; got != want {
			t.Errorf("decode timer at %v: %d ns, Time %d", ctx, got, want)
		}
	}
}

// TestSchedulerStepsConfig: the engine times its steps with the setting,
// and it is refused where vLLM has no multi-step scheduling or where the
// model does not follow it.
func TestSchedulerStepsConfig(t *testing.T) {
	m, g := presetPair(t, "llama-3-8b", "h100-80g")
	base := DefaultConfig(m, g)
	base.Engine, base.EngineVersion, base.ChunkedPrefill = EngineVLLMV0, "0.6.0", false
	p, err := DefaultProfile(g.Name, EngineVLLMV0, "0.6.0")
	if err != nil {
		t.Fatal(err)
	}
	base.Profile = p
	reqs := make([]workload.Request, 8)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprint("r", i), PromptTokens: 200, OutputTokens: 100}
	}
	_, one := runEngine(t, base, reqs)
	multi := base
	multi.SchedulerSteps = 10
	_, ten := runEngine(t, multi, reqs)
	if !(ten.TPOT.P50 < one.TPOT.P50) || ten.OutputTokens != one.OutputTokens {
		t.Errorf("10 scheduler steps: TPOT p50 %v s and %d tokens, want below the single step's %v s, and the same %d tokens",
			ten.TPOT.P50, ten.OutputTokens, one.TPOT.P50, one.OutputTokens)
	}
	// The saving is the host's time of the decode steps, less a tenth: at
	// 8 sequences, 0.9 × (step_ns + 8 × per_seq_ns) a step.
	host := float64(p.Overhead.StepNs+8*p.Overhead.PerSeqNs) / 1e9
	if d := one.TPOT.P50 - ten.TPOT.P50; d < 0.8*host || d > host {
		t.Errorf("TPOT p50 saved %.3g s, want about 0.9 × %.3g s", d, host)
	}
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.SchedulerSteps = -1 }, "negative"},
		{func(c *Config) { c.Engine, c.EngineVersion, c.Profile = EngineVLLMV1, "", nil }, "vllm-v0 at 0.6.0"},
		{func(c *Config) { c.Engine, c.EngineVersion, c.Profile = EngineSGLang, "", nil }, "vllm-v0 at 0.6.0"},
		{func(c *Config) { c.EngineVersion, c.Profile = "0.5.4", nil }, "vllm-v0 at 0.6.0"},
		{func(c *Config) { c.ChunkedPrefill = true }, "chunked prefill"},
	} {
		cfg := multi
		c.mod(&cfg)
		_, err := New(cfg, reqs)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "scheduler steps") {
			t.Errorf("%+v: error %v, want ErrBadConfig naming scheduler steps and %q", cfg.SchedulerSteps, err, c.want)
		}
	}
	for _, n := range []int{0, 1} {
		cfg := base
		cfg.Engine, cfg.EngineVersion, cfg.Profile = EngineSGLang, "", nil
		cfg.SchedulerSteps = n
		if _, err := New(cfg, reqs); err != nil {
			t.Errorf("%d scheduler steps (off) on SGLang: %v", n, err)
		}
	}
}
