package calib

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// setup70B is the surajssd runs' setup: Llama-3.3-70B (the architecture
// of the llama-3.1-70b preset) at TP 8 on A100-SXM4-40GB.
func setup70B(t testing.TB) ReplaySetup {
	t.Helper()
	m, err := model.Preset("llama-3.1-70b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.LookupGPU("a100-40g")
	if err != nil {
		t.Fatal(err)
	}
	return NewReplaySetup(m, g, 8)
}

// skipHeavy skips a test that runs whole calibrations (hundreds of
// replays) when the allocators' and block pool's self-checks are on (-race
// or -tags invariants), which check after every operation and turn its
// seconds into many minutes; TestCalibrateParallel keeps a small
// calibration under the race detector.
func skipHeavy(t *testing.T) {
	t.Helper()
	if testkit.SlowBuild {
		t.Skip("hundreds of replays; too slow with every self-check on (-race, -tags invariants)")
	}
}

func calibrate(t testing.TB, fit, holdout []*File, o FitOptions) *FitReport {
	t.Helper()
	rep, err := Calibrate(context.Background(), fit, holdout, o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func profileYAML(t testing.TB, p *sim.Profile) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := p.WriteYAML(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkReproduces is the check: simulate the file with the written
// profile (read back from its YAML, in a config built here as gpufrag
// simulate builds one, not through calib) and every fitted median is
// within the error calibrate reported for it, and within the overall
// maximum it printed.
func checkReproduces(t *testing.T, rep *FitReport, f *File, s ReplaySetup) {
	t.Helper()
	p, err := sim.LoadProfile(bytes.NewReader(profileYAML(t, rep.Profile)), "fitted.yaml")
	if err != nil {
		t.Fatalf("the written profile does not load: %v", err)
	}
	for _, run := range f.Runs {
		tr, err := run.Trace()
		if err != nil {
			t.Fatal(err)
		}
		var rr *RunReport
		for i := range rep.Runs {
			if rep.Runs[i].File == f.Name && rep.Runs[i].Run == run.Run {
				rr = &rep.Runs[i]
			}
		}
		if rr == nil {
			t.Fatalf("%s run %d is not in the report", f.Name, run.Run)
		}
		// As simulate --trace FILE --format vllm-bench --profile P runs it
		// (with --warm-prompts for a run calibrate replayed warm).
		res := *simulateAs(t, s, p, tr, rr.WarmPrompts)
		checked := 0
		for _, mr := range rr.Metrics {
			if !mr.Fitted {
				continue
			}
			v, _ := simulated(&res, mr.Metric)
			got := math.Abs(v / *mr.Measured - 1)
			if got > math.Abs(*mr.AfterErr)+1e-9 || got > rep.Errors.AfterMax+1e-9 {
				t.Errorf("%s %v: simulated with the written profile %.6g, measured %.6g: error %.2f%%, calibrate printed %.2f%% (max %.2f%%)",
					f.Name, mr.Metric, v, *mr.Measured, 100*got, 100*math.Abs(*mr.AfterErr), 100*rep.Errors.AfterMax)
			}
			checked++
		}
		if checked == 0 {
			t.Errorf("%s run %d: no fitted metric to check", f.Name, run.Run)
		}
	}
}

// simulateAs replays tr under profile p as gpufrag simulate --trace FILE
// --format vllm-bench --profile P runs it (--warm-prompts when warm), in a
// config built here, not through calib.
func simulateAs(t *testing.T, s ReplaySetup, p *sim.Profile, tr *workload.Trace, warm bool) *sim.Result {
	t.Helper()
	cfg := sim.DefaultConfig(s.Model, s.GPU)
	cfg.TP, cfg.Profile, cfg.Engine = s.TP, p, p.Engine
	cfg.MaxConcurrency = tr.MaxConcurrency
	cfg.WarmPrompts = warm
	e, err := sim.New(cfg, tr.Requests)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	return &res
}

// TestCalibrateFixture calibrates on the 6-request cut of the surajssd
// qps 1 run (the no-data case of the check), then simulates it with
// the written profile: the medians are reproduced within the printed fit
// error; the fit improves the objective and is deterministic, whatever
// the parallelism.
func TestCalibrateFixture(t *testing.T) {
	longtest.Skip(t)
	skipHeavy(t)
	f := readFile(t, benchFixture("vllm_bench_qps1_cut.json"))
	s := setup70B(t)
	rep := calibrate(t, []*File{f}, nil, FitOptions{Setup: s, Workers: 1})
	if !(rep.Fit.ObjectiveAfter < rep.Fit.ObjectiveBefore) {
		t.Errorf("the fit did not improve: %v → %v", rep.Fit.ObjectiveBefore, rep.Fit.ObjectiveAfter)
	}
	fitted := 0
	for _, p := range rep.Params {
		if p.Fitted {
			fitted++
		}
	}
	if fitted == 0 || fitted >= rep.Fit.Residuals {
		t.Errorf("%d parameters fitted to %d metrics", fitted, rep.Fit.Residuals)
	}
	checkReproduces(t, rep, f, s)
	if got := rep.Profile.FittedTo; len(got) != 1 || got[0] != "vllm_bench_qps1_cut.json@sha256:"+f.SHA256[:12] {
		t.Errorf("fitted_to %q", got)
	}
	if !strings.Contains(rep.Profile.Notes, "Fitted by gpufrag calibrate") {
		t.Errorf("notes %q", rep.Profile.Notes)
	}
	again := calibrate(t, []*File{readFile(t, benchFixture("vllm_bench_qps1_cut.json"))}, nil, FitOptions{Setup: s, Workers: 4})
	if a, b := profileYAML(t, rep.Profile), profileYAML(t, again.Profile); !bytes.Equal(a, b) {
		t.Errorf("the same file gave different profiles:\n%s\n---\n%s", a, b)
	}
	ja, _ := json.Marshal(rep)
	jb, _ := json.Marshal(again)
	if !bytes.Equal(ja, jb) {
		t.Error("the same file gave different reports")
	}
}

// TestCalibrateShared fits the shared surajssd qps 16 run and holds the
// fit to the check: simulating the run with the written profile
// (warm where calibrate replayed it warm) reproduces its medians within
// the printed errors. The three runs sent the same prompts in the order
// qps 1, 16, inf: by default qps 16 and inf are replayed warm and judged;
// replayed cold (WarmNone), inf's first tokens beat any prefill, so it is
// reported and not judged.
func TestCalibrateShared(t *testing.T) {
	longtest.Skip(t)
	skipHeavy(t)
	f01 := readFile(t, sharedBench(t, surajssd("01")))
	f16 := readFile(t, sharedBench(t, surajssd("16")))
	fInf := readFile(t, sharedBench(t, surajssd("inf")))
	s := setup70B(t)
	rep := calibrate(t, []*File{f16}, []*File{fInf}, FitOptions{Setup: s, Warm: WarmNone})
	checkReproduces(t, rep, f16, s)
	if !(rep.Fit.ObjectiveAfter < rep.Fit.ObjectiveBefore) {
		t.Errorf("objective %.4g after, %.4g before", rep.Fit.ObjectiveAfter, rep.Fit.ObjectiveBefore)
	}
	inf := rep.Runs[1]
	if !strings.Contains(inf.Excluded, "prefix cache") || rep.Holdout != nil || inf.WarmPrompts {
		t.Errorf("qps inf cold: excluded %q, warm %v, holdout summary %+v", inf.Excluded, inf.WarmPrompts, rep.Holdout)
	}

	auto := calibrate(t, []*File{f16}, []*File{f01, fInf}, FitOptions{Setup: s})
	checkReproduces(t, auto, f16, s)
	if r16, r01, rInf := auto.Runs[0], auto.Runs[1], auto.Runs[2]; !r16.WarmPrompts || r01.WarmPrompts || !rInf.WarmPrompts || rInf.Excluded != "" || auto.Holdout == nil {
		t.Fatalf("auto: warm qps 16 %v, qps 1 %v, qps inf %v (excluded %q), holdout %+v",
			r16.WarmPrompts, r01.WarmPrompts, rInf.WarmPrompts, rInf.Excluded, auto.Holdout)
	}
	// Warm, the held-out inf run's TTFT is far nearer than cold (+500% and more).
	for _, m := range auto.Runs[2].Metrics {
		if m.Metric == MedianTTFT && (m.AfterErr == nil || math.Abs(*m.AfterErr) > 1) {
			t.Errorf("qps inf warm: median TTFT error %v", m.AfterErr)
		}
	}
	if !slices.ContainsFunc(auto.AllWarnings(), func(w string) bool { return strings.Contains(w, "replayed with its prompts in the prefix cache") }) {
		t.Errorf("no warning says why qps inf is warm: %q", auto.AllWarnings())
	}
}

// TestCalibrateHoldout: held-out runs are replayed with both profiles and
// summarised apart, never in the objective, and the profile's fitted_to
// names only the fitted file.
func TestCalibrateHoldout(t *testing.T) {
	skipHeavy(t)
	fit := readFile(t, benchFixture("vllm_bench_qps1_cut.json"))
	held := readFile(t, benchFixture("vllm_bench_qpsinf_cut.json"))
	rep := calibrate(t, []*File{fit}, []*File{held}, FitOptions{Setup: setup70B(t)})
	if rep.Holdout == nil || rep.Holdout.Metrics == 0 {
		t.Fatalf("no held-out summary: %+v", rep.Holdout)
	}
	for _, mr := range rep.Runs[1].Metrics {
		if mr.Fitted {
			t.Errorf("held-out %v was fitted", mr.Metric)
		}
	}
	if len(rep.FittedTo) != 1 || !strings.HasPrefix(rep.FittedTo[0], "vllm_bench_qps1_cut.json@") {
		t.Errorf("fitted_to %q", rep.FittedTo)
	}
}

// TestCalibrateParallel runs a small calibration (a few evaluations) with
// the runs replayed on four workers, under -race too: the replays share
// only read-only inputs, and the result is the one of a single worker.
func TestCalibrateParallel(t *testing.T) {
	files := []*File{readFile(t, benchFixture("vllm_bench_qps1_cut.json")), readFile(t, benchFixture("vllm_bench_detailed_synthetic.json"))}
	m, _ := model.Preset("llama-3.1-8b")
	g, _ := model.LookupGPU("h100-80g")
	o := FitOptions{Setup: NewReplaySetup(m, g, 1), MaxEvals: 6, Params: []string{"overhead.step_ns"}}
	o.Setup.EngineGiven = true
	o.Workers = 4
	par := calibrate(t, files, nil, o)
	o.Workers = 1
	one := calibrate(t, files, nil, o)
	if a, b := profileYAML(t, par.Profile), profileYAML(t, one.Profile); !bytes.Equal(a, b) {
		t.Errorf("4 workers and 1 gave different profiles:\n%s\n---\n%s", a, b)
	}
}

// TestCalibrateCap: a fit stopped at its evaluation cap says so, in the
// report and the profile's notes.
func TestCalibrateCap(t *testing.T) {
	f := readFile(t, benchFixture("vllm_bench_qps1_cut.json"))
	rep := calibrate(t, []*File{f}, nil, FitOptions{Setup: setup70B(t), MaxEvals: 4, Params: []string{"overhead.step_ns", "linear.weight_bw_eff"}})
	if !rep.Fit.StoppedAtCap || rep.Fit.Evaluations > 4 {
		t.Errorf("fit %+v, want stopped at the cap of 4", rep.Fit)
	}
	if !strings.Contains(rep.Profile.Notes, "stopped at the cap of 4") {
		t.Errorf("notes %q", rep.Profile.Notes)
	}
}

// TestCalibrateParams: --params fits exactly the named parameters, and
// warns when the runs do not pin one.
func TestCalibrateParams(t *testing.T) {
	skipHeavy(t)
	f := readFile(t, benchFixture("vllm_bench_qps1_cut.json"))
	// At 1 request/s every step holds one or two sequences: the step and
	// per-sequence overheads are one constant per step.
	rep := calibrate(t, []*File{f}, nil, FitOptions{Setup: setup70B(t), Params: []string{"overhead.step_ns", "overhead.per_seq_ns"}})
	for _, p := range rep.Params {
		want := p.Name == "overhead.step_ns" || p.Name == "overhead.per_seq_ns"
		if p.Fitted != want {
			t.Errorf("%s fitted %v", p.Name, p.Fitted)
		}
		if !want && p.Reason != "not asked for (--params)" {
			t.Errorf("%s: reason %q", p.Name, p.Reason)
		}
	}
	// Fitted together, the runs cannot pin them.
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w, "overhead.per_seq_ns is fitted as --params asks, but")
	}
	if !found {
		t.Errorf("no warning about the unpinned parameter: %q; %+v", rep.Warnings, rep.Params)
	}
}

// TestCalibrateHostExcludesStep: with the host's speed fitted, the step's
// fixed cost, which it sets, is not fitted apart (both would move one
// field), even when --params names both.
func TestCalibrateHostExcludesStep(t *testing.T) {
	f := readFile(t, benchFixture("vllm_bench_qps1_cut.json"))
	rep := calibrate(t, []*File{f}, nil, FitOptions{Setup: setup70B(t), MaxEvals: 4, Params: []string{hostParam, "overhead.step_ns"}})
	// The costs it scales are reported as moved with it, not kept.
	var host, seq ParamReport
	for _, p := range rep.Params {
		switch p.Name {
		case hostParam:
			host = p
		case "overhead.per_seq_ns":
			seq = p
		}
	}
	if host.After == host.Before {
		t.Fatalf("the host's speed did not move in 4 evaluations: %+v", host)
	}
	if r, want := seq.After/seq.Before, host.After/host.Before; math.Abs(r/want-1) > 1e-3 || !strings.Contains(seq.Reason, "scaled with "+hostParam) {
		t.Errorf("per_seq_ns %v → %v (×%.4f), reason %q; want ×%.4f, scaled with %s", seq.Before, seq.After, r, seq.Reason, want, hostParam)
	}
	if n := rep.Profile.Notes; !strings.Contains(n, "Scaled with "+hostParam) || strings.Contains(n, "Kept from the start: overhead.per_seq_ns") {
		t.Errorf("notes %q: want the scaled costs named as such", n)
	}
	for _, p := range rep.Params {
		switch p.Name {
		case hostParam:
			if !p.Fitted {
				t.Errorf("%s not fitted: %q", p.Name, p.Reason)
			}
		case "overhead.step_ns":
			if p.Fitted || !strings.Contains(p.Reason, "set by "+hostParam) {
				t.Errorf("%s fitted %v, reason %q; want left to %s", p.Name, p.Fitted, p.Reason, hostParam)
			}
		}
	}
}

// TestClosedLoop: a run with max_concurrency is replayed under the same
// cap (sim.Config.MaxConcurrency), which changes what it measures.
func TestClosedLoop(t *testing.T) {
	f := readFile(t, benchFixture("vllm_bench_detailed_synthetic.json"))
	m, _ := model.Preset("llama-3.1-8b")
	g, _ := model.LookupGPU("h100-80g")
	s := NewReplaySetup(m, g, 1)
	p, _ := sim.DefaultProfile("h100-80g", sim.EngineVLLMV1, "")
	if got := s.ReplayConfig(p, f.Runs[0]).MaxConcurrency; got != 2 {
		t.Fatalf("replayed with max concurrency %d, want the file's 2", got)
	}
	rep := calibrate(t, []*File{f}, nil, FitOptions{Setup: s})
	if rep.Runs[0].MaxConcurrency != 2 {
		t.Errorf("report: max concurrency %d", rep.Runs[0].MaxConcurrency)
	}
	// Sent all at once, the cap is what spaces the five requests out: the
	// replay's config carries it into the engine.
	c, _ := newCase(f, f.Runs[0], false, 1)
	reqs := append([]workload.Request(nil), c.Requests...)
	for i := range reqs {
		reqs[i].Arrival = 0
	}
	run := func(cfg sim.Config) sim.Result {
		e, err := sim.New(cfg, reqs)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// (Latencies count from the send, as the client's do, so the capped
	// requests' own latencies are shorter; the run as a whole is longer.)
	if open, capped := run(s.config(p, 0)), run(s.ReplayConfig(p, f.Runs[0])); !(capped.SimulatedSeconds > open.SimulatedSeconds) {
		t.Errorf("the cap did not space the requests out: %v s open, %v s capped", open.SimulatedSeconds, capped.SimulatedSeconds)
	}
}

// TestVariants: a run with drawn arrivals gets other draws to measure the
// noise over; a run sent all at once, whose trace no seed changes, does
// not.
func TestVariants(t *testing.T) {
	poisson := readFile(t, benchFixture("vllm_bench_qps1_cut.json"))
	c, err := newCase(poisson, poisson.Runs[0], false, noiseVariants)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Variants) != noiseVariants || sameTimesAndLengths(c.Variants[0], c.Variants[1]) {
		t.Errorf("Poisson run: %d variants", len(c.Variants))
	}
	inf := readFile(t, benchFixture("vllm_bench_qpsinf_cut.json"))
	c, err = newCase(inf, inf.Runs[0], false, noiseVariants)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Variants) != 1 {
		t.Errorf("rate inf: %d variants, want 1", len(c.Variants))
	}
}

// TestCheckPrefill: 100 prompts of 1,000 tokens whose first tokens all
// came within 10 ms need 100 × 1,000 × 2 × 7e9 FLOPs ≈ 1.4e15 in 0.01 s,
// 140 times an H100's 989 TFLOP/s: the run is excluded. The same run at
// 5 s a first token fits easily and is kept.
func TestCheckPrefill(t *testing.T) {
	m, _ := model.Preset("llama-3.1-8b")
	shape := sim.NewShape(m, 1, model.BF16)
	mk := func(ttft float64) *Case {
		r := &workload.BenchResult{File: "x.json", Run: 1, Runs: 1, RequestRate: math.Inf(1),
			Detail: workload.DetailLens | workload.DetailTTFTs}
		for range 100 {
			r.Requests = append(r.Requests, workload.BenchRequest{InputTokens: 1000, OutputTokens: 10, TTFT: ttft})
		}
		return &Case{File: &File{Name: "x.json"}, Run: r}
	}
	c := mk(0.01)
	c.checkPrefill(shape, 989e12)
	if !strings.Contains(c.Excluded, "prefix cache") || !strings.Contains(c.Excluded, "100 requests") {
		t.Errorf("excluded %q", c.Excluded)
	}
	c = mk(5)
	c.checkPrefill(shape, 989e12)
	if c.Excluded != "" {
		t.Errorf("a plausible run was excluded: %q", c.Excluded)
	}
	// Drawn Poisson arrivals are not the client's: not checked.
	c = mk(0.01)
	c.Run.RequestRate = 4
	c.checkPrefill(shape, 989e12)
	if c.Excluded != "" {
		t.Errorf("a Poisson run was checked: %q", c.Excluded)
	}
}

// TestSetupErrors: what cannot be calibrated is refused with what is
// wrong and how to fix it.
func TestSetupErrors(t *testing.T) {
	s := setup70B(t)
	cut := readFile(t, benchFixture("vllm_bench_qps1_cut.json"))
	sgl := readFile(t, benchFixture("sglang_bench_online.jsonl"))
	noRate := &File{Name: "norate.json", SHA256: strings.Repeat("0", 64)}
	runs, err := workload.ReadBench(strings.NewReader(`{"backend": "vllm", "num_prompts": 2, "input_lens": [10, 20], "output_lens": [5, 5], "ttfts": [0.1, 0.1], "itls": [[0.01], [0.01]]}`), "norate.json")
	if err != nil {
		t.Fatal(err)
	}
	noRate.Runs = runs
	otherGPU, _ := sim.DefaultProfile("h100-80g", sim.EngineVLLMV1, "")
	tests := []struct {
		name    string
		fit     []*File
		holdout []*File
		o       FitOptions
		want    []string
	}{
		{"no files", nil, nil, FitOptions{Setup: s}, []string{"no benchmark files"}},
		{"same file twice", []*File{cut}, []*File{cut}, FitOptions{Setup: s}, []string{"same contents", "give each file once"}},
		{"no rate", []*File{noRate}, nil, FitOptions{Setup: s}, []string{"norate.json", "request_rate", "missing", "--skip-bad-runs"}},
		{"no lengths", []*File{sgl}, nil, FitOptions{Setup: s}, []string{"run 6 of 7", "input_lens", "--output-details"}},
		{"two engines", []*File{cut, sgl}, nil, FitOptions{Setup: s, SkipBadRuns: true}, []string{"one engine", "--engine"}},
		{"start for another GPU", []*File{cut}, nil, FitOptions{Setup: s, Start: otherGPU, StartName: "h100.yaml"}, []string{"h100.yaml", "h100-80g", "a100-40g"}},
		{"unknown parameter", []*File{cut}, nil, FitOptions{Setup: s, Params: []string{"peak.bf16_flops_per_s"}}, []string{"peak.bf16_flops_per_s", "want one of"}},
		{"bad cap", []*File{cut}, nil, FitOptions{Setup: s, MaxEvals: -1}, []string{"max evaluations"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Calibrate(context.Background(), tt.fit, tt.holdout, tt.o)
			if !errors.Is(err, ErrSetup) {
				t.Fatalf("err = %v, want ErrSetup", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestSkipBadRuns: with SkipBadRuns the SGLang file's two runs without
// lengths are skipped, each reported, and the other five are fitted.
func TestSkipBadRuns(t *testing.T) {
	sgl := readFile(t, benchFixture("sglang_bench_online.jsonl"))
	m, _ := model.Preset("llama-3.1-70b")
	g, _ := model.LookupGPU("h200-141g")
	f, err := newFitter([]*File{sgl}, nil, FitOptions{Setup: NewReplaySetup(m, g, 4), SkipBadRuns: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.cases) != 5 || len(f.warns) != 2 || !strings.Contains(f.warns[0], "skipped") || !strings.Contains(f.warns[0], "run 6 of 7") {
		t.Errorf("%d cases, warnings %q", len(f.cases), f.warns)
	}
	if f.o.Setup.Engine != sim.EngineSGLang {
		t.Errorf("engine %v, want sglang from the harness", f.o.Setup.Engine)
	}
}

// TestFileID: the base name and 12 hex digits of the SHA-256 of the whole
// file (the text after the JSON object included), control characters
// replaced, long names cut to fit sim.Profile's 256-byte ids.
func TestFileID(t *testing.T) {
	text := `{"backend": "vllm", "request_rate": 1.0}` + "\n\n"
	f, err := ReadFile(strings.NewReader(text), "dir/a\tb.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(text))
	if got, want := f.ID(), "a_b.json@sha256:"+hex.EncodeToString(sum[:])[:12]; got != want {
		t.Errorf("ID %q, want %q", got, want)
	}
	long := &File{Name: strings.Repeat("x", 300), SHA256: f.SHA256}
	if got := long.ID(); len(got) > 256 {
		t.Errorf("ID of %d bytes", len(got))
	}
}

// TestReplaySGLangMaxTokens: a calibration replays a benchmark client, which
// asks for each request's output as max_tokens, so SGLang's admission must
// reserve the output, not the context's room (with the context's room, a
// 16 req/s datacrunch run queued 24.7 s where 0.6 s was measured); the
// other engines' replays keep the setup's limit.
func TestReplaySGLangMaxTokens(t *testing.T) {
	m, err := model.Preset("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.LookupGPU("h100-80g")
	if err != nil {
		t.Fatal(err)
	}
	s := NewReplaySetup(m, g, 1)
	for _, eng := range []sim.EngineKind{sim.EngineVLLMV1, sim.EngineVLLMV0, sim.EngineSGLang} {
		s.Config.Engine = eng
		if got, want := s.config(nil, 0).MaxTokensIsOutput, eng == sim.EngineSGLang; got != want {
			t.Errorf("engine %v: replay's MaxTokensIsOutput = %v, want %v", eng, got, want)
		}
	}
}

// TestFidelityBenchSGLangMaxTokens: the page replays a benchmark file as
// calibrate's replay and gpufrag simulate run it (sim.Config.ForBenchClient):
// under SGLang every request asks for its output as max_tokens, whatever
// the dataset (ShareGPT here, whose lengths the file keeps); under vLLM
// only a random dataset's replay sets it.
func TestFidelityBenchSGLangMaxTokens(t *testing.T) {
	fig := publishedFigure(t)
	for _, tc := range []struct {
		engine, version string
		want            bool
	}{{"sglang", "0.4.0", true}, {"", "", false}} {
		f := *fig("dstack-h100-405b-fp8-tp8-b512-s256-qps16-ttft-median")
		if tc.engine != "" {
			f.Setup.Engine, f.Setup.EngineVersion = tc.engine, tc.version
		}
		p, err := fidTranslate(&f, fidOpenFixture, map[string][]*workload.BenchResult{})
		if err != nil || p.skip != "" || p.sim == nil {
			t.Fatalf("%s: %+v, %v", f.Setup.Engine, p, err)
		}
		if c := p.sim.cfg; c.MaxTokensIsOutput != tc.want || (tc.engine != "") != (c.Engine == sim.EngineSGLang) {
			t.Errorf("engine %v: MaxTokensIsOutput %v, want %v", c.Engine, c.MaxTokensIsOutput, tc.want)
		}
	}
}

// TestFidelityUnquantized: the page replays a figure whose setup names
// the modules its checkpoint keeps in 16 bits with them (dstack's 405B:
// 487 GB of weights, 61 GB a GPU at TP 8, against 51 GB were every weight
// FP8), and without them when the setup names none.
func TestFidelityUnquantized(t *testing.T) {
	fig := publishedFigure(t)
	f := *fig("dstack-h100-405b-fp8-tp8-b512-s256-qps16-ttft-median")
	weights := func(f *Figure) float64 {
		p, err := fidTranslate(f, fidOpenFixture, map[string][]*workload.BenchResult{})
		if err != nil || p.skip != "" || p.sim == nil {
			t.Fatalf("%+v, %v", p, err)
		}
		c := p.sim.cfg
		m := c.RunModel()
		return float64(m.WeightBytes(c.TP)) / 1e9
	}
	if got := weights(&f); got < 60 || got > 62 {
		t.Errorf("with the setup's unquantized %q: %.1f GB of weights a GPU, want about 61", f.Setup.Unquantized, got)
	}
	f.Setup.Unquantized = ""
	if got := weights(&f); got < 50.5 || got > 52 {
		t.Errorf("without: %.1f GB of weights a GPU, want about 51", got)
	}
}

// TestFidelityNoTextTTFT: a replayed file whose successful requests
// include some that returned no text (dstack's: 379 of 1,000; Lambda's
// 70B: 2 of 10) has its TTFT simulated as the client takes it, over a 0
// for each of them, in the one simulation its other figures share; and
// where they are 30% or more of its requests (fidNoTextShareMax) such a
// TTFT cannot be judged (fit or holdout).
func TestFidelityNoTextTTFT(t *testing.T) {
	fig := publishedFigure(t)
	files := map[string][]*workload.BenchResult{}
	plan := func(f *Figure) *fidPlan {
		t.Helper()
		p, err := fidTranslate(f, fidOpenFixture, files)
		if err != nil || p.skip != "" || p.sim == nil {
			t.Fatalf("%s: %+v, %v", f.ID, p, err)
		}
		return p
	}
	ttft := fig("dstack-h100-405b-fp8-tp8-b512-s256-qps16-ttft-median")
	tp := plan(ttft)
	tpot := plan(fig("dstack-h100-405b-fp8-tp8-b512-s256-qps16-tpot-median"))
	if !tp.sim.cfg.RequestTimes || tp.sim.key != tpot.sim.key {
		t.Errorf("RequestTimes %v, keys %q and %q: want request times in one shared simulation", tp.sim.cfg.RequestTimes, tp.sim.key, tpot.sim.key)
	}
	if recordable(tp.sim.cfg, nil) || recordableTimed(tp.sim.cfg) {
		t.Error("a run that keeps its request times is recorded: a retiming keeps none")
	}
	if !strings.Contains(tp.note, "the 379 requests that returned no text enter at a TTFT of 0") {
		t.Errorf("note %q: want the 379 zeros named", tp.note)
	}
	// 621 first tokens at 1 s and 379 zeros: the median is the client's 1 s
	// (in ms); 400 zeros more would make it 0, which is no figure.
	res := &sim.Result{TTFT: sim.Latency{P50: 7}}
	for range 621 {
		res.RequestTimes = append(res.RequestTimes, sim.RequestTime{Output: 5, TTFT: 1, HasTTFT: true})
	}
	if v, ok := tp.pick(res); !ok || v != 1000 {
		t.Errorf("client median %v, %v; want 1000 ms", v, ok)
	}
	if v, ok := tpot.pick(&sim.Result{TPOT: sim.Latency{P50: 0.1}}); !ok || math.Abs(v-100) > 1e-9 {
		t.Errorf("TPOT %v, %v: want the simulation's own 100 ms", v, ok)
	}
	for _, use := range []string{"holdout", "fit"} {
		f := *ttft
		f.Use = use
		if _, err := fidTranslate(&f, fidOpenFixture, files); err == nil || !strings.Contains(err.Error(), "379 of its file's 1000 successful requests returned no text") {
			t.Errorf("use %s: %v, want the figure refused", use, err)
		}
	}
	// Lambda's Llama-3-70B on 8 H100s: 2 of its 10 requests returned no
	// text, under fidNoTextShareMax, so its TTFT stays a fitted figure,
	// taken the client's way.
	lp := plan(fig("lambda-p10-8xh100-meta-llama-3-70b-instruct-tp8-len2048-ttft-median"))
	if !lp.sim.cfg.RequestTimes || !strings.Contains(lp.note, "the 2 requests that returned no text enter at a TTFT of 0") {
		t.Errorf("Lambda 70B: RequestTimes %v, note %q: want the 2 zeros counted", lp.sim.cfg.RequestTimes, lp.note)
	}
	res = &sim.Result{}
	for _, v := range []float64{1, 2, 3, 4, 5, 6, 7, 8} {
		res.RequestTimes = append(res.RequestTimes, sim.RequestTime{Output: 5, TTFT: v, HasTTFT: true})
	}
	if v, ok := lp.pick(res); !ok || math.Abs(v-3500) > 1e-9 { // 0 0 1 2 3 4 5 6 7 8: (3 + 4) ÷ 2 s
		t.Errorf("Lambda 70B client median %v, %v; want 3500 ms", v, ok)
	}
}

// TestCalibrateJudgesExpected: a held-out run whose arrivals the client
// drew is judged on the geometric mean of judgeDraws draws of them, each
// replayed here as simulate --profile --arrival-seed S replays it (the
// written profile read back, the trace read by workload with
// ReadOptions.ArrivalSeed, not through calib's variants); the fitted run
// keeps the single draw the objective saw.
func TestCalibrateJudgesExpected(t *testing.T) {
	skipHeavy(t)
	fitPath := benchFixture("vllm_bench_qps1_cut.json")
	raw, err := os.ReadFile(fitPath)
	if err != nil {
		t.Fatal(err)
	}
	// The held-out run: the same requests, drawn from seed 7.
	held := filepath.Join(t.TempDir(), "held.json")
	if err := os.WriteFile(held, bytes.Replace(raw, []byte(`{`), []byte(`{"seed": "7", `), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	s := setup70B(t)
	rep := calibrate(t, []*File{readFile(t, fitPath)}, []*File{readFile(t, held)},
		FitOptions{Setup: s, MaxEvals: 6, Params: []string{"overhead.step_ns"}})
	if rep.Fit.JudgeDraws != noiseVariants || rep.Fit.Seeds != 1 {
		t.Fatalf("judge_draws %d, seeds %d; want %d and 1", rep.Fit.JudgeDraws, rep.Fit.Seeds, noiseVariants)
	}
	p, err := sim.LoadProfile(bytes.NewReader(profileYAML(t, rep.Profile)), "fitted.yaml")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := sim.ParseEngine(rep.Engine)
	if err != nil {
		t.Fatal(err)
	}
	start, err := sim.DefaultProfile(s.GPU.Name, engine, s.EngineVersion)
	if err != nil {
		t.Fatal(err)
	}
	replay := func(path string, seed uint64, p *sim.Profile) *sim.Result {
		t.Helper()
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		tr, err := workload.Read(fh, path, workload.VLLMBench, workload.ReadOptions{ArrivalSeed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		return simulateAs(t, s, p, tr, false)
	}
	var logs, startLogs [numMetrics]float64
	var one *sim.Result
	for k := range uint64(noiseVariants) {
		res, res0 := replay(held, 7+k, p), replay(held, 7+k, start)
		if k == 0 {
			one = res
		}
		for _, m := range Metrics() {
			v, _ := simulated(res, m)
			v0, _ := simulated(res0, m)
			logs[m] += math.Log(v) / noiseVariants
			startLogs[m] += math.Log(v0) / noiseVariants
		}
	}
	for _, mr := range rep.Runs[1].Metrics {
		if w := math.Exp(startLogs[mr.Metric]); mr.Before == nil || math.Abs(*mr.Before/w-1) > 1e-9 {
			t.Errorf("held-out %v before the fit: reported %v, want the start's mean of draws %.9g", mr.Metric, mr.Before, w)
		}
	}
	fitRun := replay(fitPath, 0, p)
	differs := false
	for r, want := range []struct {
		holdout bool
		value   func(Metric) float64
	}{
		{false, func(m Metric) float64 { v, _ := simulated(fitRun, m); return v }},
		{true, func(m Metric) float64 { return math.Exp(logs[m]) }},
	} {
		run := rep.Runs[r]
		if run.Holdout != want.holdout {
			t.Fatalf("run %d: holdout %v", r, run.Holdout)
		}
		for _, mr := range run.Metrics {
			if mr.After == nil {
				continue
			}
			if w := want.value(mr.Metric); math.Abs(*mr.After/w-1) > 1e-9 {
				t.Errorf("%s %v: reported %.9g, want %.9g", run.File, mr.Metric, *mr.After, w)
			}
			if v, _ := simulated(one, mr.Metric); want.holdout && math.Abs(*mr.After/v-1) > 1e-3 {
				differs = true
			}
		}
	}
	if !differs {
		t.Error("the held-out run's mean of draws equals its first draw on every metric: the test cannot tell them apart")
	}
	var text strings.Builder
	if err := rep.WriteText(&text, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(text.String()), " "), "judged on the geometric mean of 8 draws") {
		t.Errorf("the report does not say how held-out runs are judged:\n%s", text.String())
	}
}

// distinctErrors keeps one error of each message, in order, and leaves an
// error that joins none, or only different ones, as it is; errors.Is still
// finds what the kept ones wrap.
func TestDistinctErrors(t *testing.T) {
	a, b := fmt.Errorf("a.json: %w", ErrSetup), errors.New("b.json: bad")
	got := distinctErrors(errors.Join(a, a, b, a, b))
	if got.Error() != "a.json: "+ErrSetup.Error()+"\nb.json: bad" || !errors.Is(got, ErrSetup) {
		t.Errorf("got %q", got)
	}
	if j := errors.Join(a, b); distinctErrors(j) != j {
		t.Error("a join of different errors changed")
	}
	if distinctErrors(a) != a || distinctErrors(nil) != nil {
		t.Error("a single error or nil changed")
	}
}
