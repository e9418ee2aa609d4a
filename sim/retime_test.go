package sim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/workload"
)

// timingFields are the fields of a result that depend on the step times.
func timingFields(r Result) string {
	return fmt.Sprintf("ttft %v tpot %v itl %v e2e %v out/s %v span %v norm %v steps %d batch %v tokens %d done %d",
		r.TTFT, r.TPOT, r.ITL, r.E2E, r.OutputTokensPerS, r.SimulatedSeconds, r.NormalizedLatencyMean, r.Steps, r.BatchSizeMean,
		r.OutputTokens, r.RequestsCompleted)
}

// TestRetimeMatchesRun: a run recorded under one step-time model and
// retimed under another gives exactly what a run under the other gives,
// for each engine, a static batch, prefill-only requests, preemptions and a
// closed-loop client; a run with arrivals after 0 is refused.
func TestRetimeMatchesRun(t *testing.T) {
	m, g := presetPair(t, "llama-3-8b", "a100-40g")
	other, err := PriorProfile("a100-40g", EngineVLLMV1, "")
	if err != nil {
		t.Fatal(err)
	}
	other.Overhead.PerTokenNs, other.Overhead.StepNs, other.Attention.KVHalfContext = 90_000, 2_500_000, 300
	var reqs []workload.Request
	for i := range 40 {
		reqs = append(reqs, workload.Request{ID: fmt.Sprintf("r%d", i), PromptTokens: 50 + 97*i%900, OutputTokens: i % 7 * 40, N: 1})
	}
	for _, tc := range []struct {
		name   string
		engine EngineKind
		conc   int
		kvGiB  float64 // cap the memory so that requests preempt
		v055   bool    // vLLM 0.5.5 with chunked prefill (PrefillFirstRequeue)
	}{
		{"v1", EngineVLLMV1, 0, 0, false}, {"v0", EngineVLLMV0, 0, 0, false}, {"sglang", EngineSGLang, 0, 0, false},
		{"v1 closed loop", EngineVLLMV1, 6, 0, false}, {"v1 preempting", EngineVLLMV1, 0, 16.8, false},
		{"v0 0.5.5 chunked", EngineVLLMV0, 0, 0, true},
	} {
		cfg := DefaultConfig(m, g)
		cfg.Engine, cfg.MaxConcurrency = tc.engine, tc.conc
		cfg.ChunkedPrefill = tc.engine != EngineVLLMV0 || tc.v055
		version := ""
		if tc.v055 {
			version, cfg.MaxBatchTokens = "0.5.5", 512
		}
		cfg.EngineVersion = version
		if tc.kvGiB > 0 {
			cfg.GPUMemoryUtilization = tc.kvGiB / 39.6
		}
		mine, err := PriorProfile("a100-40g", tc.engine, version)
		if err != nil {
			t.Fatal(err)
		}
		o := other.Clone()
		o.Engine, o.EngineVersion, o.CUDAGraph = tc.engine, mine.EngineVersion, mine.CUDAGraph
		for _, recordUnder := range []*Profile{nil, mine} {
			c := cfg
			c.Profile = recordUnder
			rc, err := Record(c, reqs)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if tc.kvGiB > 0 && rc.Result().Preemptions == 0 {
				t.Errorf("%s: no preemption", tc.name)
			}
			for _, p := range []*Profile{o, nil, mine} {
				got, err := rc.Retime(p)
				if overlap := p != nil && p.Overhead.ScheduleOverlap; tc.conc > 1 && overlap != (recordUnder != nil && recordUnder.Overhead.ScheduleOverlap) {
					// Schedule overlap admits the client's requests a step
					// later: another schedule, refused.
					if !errors.Is(err, ErrTimeDependent) {
						t.Errorf("%s, recorded under overlap %v, retimed under %v: err %v, want ErrTimeDependent", tc.name, !overlap, overlap, err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				c.Profile = p
				e, want := runEngine(t, c, reqs)
				_ = e
				if timingFields(got) != timingFields(want) {
					t.Errorf("%s, recorded under %v, retimed under %v:\n got %s\nwant %s", tc.name, recordUnder != nil, p != nil,
						timingFields(got), timingFields(want))
				}
			}
		}
	}
	// Arrivals after 0, open loop: exact under the recorded profile (idle
	// waits included), refused under a client's cap.
	late := append([]workload.Request(nil), reqs...)
	for i := range late {
		late[i].Arrival = int64(i) * 700_000_000
	}
	for _, p := range []*Profile{nil, other} {
		c := DefaultConfig(m, g)
		c.Profile = p
		rc, err := Record(c, late)
		if err != nil || !rc.Timed() {
			t.Fatalf("timed: %v", err)
		}
		got, _ := rc.Retime(p)
		_, want := runEngine(t, c, late)
		if timingFields(got) != timingFields(want) {
			t.Errorf("timed, retimed under the recorded profile:\n got %s\nwant %s", timingFields(got), timingFields(want))
		}
	}
	c := DefaultConfig(m, g)
	c.MaxConcurrency = 4
	if _, err := Record(c, late); !errors.Is(err, ErrTimeDependent) {
		t.Errorf("arrivals after 0 under a cap: %v", err)
	}
}

// TestScheduleOverlapAdmission: under a profile with schedule overlap, a
// request that arrives while a step runs misses the step prepared during
// it and gets its first token one step later than without; one that
// arrives at an idle engine is served at once either way; and a capped
// client's next request, sent when a slot frees, is held alike.
func TestScheduleOverlapAdmission(t *testing.T) {
	m, g := presetPair(t, "llama-3-8b", "a100-40g")
	async, err := PriorProfile("a100-40g", EngineVLLMV1, "")
	if err != nil {
		t.Fatal(err)
	}
	if !async.Overhead.ScheduleOverlap {
		t.Fatal("the default V1 release has no schedule overlap")
	}
	sync := async.Clone()
	sync.Overhead.ScheduleOverlap = false
	firstStep := func(p *Profile, reqs []workload.Request, conc int) []int32 {
		cfg := DefaultConfig(m, g)
		cfg.Profile, cfg.MaxConcurrency = p, conc
		rc, err := Record(cfg, reqs)
		if err != nil {
			t.Fatal(err)
		}
		return rc.first
	}
	busy := []workload.Request{
		{ID: "a", PromptTokens: 100, OutputTokens: 50, N: 1},
		{ID: "b", PromptTokens: 100, OutputTokens: 5, N: 1, Arrival: 1}, // during a's first step
	}
	s, a := firstStep(sync, busy, 0), firstStep(async, busy, 0)
	if s[0] != a[0] || a[1] != s[1]+1 {
		t.Errorf("busy engine: first tokens at steps %v without overlap, %v with: want b's one step later", s, a)
	}
	idle := []workload.Request{
		{ID: "a", PromptTokens: 100, OutputTokens: 2, N: 1},
		{ID: "b", PromptTokens: 100, OutputTokens: 5, N: 1, Arrival: int64(time.Second)}, // long after a ends
	}
	if s, a := firstStep(sync, idle, 0), firstStep(async, idle, 0); s[1] != a[1] {
		t.Errorf("idle engine: b's first token at step %d without overlap, %d with: want the same", s[1], a[1])
	}
	// A closed loop of 2: c is sent when a ends, while b runs.
	var closed []workload.Request
	for i, out := range []int{3, 40, 5} {
		closed = append(closed, workload.Request{ID: fmt.Sprintf("r%d", i), PromptTokens: 100, OutputTokens: out, N: 1})
	}
	s, a = firstStep(sync, closed, 2), firstStep(async, closed, 2)
	if a[2] != s[2]+1 {
		t.Errorf("closed loop: the third request's first token at step %d without overlap, %d with: want one step later", s[2], a[2])
	}
}
