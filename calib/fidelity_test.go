package calib

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/internal/stats"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// The page itself, docs/fidelity.md, is checked by calib/refit's tests:
// it reproduces the vLLM paper from a scenario file, which sim/scenario
// builds and calib may not import.

// fidOpenFixture opens a figure's local copy from testdata.
var fidOpenFixture = OpenFixture(".")

// TestFidelityFixtures checks the trimmed copies of testdata/fidelity
// against the shared files they come from, when the shared checkout is
// present: the same requests, in the same order, with the same arrivals.
func TestFidelityFixtures(t *testing.T) {
	dir := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(dir, "shared", "data", "bench")); err != nil {
		t.Skipf("shared benchmark results not found (%v); this test compares testdata/fidelity with them when the shared checkout is present", err)
	}
	for lc, name := range FidelityFixtures {
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

// TestFidelityTrace: Fig. 12a's trace at a rate is the part of the long
// draw that arrives within the paper's hour once scaled, and the draw's
// span covers an hour at the highest rate searched.
func TestFidelityTrace(t *testing.T) {
	in := []workload.Request{{ID: "a", Arrival: 0}, {ID: "b", Arrival: int64(30 * time.Minute)}, {ID: "c", Arrival: int64(90 * time.Minute)}}
	// At 1 req/s b arrives at exactly the hour: not in it.
	if got := fidTrace(fidScaleArrivals(in, 2, 1), PaperTrace); len(got) != 1 || got[0].ID != "a" {
		t.Errorf("at 1 req/s: %v, want a alone", got)
	}
	if got := fidTrace(fidScaleArrivals(in, 2, 4), PaperTrace); len(got) != 3 {
		t.Errorf("at 4 req/s all three arrive within the hour: %v", got)
	}
	if span := PaperFig12aSpan(2); span != time.Duration(float64(PaperTrace)*fig12aHi/2) || span < 2*time.Hour {
		t.Errorf("span at 2 req/s %v: want an hour at %g req/s, 2h", span, fig12aHi)
	}
}

func TestFidelityMedianAndRatchetValue(t *testing.T) {
	if stats.Median(nil) != 0 || stats.Median([]float64{3, 1, 2}) != 2 || stats.Median([]float64{4, 1, 3, 2}) != 2.5 {
		t.Error("stats.Median, the page's median")
	}
	for _, tc := range []struct{ m, want float64 }{{0.12341, 0.1235}, {0.1234, 0.1234}, {0, 0}} {
		got := FidelityRatchetValue(tc.m)
		if got != tc.want {
			t.Errorf("FidelityRatchetValue(%v) = %v, want %v", tc.m, got, tc.want)
		}
		doc := (&FidelityReport{Joint: sim.PriorJoint()}).Markdown(got)
		if v, proto, ok := FidelityRatchet(doc); !ok || v != got || !(tc.m <= v) || proto != FidelityProtocol {
			t.Errorf("ratchet %v reads back as %v, %q, %v", got, v, proto, ok)
		}
	}
	if _, _, ok := FidelityRatchet([]byte("# no ratchet")); ok {
		t.Error("a page without a ratchet reads one")
	}
	// The page before issue 24 named no protocol.
	if v, proto, ok := FidelityRatchet([]byte("<!-- x. fidelity-ratchet: held-out median 0.0844 -->")); !ok || v != 0.0844 || proto != "" {
		t.Errorf("old page: %v %q %v", v, proto, ok)
	}
}

// TestFidelityStats holds which rows count towards the targets, and that
// each judge reads its own value: the held-out one, the GPU-out one, the
// joint model's (in sample for a fitted figure), the roofline's.
func TestFidelityStats(t *testing.T) {
	row := func(use, metric, gpu, src string, held, gout, fitted, pub float64, isFitted bool) *FidelityRow {
		r := &FidelityRow{Figure: &Figure{Use: use, Metric: metric, Value: pub, Source: src, Setup: Setup{GPU: gpu}}, Fitted: isFitted}
		r.Value[TimingProfile], r.OK[TimingProfile] = fitted, true
		r.HeldOutValue, r.HeldOutOK = held, true
		r.GPUOutValue, r.GPUOutOK = gout, true
		return r
	}
	rep := &FidelityReport{FittedSources: []string{"s1"}, Rows: []*FidelityRow{
		row("holdout", "ttft_median", "a", "s1", 1.1, 1.5, 1.1, 1, false),                // 10%
		row("fit", "tpot_median", "a", "s1", 1.3, 1.2, 1.01, 1, true),                    // 30% held out (1% fitted)
		row("holdout", "output_throughput", "b", "s2", 0.8, 0.8, 0.8, 1, false),          // 20%, never seen
		row("cross-check", "ttft_median", "a", "s2", 9, 9, 9, 1, false),                  // not counted
		row("holdout", "ttft_p99", "a", "s1", 9, 9, 9, 1, false),                         // metric not counted
		{Figure: &Figure{Use: "holdout", Metric: "ttft_median", Value: 1, Source: "s1"}}, // not simulated
	}}
	target := (*FidelityRow).Target
	if s := rep.Stats(JudgeLOSO, target); s.N != 3 || math.Abs(s.Median-0.2) > 1e-12 || math.Abs(s.Max-0.3) > 1e-12 {
		t.Errorf("held out by source: %+v", s)
	}
	if s := rep.HeldOutMedian(); math.Abs(s.Median-0.2) > 1e-12 {
		t.Errorf("ratchet figure: %+v", s)
	}
	if s := rep.Stats(JudgeLOGO, target); s.N != 3 || math.Abs(s.Median-0.2) > 1e-12 || math.Abs(s.Max-0.5) > 1e-12 {
		t.Errorf("held out by GPU: %+v", s)
	}
	if s := rep.Stats(JudgeJoint, func(r *FidelityRow) bool { return target(r) && r.Fitted }); s.N != 1 || math.Abs(s.Median-0.01) > 1e-12 {
		t.Errorf("fitted: %+v", s)
	}
	if s := rep.Stats(JudgeRoofline, target); s.N != 0 {
		t.Errorf("roofline with no values: %+v", s)
	}
	never := func(r *FidelityRow) bool { return target(r) && rep.NeverSeen(r) }
	if s := rep.Stats(JudgeJoint, never); s.N != 1 || math.Abs(s.Median-0.2) > 1e-12 {
		t.Errorf("never seen: %+v", s)
	}
}

// publishedFigure returns a lookup of calib/published.yaml's figures by
// id that fails the test on an unknown one.
func publishedFigure(t *testing.T) func(id string) *Figure {
	t.Helper()
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*Figure{}
	for i := range d.Figures {
		byID[d.Figures[i].ID] = &d.Figures[i]
	}
	return func(id string) *Figure {
		t.Helper()
		if byID[id] == nil {
			t.Fatalf("no figure %s", id)
		}
		return byID[id]
	}
}

// TestFidelityTranslate holds a figure of each kind to its simulation.
func TestFidelityTranslate(t *testing.T) {
	fig := publishedFigure(t)
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
	if err != nil || p.skip != "" || len(p.sim.reqs) != 200 || p.sim.cfg.TP != 8 || p.sim.cfg.MaxBatchTokens != 2048 || p.sim.cfg.Engine != sim.EngineVLLMV1 || p.sim.cfg.EngineVersion != "0.8.3" {
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
	// An all-reduce figure: the a100-80g profile's term by hand (TP 4: its
	// latency scaled; NVLink: the first AllReduceSmallBytes at the small
	// messages' share of the link).
	p, err = fidTranslate(fig("vidur-a100-dgx-allreduce-tp4-8mib"), fidOpenFixture, files)
	prof, _ := sim.DefaultProfile("a100-80g", sim.EngineVLLMV1, "")
	want := (float64(prof.AllReduce.LatencyNs)*sim.AllReduceLatencyScale(4) +
		2*3.0/4*(sim.AllReduceSmallBytes/(prof.Peak.LinkBytesPerS*sim.AllReduceSmallLinkShare/1e9)+
			(8388608-sim.AllReduceSmallBytes)/(prof.Peak.LinkBytesPerS*prof.AllReduce.BWEff/1e9))) / 1e6
	if err != nil || p.sim != nil || math.Abs(p.op(prof)-want) > 1e-9*want {
		t.Errorf("all-reduce: %v ms (%v), want %v", p.op(prof), err, want)
	}
	// The linear layers of one Llama-3-8B layer at 1 token: its weight
	// reads blended with its compute.
	p, err = fidTranslate(fig("vidur-a100-80g-meta-llama-3-8b-tp1-linear-n1"), fidOpenFixture, files)
	params := 4096.0*128*(32+2*8) + 32*128*4096 + 3*4096*14336
	w := params*2/(prof.Peak.MemBytesPerS*prof.Linear.WeightBWEff)*1e3 + 4*prof.Linear.GEMMFixedNs/1e6 // and its four GEMMs' fixed time
	c := (1 + prof.Linear.ComputeHalfTokens) * 2 * params / (prof.Peak.BF16FLOPSPerS * prof.Linear.ComputeEffMax) * 1e3
	want = sim.BlendLinear(c, w, prof.Linear.BlendExponent)
	if err != nil || math.Abs(p.op(prof)-want) > 5e-5*want { // the step model tabulates the blend (sim.TestBlendTable)
		t.Errorf("linear at 1 token: %v ms (%v), want %v", p.op(prof), err, want)
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
	// Leave-one-out models that differ from the joint one, so that every
	// column has its own values.
	joint, bySource, byGPU := sim.PriorJoint(), sim.PriorJoint(), sim.PriorJoint()
	bySource.Linear.WeightBWEff, byGPU.Linear.WeightBWEff = 0.6, 0.7
	held := map[string]*sim.JointModel{"source:lmdeploy-a100": bySource, "gpu:a100-40g": byGPU}
	var docs [][]byte
	for _, w := range []int{1, 4} {
		rep, err := Fidelity(context.Background(), sub, FidelityOptions{Open: fidOpenFixture, Workers: w, Joint: joint, HeldOut: held})
		if err != nil {
			t.Fatal(err)
		}
		st := rep.HeldOutMedian()
		if len(rep.Rows) != len(keep) || st.N != 2 { // output throughput and TPOT
			t.Fatalf("%d rows, summary %+v", len(rep.Rows), st)
		}
		for _, r := range rep.Rows {
			lm, a40 := r.Figure.Source == "lmdeploy-a100", r.Figure.Setup.GPU == "a100-40g"
			if r.HeldOutOK && lm != (r.HeldOutValue != r.Value[TimingProfile]) || r.GPUOutOK && a40 != (r.GPUOutValue != r.Value[TimingProfile]) {
				t.Errorf("%s: joint %v, by source %v, by GPU %v", r.Figure.ID, r.Value[TimingProfile], r.HeldOutValue, r.GPUOutValue)
			}
		}
		docs = append(docs, rep.Markdown(0.5))
	}
	if !bytes.Equal(docs[0], docs[1]) {
		t.Error("the page with 4 workers differs from the page with 1")
	}
}

// TestFidelityAccelMark: an AccelMark figure replays the dataset's cited
// prompt lengths, one at a time for the interactive scenario (cold) and
// Poisson for an online rate (each run's 300 prompts at the client's own
// arrivals, the three runs its medians pool one after another; warm);
// cross-checks and the long-context suite are not replayed.
func TestFidelityAccelMark(t *testing.T) {
	fig := publishedFigure(t)
	files := map[string][]*workload.BenchResult{}
	p, err := fidTranslate(fig("accelmark-a100-80g-vllm-v1-0.20.1-suite-a-interactive-ttft-median"), fidOpenFixture, files)
	if err != nil || p.skip != "" || len(p.sim.reqs) != 150 || p.sim.cfg.MaxConcurrency != 1 || p.sim.cfg.WarmPrompts ||
		p.sim.cfg.EngineVersion != "0.20.1" || p.sim.reqs[0].PromptTokens != 395+fidAccelMarkTemplate || p.sim.reqs[149].Arrival != 0 {
		t.Fatalf("interactive: %+v, %v", p, err)
	}
	for _, r := range p.sim.reqs {
		if r.OutputTokens < 1 || r.OutputTokens > fidAccelMarkMaxTokens {
			t.Fatalf("output %d", r.OutputTokens)
		}
	}
	p, err = fidTranslate(fig("accelmark-a100-80g-sglang-0.5.6-suite-a-online-qps25-tpot-median"), fidOpenFixture, files)
	if err != nil || p.skip != "" || len(p.sim.reqs) != 3*300 || p.sim.cfg.MaxConcurrency != 0 || !p.sim.cfg.WarmPrompts ||
		!(p.sim.reqs[299].Arrival > p.sim.reqs[0].Arrival) {
		t.Fatalf("online: %+v, %v", p, err)
	}
	// Each of the three runs the medians pool sends 300 Poisson arrivals
	// at 25 req/s, about 12 s, and the next starts after the gap.
	if span := float64(p.sim.reqs[299].Arrival) / 1e9; span < 8 || span > 16 {
		t.Errorf("300 arrivals at 25 req/s span %v s", span)
	}
	if gap := p.sim.reqs[300].Arrival - p.sim.reqs[299].Arrival; gap < fidAccelMarkRunGap {
		t.Errorf("run 2 starts %v ns after run 1's last arrival, want at least %v", gap, int64(fidAccelMarkRunGap))
	}
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.Figures {
		f := &d.Figures[i]
		if f.Source != "accelmark" || (f.Use != "cross-check" && !strings.Contains(f.Setup.Workload.Dataset, "longctx")) {
			continue
		}
		if p, err := fidTranslate(f, fidOpenFixture, files); err != nil || p.skip == "" {
			t.Fatalf("%s: replayed (%v)", f.ID, err)
		}
		break
	}
}

// TestFidelityKeysShareEqualCases: figures whose cases have one key share
// one simulation (on the page and in the joint fit), so a key names the
// whole case: its requests and its engine. AccelMark's key carries no
// suite, although the client's arrivals at one rate differ by suite (the
// rates it sweeps before): suites A and C run different models today.
func TestFidelityKeysShareEqualCases(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]*workload.BenchResult{}
	byKey := map[string]*fidCase{}
	first := map[string]string{}
	for i := range d.Figures {
		f := &d.Figures[i]
		p, err := fidTranslate(f, fidOpenFixture, files)
		if err != nil {
			t.Fatalf("%s: %v", f.ID, err)
		}
		if p.sim == nil {
			continue
		}
		c := p.sim
		old := byKey[c.key]
		if old == nil {
			byKey[c.key], first[c.key] = c, f.ID
			continue
		}
		if !reflect.DeepEqual(old.reqs, c.reqs) || !reflect.DeepEqual(old.cfg, c.cfg) || old.class != c.class {
			t.Errorf("%s would run %s's simulation (key %q): requests equal %v, config equal %v", f.ID, first[c.key], c.key,
				reflect.DeepEqual(old.reqs, c.reqs), reflect.DeepEqual(old.cfg, c.cfg))
		}
	}
}
