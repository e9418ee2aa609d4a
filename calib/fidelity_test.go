package calib

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
	"github.com/gpufrag/gpufrag/workload"
)

// The page is generated here, not by a go:generate program: the paper's
// setup is a scenario file that sim/scenario builds, which calib may not
// import (docs/architecture.md, "Allowed imports"), while a test may, and
// a new program would be a package of its own for the layering table.
var (
	updateFidelity = flag.Bool("update", false, "rewrite docs/fidelity.md from the simulations ("+FidelityCommand+")")
	loosenFidelity = flag.Bool("fidelity-loosen", false, "with -update, record a held-out median above the page's ratchet")
)

// fidPaperScenario is the paper's setup, from the repository root.
const fidPaperScenario = "docs/scenarios/vllm-paper-fig13a.yaml"

// fidPaperSystems names the scenario's runs by KV strategy, as the figures'
// setup.system names them.
var fidPaperSystems = map[string]string{
	"contiguous-max": "orca-max", "contiguous-max:pow2": "orca-pow2",
	"contiguous-max:oracle": "orca-oracle", "paged:16": "vllm",
}

// fidPaperVariants are the length shapes of the page: the paper's (the
// scenario file's), and log-s.d. 1.40 / 1.20 with mu solved for the same
// truncated means (calib/README.md, "ShareGPT lengths").
var fidPaperVariants = []struct {
	label                      string
	muIn, sigIn, muOut, sigOut float64
}{
	{"log-s.d. 1.56 in / 1.00 out (the page's)", 4.4619, 1.56, 5.7594, 1.00},
	{"log-s.d. 1.40 in / 1.20 out", 4.5156, 1.40, 5.8741, 1.20},
}

func fidRepoRoot() string { return filepath.Join("..") }

// fidBuildPaper builds the paper's setup from its scenario file.
func fidBuildPaper(t testing.TB) *PaperSetup {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fidRepoRoot(), fidPaperScenario))
	if err != nil {
		t.Fatal(err)
	}
	ps := &PaperSetup{Scenario: fidPaperScenario}
	for i, v := range fidPaperVariants {
		s, err := scenario.Read(bytes.NewReader(data), fidPaperScenario)
		if err != nil {
			t.Fatal(err)
		}
		rq := s.Workload.Requests
		if i == 0 && (rq.Prompt.Mu != v.muIn || rq.Prompt.Sigma != v.sigIn || rq.Output.Mu != v.muOut || rq.Output.Sigma != v.sigOut) {
			t.Fatalf("%s: lengths %+v / %+v, want the page's first variant %+v", fidPaperScenario, rq.Prompt, rq.Output, v)
		}
		rq.Prompt.Mu, rq.Prompt.Sigma, rq.Output.Mu, rq.Output.Sigma = v.muIn, v.sigIn, v.muOut, v.sigOut
		plan, err := scenario.Build(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			ps.GPU, ps.Rate = plan.GPU.Name, rq.Rate
			for _, c := range plan.Configs {
				if c.Engine != sim.EngineVLLMV0 || c.ChunkedPrefill || c.Activations {
					t.Fatalf("%s: engine %v, chunked prefill %v, activations %v: want the paper's vllm-v0 without either", fidPaperScenario,
						c.Engine, c.ChunkedPrefill, c.Activations)
				}
				name, ok := fidPaperSystems[c.KV]
				if !ok {
					t.Fatalf("%s: run kv %q is not one of the paper's systems", fidPaperScenario, c.KV)
				}
				ps.Systems = append(ps.Systems, PaperSystem{Name: name, Config: c})
			}
		}
		ps.Workloads = append(ps.Workloads, PaperWorkload{Label: v.label, Requests: plan.Requests,
			Sampling: fmt.Sprintf("prompt and output lengths drawn independently as round(exp(N(μ, σ²))), drawn again until in [%d, %d] "+
				"(so prompt + output ≤ 2,048), prompts μ %.4f σ %.2f, outputs μ %.4f σ %.2f (μ solved so the truncated means are the paper's; "+
				"σ 1.56 is the log-s.d. of benchmark-sampled ShareGPT prompts, 1.00 that of ShareGPT completions: calib/README.md), "+
				"from sim/scenario's lognormal with seed %d; %d requests in %s.",
				rq.Prompt.Min, rq.Prompt.Max, v.muIn, v.sigIn, v.muOut, v.sigOut, s.Seed, len(plan.Requests), fidDuration(s.Duration))})
	}
	return ps
}

func fidDuration(d scenario.Duration) string {
	v, _ := d.MarshalYAML()
	return fmt.Sprint(v)
}

// fidFixtures maps the local copies of the figures replayed here to trimmed
// copies in testdata/fidelity (README.md there says what was kept).
var fidFixtures = map[string]string{
	"shared/data/bench/surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_01.json":  "surajssd-llama-3.3-70b-tp8-sharegpt-qps-01.lens.json",
	"shared/data/bench/surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_16.json":  "surajssd-llama-3.3-70b-tp8-sharegpt-qps-16.lens.json",
	"shared/data/bench/surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_inf.json": "surajssd-llama-3.3-70b-tp8-sharegpt-qps-inf.lens.json",
	"shared/data/bench/datacrunch-research__h200-benchmarks__sglang__outputs__llama_3_3_70b_online_output.jsonl":                                                                  "datacrunch-llama-3.3-70b-online.jsonl",
	"shared/data/bench/datacrunch-research__h200-benchmarks__sglang__outputs__llama_3_3_70b_offline_output.jsonl":                                                                 "datacrunch-llama-3.3-70b-offline.jsonl",
	"shared/data/bench/datacrunch-research__h200-benchmarks__sglang__outputs__llama_405b_online_output.jsonl":                                                                     "datacrunch-llama-3.1-405b-online.jsonl",
}

// fidOpenFixture opens a figure's local copy from testdata/fidelity, or
// from testdata/bench where the copy is kept in calib itself
// ("calib/testdata/bench/NAME").
func fidOpenFixture(localCopy string) (io.ReadCloser, error) {
	if name, ok := strings.CutPrefix(localCopy, "calib/testdata/bench/"); ok && name != "" && !strings.ContainsAny(name, `/\`) {
		return os.Open(filepath.Join("testdata", "bench", name))
	}
	name, ok := fidFixtures[localCopy]
	if !ok {
		return nil, fmt.Errorf("%s: no fixture in testdata/fidelity: %w", localCopy, fs.ErrNotExist)
	}
	return os.Open(filepath.Join("testdata", "fidelity", name))
}

var fidOnce struct {
	sync.Once
	rep *FidelityReport
	err error
}

// fidReport generates the page's report once for the tests. Under -race
// (or -tags invariants) every allocator checks its invariants at each call
// and the generation takes many minutes, so those tests skip there;
// TestFidelityWorkers runs Fidelity's concurrency under the race detector.
func fidReport(t *testing.T) *FidelityReport {
	t.Helper()
	if invariants.Enabled {
		t.Skip("the whole page under -race or -tags invariants takes many minutes; TestFidelityWorkers covers its concurrency")
	}
	fidOnce.Do(func() {
		d, err := Published()
		if err != nil {
			fidOnce.err = err
			return
		}
		fidOnce.rep, fidOnce.err = Fidelity(context.Background(), d, FidelityOptions{Open: fidOpenFixture, Paper: fidBuildPaper(t)})
	})
	if fidOnce.err != nil {
		t.Fatal(fidOnce.err)
	}
	return fidOnce.rep
}

// TestFidelityDoc fails when docs/fidelity.md is not what the simulations
// give today; with -update it rewrites the page (refusing a held-out median
// above the page's ratchet unless -fidelity-loosen).
func TestFidelityDoc(t *testing.T) {
	rep := fidReport(t)
	path := filepath.Join(fidRepoRoot(), FidelityPath)
	old, err := os.ReadFile(path)
	if err != nil && !(*updateFidelity && os.IsNotExist(err)) {
		t.Fatalf("%v: generate it with %s", err, FidelityCommand)
	}
	m := rep.Summarize("").Median[TimingProfile]
	ratchet, ok := FidelityRatchet(old)
	switch {
	case !ok || *loosenFidelity:
		ratchet = FidelityRatchetValue(m)
	case m <= ratchet:
		ratchet = min(ratchet, FidelityRatchetValue(m))
	}
	want := rep.Markdown(ratchet)
	if *updateFidelity {
		if m > ratchet {
			t.Fatalf("held-out median %.4f is above the ratchet %.4f of %s: not written (pass -fidelity-loosen to record it, and say why in the commit)", m, ratchet, FidelityPath)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(old, want) {
		ol, wl := strings.Split(string(old), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(ol), len(wl)) {
			var a, b string
			if i < len(ol) {
				a = ol[i]
			}
			if i < len(wl) {
				b = wl[i]
			}
			if a != b {
				t.Fatalf("%s is stale at line %d:\n have %q\n want %q\nregenerate it with %s", FidelityPath, i+1, fidClip(a), fidClip(b), FidelityCommand)
			}
		}
	}
}

func fidClip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// TestFidelityRatchetHoldsHeldOutMedianUntilTarget fails when the held-out
// median |relative error| under the profiles rises above the figure
// docs/fidelity.md records. The target is 10%; until it is met the
// ratchet holds the current value and only tightens.
func TestFidelityRatchetHoldsHeldOutMedianUntilTarget(t *testing.T) {
	rep := fidReport(t)
	doc, err := os.ReadFile(filepath.Join(fidRepoRoot(), FidelityPath))
	if err != nil {
		t.Fatalf("%v: generate it with %s", err, FidelityCommand)
	}
	ratchet, ok := FidelityRatchet(doc)
	if !ok {
		t.Fatalf("%s records no ratchet; regenerate it with %s", FidelityPath, FidelityCommand)
	}
	s := rep.Summarize("")
	m := s.Median[TimingProfile]
	if s.N[TimingProfile] == 0 {
		t.Fatal("no held-out figure was simulated under a profile: the ratchet would hold nothing")
	}
	state := fmt.Sprintf("the %.0f%% target is not met yet, so the ratchet holds the current value", 100*FidelityTargetMedian)
	if m <= FidelityTargetMedian {
		state = fmt.Sprintf("the %.0f%% target is met", 100*FidelityTargetMedian)
	}
	if m > ratchet {
		t.Errorf("held-out median |error| under the profiles is %.4f over %d figures, above the ratchet %.4f recorded in %s (%s): "+
			"a change made the step-time model worse on figures it was not fitted to", m, s.N[TimingProfile], ratchet, FidelityPath, state)
	}
}

// TestFidelityFixtures checks the trimmed copies of testdata/fidelity
// against the shared files they come from, when the shared checkout is
// present: the same requests, in the same order, with the same arrivals.
func TestFidelityFixtures(t *testing.T) {
	dir := filepath.Join(fidRepoRoot(), "..")
	if _, err := os.Stat(filepath.Join(dir, "shared", "data", "bench")); err != nil {
		t.Skipf("shared benchmark results not found (%v); this test compares testdata/fidelity with them when the shared checkout is present", err)
	}
	for lc, name := range fidFixtures {
		read := func(p string) []workload.Request {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			runs, err := workload.ReadBench(f, p)
			if err != nil {
				t.Fatal(err)
			}
			var out []workload.Request
			for _, r := range runs {
				tr, err := r.Trace()
				if err != nil {
					continue // a run without lengths is skipped alike in both
				}
				out = append(out, tr.Requests...)
			}
			return out
		}
		a, b := read(filepath.Join(dir, lc)), read(filepath.Join("testdata", "fidelity", name))
		if len(a) == 0 || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: %d requests, its fixture %s %d, or they differ", lc, len(a), name, len(b))
		}
	}
}

func TestFidelityBisectRate(t *testing.T) {
	calls := 0
	sq := func(r float64) (float64, error) { calls++; return r * r, nil }
	got, err := fidBisectRate(0.1, 4, 0.001, 2, sq)
	if err != nil || math.Abs(got-math.Sqrt2) > 0.001 {
		t.Errorf("rate %v, %v; want √2 within 0.001", got, err)
	}
	if calls > 2+13 { // the two ends, then log2(3.9/0.001) halvings
		t.Errorf("%d evaluations", calls)
	}
	if got, _ := fidBisectRate(0.1, 1, 0.01, 2, sq); got != 1 {
		t.Errorf("target beyond hi: %v, want hi", got)
	}
	if got, _ := fidBisectRate(2, 3, 0.01, 2, sq); got != 2 {
		t.Errorf("target below lo: %v, want lo", got)
	}
	if _, err := fidBisectRate(0, 1, 0.01, 2, sq); err == nil {
		t.Error("lo 0 accepted")
	}
	boom := fmt.Errorf("boom")
	if _, err := fidBisectRate(0.1, 4, 0.01, 2, func(float64) (float64, error) { return 0, boom }); err != boom {
		t.Errorf("error %v, want the function's", err)
	}
}

func TestFidelityScaleArrivals(t *testing.T) {
	in := []workload.Request{{ID: "a", Arrival: 0}, {ID: "b", Arrival: 1_000_000_001}, {ID: "c", Arrival: 3_000_000_000}}
	out := fidScaleArrivals(in, 2, 4)
	if out[1].Arrival != 500_000_001 || out[2].Arrival != 1_500_000_000 || out[0].Arrival != 0 || in[2].Arrival != 3_000_000_000 {
		t.Errorf("scaled %v (input %v)", out, in)
	}
}

func TestFidelityMedianAndRatchetValue(t *testing.T) {
	if fidMedian(nil) != 0 || fidMedian([]float64{3, 1, 2}) != 2 || fidMedian([]float64{4, 1, 3, 2}) != 2.5 {
		t.Error("fidMedian")
	}
	for _, tc := range []struct{ m, want float64 }{{0.12341, 0.1235}, {0.1234, 0.1234}, {0, 0}} {
		got := FidelityRatchetValue(tc.m)
		if got != tc.want {
			t.Errorf("FidelityRatchetValue(%v) = %v, want %v", tc.m, got, tc.want)
		}
		doc := (&FidelityReport{}).Markdown(got)
		if v, ok := FidelityRatchet(doc); !ok || v != got || !(tc.m <= v) {
			t.Errorf("ratchet %v reads back as %v, %v", got, v, ok)
		}
	}
	if _, ok := FidelityRatchet([]byte("# no ratchet")); ok {
		t.Error("a page without a ratchet reads one")
	}
}

// TestFidelitySummarize holds which rows count towards the targets, and
// that the profile's column is the held-out value, not the fitted one.
func TestFidelitySummarize(t *testing.T) {
	row := func(use, metric, gpu string, held, fitted, pub float64, isFitted bool) *FidelityRow {
		r := &FidelityRow{Figure: &Figure{Use: use, Metric: metric, Value: pub, Setup: Setup{GPU: gpu}}, Fitted: isFitted}
		r.Value[TimingProfile], r.OK[TimingProfile] = fitted, true
		r.HeldOutValue, r.HeldOutOK = held, true
		return r
	}
	rep := &FidelityReport{Rows: []*FidelityRow{
		row("holdout", "ttft_median", "a", 1.1, 1.1, 1, false),             // 10%
		row("fit", "tpot_median", "a", 1.3, 1.01, 1, true),                 // 30% held out (1% fitted)
		row("holdout", "output_throughput", "b", 0.8, 0.8, 1, false),       // 20%
		row("cross-check", "ttft_median", "a", 9, 9, 1, false),             // not counted
		row("holdout", "ttft_p99", "a", 9, 9, 1, false),                    // metric not counted
		{Figure: &Figure{Use: "holdout", Metric: "ttft_median", Value: 1}}, // not simulated
	}}
	s := rep.Summarize("")
	if s.N[TimingProfile] != 3 || math.Abs(s.Median[TimingProfile]-0.2) > 1e-12 || math.Abs(s.Max[TimingProfile]-0.3) > 1e-12 || s.N[TimingRoofline] != 0 {
		t.Errorf("all: %+v", s)
	}
	if s := rep.Summarize("a"); s.N[TimingProfile] != 2 || math.Abs(s.Median[TimingProfile]-0.2) > 1e-12 {
		t.Errorf("gpu a: %+v", s)
	}
	if n, m := rep.fittedSummary(""); n != 1 || math.Abs(m-0.01) > 1e-12 {
		t.Errorf("fitted: %d rows, median %v; want 1 at 1%%", n, m)
	}
}

func TestFidelityMarkFitted(t *testing.T) {
	lc := "shared/data/bench/run.json"
	mk := func(id, src, local string) *FidelityRow {
		return &FidelityRow{Figure: &Figure{ID: id, Source: src, Setup: Setup{Workload: Workload{LocalCopy: local}}}, Profile: "g vllm-v1"}
	}
	rep := &FidelityReport{Rows: []*FidelityRow{mk("x", "s1", ""), mk("y", "s1", ""), mk("z", "s2", lc), mk("w", "s3", "")}}
	fidMarkFitted(rep, map[string]map[string]bool{"g vllm-v1": {"x": true, "run.json@sha256:0123456789ab": true}})
	got := ""
	for _, r := range rep.Rows {
		got += fmt.Sprintf("%s:%v ", r.Figure.ID, r.Fitted)
	}
	if got != "x:true y:false z:true w:false " {
		t.Errorf("fitted: %s", got)
	}
}

// TestFidelityTranslate holds a figure of each kind to its simulation.
func TestFidelityTranslate(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	fig := func(id string) *Figure {
		for i := range d.Figures {
			if d.Figures[i].ID == id {
				return &d.Figures[i]
			}
		}
		t.Fatalf("no figure %s", id)
		return nil
	}
	files := map[string][]*workload.BenchResult{}
	p, err := fidTranslate(fig("lmdeploy-13b-b16-1to128-throughput"), fidOpenFixture, files)
	if err != nil || p.skip != "" || p.sim == nil || len(p.sim.reqs) != 16 || p.sim.reqs[3].PromptTokens != 1 || p.sim.reqs[3].OutputTokens != 128 ||
		p.sim.cfg.Model.Name != "llama-2-13b" || p.gpu != "a100-80g" || p.sim.cfg.Engine != sim.EngineVLLMV1 {
		t.Fatalf("lmdeploy static batch: %+v, %v", p, err)
	}
	if v, ok := p.pick(&sim.Result{OutputTokensPerS: 869}); !ok || v != 869 {
		t.Errorf("throughput picked as %v, %v", v, ok)
	}
	p, err = fidTranslate(fig("surajssd-70b-tp8-a100-40g-qps-16-tpot-median"), fidOpenFixture, files)
	if err != nil || p.skip != "" || len(p.sim.reqs) != 200 || p.sim.cfg.TP != 8 || p.sim.cfg.MaxBatchTokens != 2048 || p.sim.cfg.Engine != sim.EngineVLLMV0 {
		t.Fatalf("surajssd: %+v, %v", p, err)
	}
	if v, _ := p.pick(&sim.Result{TPOT: sim.Latency{P50: 0.0316}}); math.Abs(v-31.6) > 1e-9 {
		t.Errorf("TPOT in ms: %v", v)
	}
	p, _ = fidTranslate(fig("surajssd-70b-tp8-a100-40g-qps-16-tpot-median"), func(string) (io.ReadCloser, error) { return nil, fs.ErrNotExist },
		map[string][]*workload.BenchResult{})
	if !strings.Contains(p.skip, "absent") {
		t.Errorf("absent file: skip %q", p.skip)
	}
	for id, want := range map[string]string{
		"lambda-p320-1xh100-meta-llama-3-8b-instruct-tp1-len2048-ttft-median": "not stored here",
		"argonne-vllm-llama3-8b-h100-b1-l128-latency":                         `no GPU preset for "h100"`,
		"lambda-p10-1xa100-meta-llama-3-8b-instruct-tp1-len2048-ttft-mean":    "not its mean",
		"datacrunch-70b-tp4-sharegpt-4-sharegpt-ttft-median":                  "only its token totals",
	} {
		p, err := fidTranslate(fig(id), fidOpenFixture, files)
		if err != nil || !strings.Contains(p.skip, want) {
			t.Errorf("%s: skip %q (%v), want it to say %q", id, p.skip, err, want)
		}
	}
	// A model the presets lack is named, with what to add.
	if _, _, err := fidModel("no-org/no-such-model (a remark)"); err == nil || !strings.Contains(err.Error(), "no model preset for no-org/no-such-model") {
		t.Errorf("unknown model: %v", err)
	}
	if m, name, err := fidModel("meta-llama/Llama-2-7b-hf"); err != nil || name != "llama-2-7b" || m.Layers != 32 {
		t.Errorf("Llama-2-7b: %s %+v %v", name, m, err)
	}
	// A Lambda 10-prompt run: the cited lengths, all at once, on vllm-v0.
	p, err = fidTranslate(fig("lambda-p10-8xh100-meta-llama-3-70b-instruct-tp8-len2048-tpot-median"), fidOpenFixture, files)
	if err != nil || p.skip != "" || len(p.sim.reqs) != 10 || p.sim.reqs[6].OutputTokens != 0 || p.sim.reqs[4].PromptTokens != 329 ||
		p.sim.cfg.TP != 8 || p.sim.cfg.MaxContext != 2048 || p.sim.cfg.Engine != sim.EngineVLLMV0 || p.sim.cfg.ChunkedPrefill {
		t.Fatalf("lambda: %+v, %v", p, err)
	}
	// A closed-loop sweep's gain: concurrency 8 over concurrency 1.
	p, err = fidTranslate(fig("johnmusgrave-a100-c8-throughput-gain"), fidOpenFixture, files)
	if err != nil || p.skip != "" || p.base == nil || len(p.sim.reqs) != 160 || p.sim.cfg.MaxConcurrency != 8 ||
		len(p.base.reqs) != 20 || p.base.cfg.MaxConcurrency != 1 || p.sim.reqs[0].PromptTokens != 1024 || p.base.reqs[0].OutputTokens != 128 {
		t.Fatalf("closed-loop ratio: %+v, %v", p, err)
	}
	// An all-reduce figure: the a100-80g profile's term by hand.
	p, err = fidTranslate(fig("vidur-a100-dgx-allreduce-tp4-8mib"), fidOpenFixture, files)
	prof, _ := sim.DefaultProfile("a100-80g", sim.EngineVLLMV1)
	want := (float64(prof.AllReduce.LatencyNs) + 2*3.0/4*8388608/(prof.Peak.LinkBytesPerS*prof.AllReduce.BWEff/1e9)) / 1e6
	if err != nil || p.sim != nil || math.Abs(p.opValue-want) > 1e-9*want {
		t.Errorf("all-reduce: %v ms (%v), want %v", p.opValue, err, want)
	}
	// The linear layers of one Llama-3-8B layer at 1 token: weight-bound.
	p, err = fidTranslate(fig("vidur-a100-80g-meta-llama-3-8b-tp1-linear-n1"), fidOpenFixture, files)
	params := 4096.0*128*(32+2*8) + 32*128*4096 + 3*4096*14336
	want = params * 2 / (prof.Peak.MemBytesPerS * prof.Linear.WeightBWEff) * 1e3
	if err != nil || math.Abs(p.opValue-want) > 1e-9*want {
		t.Errorf("linear at 1 token: %v ms (%v), want %v", p.opValue, err, want)
	}
}

// TestFidelityReportRows checks the generated report's rows against the
// dataset: every figure has a row, simulated or with a reason.
func TestFidelityReportRows(t *testing.T) {
	rep := fidReport(t)
	d, _ := Published()
	if len(rep.Rows) != len(d.Figures) {
		t.Fatalf("%d rows for %d figures", len(rep.Rows), len(d.Figures))
	}
	for _, r := range rep.Rows {
		if strings.Contains(r.Skip, "which is absent") {
			t.Errorf("%s: %s: add its fixture to testdata/fidelity and fidFixtures", r.Figure.ID, r.Skip)
		}
		simulated := r.OK[TimingProfile] || r.OK[TimingRoofline]
		if simulated == (r.Skip != "") {
			t.Errorf("%s: simulated %v, skip %q", r.Figure.ID, simulated, r.Skip)
		}
		for tm := range numTimings {
			if r.OK[tm] && !(r.Value[tm] > 0) || math.IsInf(r.Value[tm], 0) {
				t.Errorf("%s: %s value %v", r.Figure.ID, FidelityTiming(tm), r.Value[tm])
			}
		}
	}
}

// TestFidelityWorkers runs a few figures with one worker and with four:
// the report, and so the page, does not depend on the parallelism.
func TestFidelityWorkers(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string]bool{"lmdeploy-13b-b1-1to128-throughput": true, "lmdeploy-13b-b1-decode-p50": true,
		"argonne-vllm-llama3-8b-a100-40g-b1-l128-latency": true, "vidur-a100-dgx-allreduce-tp4-8mib": true,
		"lambda-p10-1xa100-meta-llama-3-8b-instruct-tp1-len2048-tpot-median": true}
	sub := &Dataset{Version: d.Version, Sources: d.Sources}
	for _, f := range d.Figures {
		if keep[f.ID] {
			sub.Figures = append(sub.Figures, f)
		}
	}
	var docs [][]byte
	for _, w := range []int{1, 4} {
		rep, err := Fidelity(context.Background(), sub, FidelityOptions{Open: fidOpenFixture, Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Rows) != len(keep) || rep.Summarize("").N[TimingProfile] != 2 { // output throughput and TPOT
			t.Fatalf("%d rows, summary %+v", len(rep.Rows), rep.Summarize(""))
		}
		docs = append(docs, rep.Markdown(0.5))
	}
	if !bytes.Equal(docs[0], docs[1]) {
		t.Error("the page with 4 workers differs from the page with 1")
	}
}
