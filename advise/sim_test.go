package advise

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// smallSetup reads testdata/small_azure.csv (120 requests over a minute,
// prompts 200-3000 tokens) for llama-2-13b on an L40S: little KV memory
// left after the weights, so settings differ.
func smallSetup(t testing.TB, buckets []int) (sim.Config, *Workload) {
	t.Helper()
	return traceSetup(t, filepath.Join("testdata", "small_azure.csv"), 0, buckets, "llama-2-13b", "l40s-48g")
}

// traceSetup reads the trace at path (its first rows requests; 0: all)
// for the model preset on the GPU. It skips under every allocator
// self-check, which turns each second of simulation into minutes (the
// concurrency of Run is covered under -race by the fake evaluator's
// tests).
func traceSetup(t testing.TB, path string, rows int, buckets []int, modelName, gpu string) (sim.Config, *Workload) {
	t.Helper()
	if testkit.SlowBuild {
		t.Skip("simulates dozens of runs; too slow with every self-check on (-race, -tags invariants)")
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	tr, err := workload.Read(fh, filepath.Base(path), workload.Auto, workload.ReadOptions{MaxRows: rows})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorkload(tr, buckets)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Preset(modelName)
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	return sim.DefaultConfig(m, g), w
}

// With the real simulator: the same sweep with 1 and 3 workers gives the
// same report, the rates are rescalings of the trace, and a larger
// gpu_memory_utilization never sustains less on paged (more KV blocks).
func TestSimSweep(t *testing.T) {
	base, w := smallSetup(t, []int{0, 256})
	sp := Space{KVs: kvs("paged:16", "contiguous-grow"), Allocs: als("caching"),
		Utils: []float64{0.9, 0.8}, Buckets: []int{0, 256}, Defrags: []string{"off"}}
	cs, err := sp.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(base, cs); err != nil {
		t.Fatal(err)
	}
	s := DefaultSearch()
	s.StartRPS = w.NativeRPS
	s.BisectSteps = 3
	in := Inputs{Model: base.Model.Name, GPU: base.GPU.Name, TP: 1, SLO: DefaultSLO(), Search: s, Space: sp, Candidates: cs}
	var reps []string
	var last *Report
	for _, workers := range []int{1, 3} {
		rs, err := Run(cs, nil, SimEvaluator(base, w), Options{SLO: in.SLO, Search: s, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := NewReport(in, rs)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, reportJSON(t, rep))
		last = rep
	}
	if reps[0] != reps[1] {
		t.Fatalf("1 and 3 workers differ:\n%s\n---\n%s", reps[0], reps[1])
	}
	if last.Recommended == nil || last.Recommended.OOMs != 0 || last.Recommended.SustainableRPS <= 0 {
		t.Fatalf("no sound recommendation: %s", reps[0])
	}
	byS := map[settingsKey]Result{}
	for _, r := range last.Candidates {
		byS[r.Settings.key()] = r
		if r.Held && (r.Total != 120 || r.Completed+r.Rejected != 120) {
			t.Errorf("%s: %d of %d completed, %d rejected at the sustainable rate", r.Settings, r.Completed, r.Total, r.Rejected)
		}
		if r.Held && (r.TTFTP99 > in.SLO.TTFTP99 || r.TPOTP99 > in.SLO.TPOTP99) {
			t.Errorf("%s: held with TTFT %v TPOT %v", r.Settings, r.TTFTP99, r.TPOTP99)
		}
	}
	hi := byS[Settings{KV: kv("paged:16"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, Defrag: "off"}.key()]
	lo := byS[Settings{KV: kv("paged:16"), Alloc: al("caching"), GPUMemoryUtilization: 0.8, Defrag: "off"}.key()]
	if hi.SustainableRPS < lo.SustainableRPS {
		t.Errorf("paged:16 sustains %v rps at util 0.9 but %v at 0.8", hi.SustainableRPS, lo.SustainableRPS)
	}
}

// A length-only trace gets Poisson arrivals at 1 rps; a single request or
// a trace whose requests all arrive at once cannot be searched.
func TestNewWorkload(t *testing.T) {
	tr := &workload.Trace{Name: "x", Requests: []workload.Request{{PromptTokens: 10, OutputTokens: 5, N: 1}, {PromptTokens: 20, OutputTokens: 5, N: 1}, {PromptTokens: 30, OutputTokens: 5, N: 1}}}
	w, err := NewWorkload(tr, []int{0, 16})
	if err != nil {
		t.Fatal(err)
	}
	if w.NativeRPS <= 0 || w.Requests()[1].Arrival == 0 || tr.Requests[1].Arrival != 0 {
		t.Errorf("untimed trace: native %v, arrivals %v (input modified: %v)", w.NativeRPS, w.Requests()[1].Arrival, tr.Requests[1].Arrival)
	}
	b, err := w.at(16, 2)
	if err != nil || b[0].PromptTokens != 16 || b[2].PromptTokens != 32 || w.Requests()[0].PromptTokens != 10 {
		t.Errorf("bucket 16: %v %+v", err, b)
	}
	if _, err := w.at(7, 1); err == nil {
		t.Error("an unprepared bucket did not fail")
	}
	if _, err := NewWorkload(&workload.Trace{Name: "one", Requests: tr.Requests[:1]}, nil); err == nil {
		t.Error("one request did not fail")
	}
	same := &workload.Trace{Name: "burst", Timed: true, Requests: []workload.Request{{Arrival: 5, PromptTokens: 1, N: 1}, {Arrival: 5, PromptTokens: 1, N: 1}}}
	if _, err := NewWorkload(same, nil); err == nil {
		t.Error("simultaneous arrivals did not fail")
	}
}

// A candidate whose engine cannot be built (no memory left for KV at its
// utilization) is reported as not eligible with the engine's reason; a
// sweep where nothing can run fails up front.
func TestCannotRun(t *testing.T) {
	base, w := smallSetup(t, nil)
	sp := Space{KVs: kvs("paged:16"), Allocs: als("caching"), Utils: []float64{0.9, 0.3}, Buckets: []int{0}, Defrags: []string{"off"}}
	cs, err := sp.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(base, cs); err != nil {
		t.Fatalf("one candidate can run: %v", err)
	}
	s := Search{StartRPS: w.NativeRPS, BracketSteps: 5, BisectSteps: 1}
	rs, err := Run(cs, nil, SimEvaluator(base, w), Options{SLO: DefaultSLO(), Search: s, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := NewReport(Inputs{Candidates: cs}, rs)
	if err != nil {
		t.Fatal(err)
	}
	bad := rep.Candidates[1]
	if bad.Held || bad.Eligible || !strings.HasPrefix(bad.Evidence, "cannot run: ") || !strings.Contains(bad.Evidence, "no memory left for the KV cache") {
		t.Errorf("util 0.3: %+v", bad)
	}
	if rep.Recommended == nil || rep.Recommended.Index != 0 {
		t.Errorf("recommended %+v; candidates %+v", rep.Recommended, rep.Candidates)
	}
	sp.Utils = []float64{0.3}
	cs, _ = sp.Candidates()
	if err := Check(base, cs); err == nil || !strings.Contains(err.Error(), "no candidate can run") {
		t.Errorf("nothing can run: got %v", err)
	}
}

// Early stop (sim.Config.EarlyStop, as the CLI runs the search) changes no
// decision: on the default space with the contiguous families (stockSpace), every candidate's sustainable rate,
// eligibility and rank, the recommendation and the runner-up are those of
// whole runs, and a candidate that never held reports its lowest rate's
// whole figures (Options.Rerun).
func TestEarlyStopSameAdvice(t *testing.T) {
	base, w := smallSetup(t, []int{0, 256})
	sp := stockSpace()
	sp.PrefixCaching = sp.PrefixCaching[:1]
	cs, err := sp.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSearch()
	s.StartRPS, s.BisectSteps = w.NativeRPS, 2
	in := Inputs{SLO: DefaultSLO(), Search: s, Space: sp, Candidates: cs}
	report := func(eval, rerun Evaluator) *Report {
		rs, err := Run(cs, nil, eval, Options{SLO: in.SLO, Search: s, Rerun: rerun})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := NewReport(in, rs)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	stopping := base
	stopping.EarlyStop = sim.EarlyStop{OnFailure: true, TTFTP99: in.SLO.TTFTP99, TPOTP99: in.SLO.TPOTP99}
	whole := report(SimEvaluator(base, w), nil)
	var mu sync.Mutex
	stopped := 0
	counting := func(st Settings, rate float64) (Outcome, error) {
		o, err := SimEvaluator(stopping, w)(st, rate)
		if o.StoppedEarly != "" {
			mu.Lock()
			stopped++
			mu.Unlock()
		}
		return o, err
	}
	early := report(counting, SimEvaluator(base, w))
	if stopped == 0 {
		t.Fatal("no run stopped early: the comparison is vacuous")
	}
	held := 0
	for i, a := range whole.Candidates {
		b := early.Candidates[i]
		if a.SustainableRPS != b.SustainableRPS || a.Eligible != b.Eligible || a.Rank != b.Rank || a.Held != b.Held || a.FailedAtRPS != b.FailedAtRPS {
			t.Errorf("%s: whole %v rps (rank %d, failed at %v), early stop %v rps (rank %d, failed at %v)",
				a.Settings, a.SustainableRPS, a.Rank, a.FailedAtRPS, b.SustainableRPS, b.Rank, b.FailedAtRPS)
		}
		if a.Held {
			held++
			if a.Outcome != b.Outcome {
				t.Errorf("%s: the outcome at its sustainable rate differs", a.Settings)
			}
		} else if a.Outcome != b.Outcome || a.Binding != b.Binding || a.BestValue != b.BestValue {
			t.Errorf("%s held at no rate: whole %+v, early %+v", a.Settings, a.Outcome, b.Outcome)
		}
	}
	if whole.Recommended == nil || early.Recommended == nil || whole.Recommended.Index != early.Recommended.Index ||
		(whole.RunnerUp == nil) != (early.RunnerUp == nil) || (whole.RunnerUp != nil && whole.RunnerUp.Index != early.RunnerUp.Index) {
		t.Errorf("recommendation differs: whole %v, early %v", whole.Recommended, early.Recommended)
	}
	if held == 0 || held == len(cs) {
		t.Errorf("%d of %d candidates held: the sweep does not exercise both", held, len(cs))
	}
}

// azureSetup reads the shared Azure conversation trace (its first rows
// requests; 0: all) for llama-3.1-8b on an A100 80GB, the README's advise
// command; it skips without ../shared/data.
func azureSetup(t testing.TB, rows int) (sim.Config, *Workload) {
	t.Helper()
	path := filepath.Join("..", "..", "shared", "data", "traces", "AzureLLMInferenceTrace_conv.csv")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("the shared Azure trace is absent (%v): this needs ../shared/data beside the checkout", err)
	}
	return traceSetup(t, path, rows, []int{0, 256}, "llama-3.1-8b", "a100-80g")
}
