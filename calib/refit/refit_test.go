package refit

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/sim"
)

const root = "../.."

var once struct {
	sync.Once
	rep *calib.FidelityReport
	err error
}

// report generates the page's report once for the tests, under the
// embedded models. Under -race (or -tags invariants) every allocator
// checks its invariants at each call and it takes many minutes, so those
// tests skip there; calib's TestFidelityWorkers runs Fidelity's
// concurrency under the race detector.
func report(t *testing.T) *calib.FidelityReport {
	t.Helper()
	if testkit.SlowBuild {
		t.Skip("the whole page under -race or -tags invariants takes many minutes; calib's TestFidelityWorkers covers its concurrency")
	}
	once.Do(func() { once.rep, once.err = Report(context.Background(), root, nil, nil, 0) })
	if once.err != nil {
		t.Fatal(once.err)
	}
	return once.rep
}

// TestFidelityDoc fails when docs/fidelity.md or calib/residuals.yaml is
// not what the embedded models give today.
func TestFidelityDoc(t *testing.T) {
	longtest.Skip(t)
	rep := report(t)
	old, err := os.ReadFile(filepath.Join(root, calib.FidelityPath))
	if err != nil {
		t.Fatalf("%v: generate it with %s", err, calib.RefitCommand)
	}
	ratchet, err := Ratchet(rep, old, false)
	if err != nil {
		t.Fatal(err)
	}
	if line, have, want := Stale(old, rep.Markdown(ratchet)); line > 0 {
		t.Errorf("%s is stale at line %d:\n have %.300q\n want %.300q\nregenerate it with %s", calib.FidelityPath, line, have, want, calib.RefitCommand)
	}
	var b bytes.Buffer
	if err := rep.WriteResiduals(&b); err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join(root, calib.ResidualsPath))
	if err != nil {
		t.Fatal(err)
	}
	if line, h, w := Stale(have, b.Bytes()); line > 0 {
		t.Errorf("%s is stale at line %d:\n have %q\n want %q\nregenerate it with %s", calib.ResidualsPath, line, h, w, calib.RefitCommand)
	}
	if f, err := calib.EmbeddedResiduals(); err != nil || len(f.Residuals) == 0 || f.Protocol != calib.FidelityProtocol {
		t.Errorf("embedded residuals: %d, %q, %v", len(f.Residuals), f.Protocol, err)
	}
}

// TestFidelityRatchet fails when the leave-one-source-out median under
// the embedded models rises above the figure docs/fidelity.md records
// (for the same protocol). Until the 10% target is met the ratchet holds
// the current value and only tightens.
func TestFidelityRatchet(t *testing.T) {
	longtest.Skip(t)
	rep := report(t)
	doc, err := os.ReadFile(filepath.Join(root, calib.FidelityPath))
	if err != nil {
		t.Fatalf("%v: generate it with %s", err, calib.RefitCommand)
	}
	ratchet, protocol, ok := calib.FidelityRatchet(doc)
	if !ok || protocol != calib.FidelityProtocol {
		t.Fatalf("%s records no ratchet of protocol %s (%q); regenerate it with %s", calib.FidelityPath, calib.FidelityProtocol, protocol, calib.RefitCommand)
	}
	s := rep.HeldOutMedian()
	if s.N == 0 {
		t.Fatal("no held-out figure was simulated: the ratchet would hold nothing")
	}
	if s.Median > ratchet {
		t.Errorf("the leave-one-source-out median |error| is %.4f over %d figures, above the ratchet %.4f of %s: "+
			"a change made the step-time model worse on sources it was not fitted to", s.Median, s.N, ratchet, calib.FidelityPath)
	}
}

// TestDefaultStepTime holds sim.DefaultStepTime to the page: the model
// with the lower leave-one-source-out median (the roofline is never
// fitted, so its error is out of sample as it stands).
func TestDefaultStepTime(t *testing.T) {
	longtest.Skip(t)
	rep := report(t)
	joint := rep.Stats(calib.JudgeLOSO, (*calib.FidelityRow).Target)
	roof := rep.Stats(calib.JudgeRoofline, (*calib.FidelityRow).Target)
	want := sim.StepTimeJoint
	if roof.Median < joint.Median {
		want = sim.StepTimeRoofline
	}
	if sim.DefaultStepTime != want {
		t.Errorf("sim.DefaultStepTime is %s, but out of sample the joint model's median is %.4f and the roofline's %.4f: make it %s",
			sim.DefaultStepTime, joint.Median, roof.Median, want)
	}
}

// TestModelFiles holds the embedded joint model and calib/loso to the
// dataset: the joint model fitted to exactly the figures marked `fit` now,
// one leave-one-out model per source and GPU of those, each fitted to them
// less the ones it leaves out, none left over.
func TestModelFiles(t *testing.T) {
	d, err := calib.Published()
	if err != nil {
		t.Fatal(err)
	}
	open := calib.OpenFixture(filepath.Join(root, "calib"))
	ids, err := calib.JointFigures(d, open, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := sim.DefaultJoint().FittedTo; !slices.Equal(got, ids) {
		t.Errorf("%s is fitted to %d figures, the dataset marks %d: run %s", sim.JointPath, len(got), len(ids), calib.RefitCommand)
	}
	keys, err := calib.HeldOutKeys(d, open)
	if err != nil {
		t.Fatal(err)
	}
	held, err := calib.HeldOutModels()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		m, ok := held[k]
		if !ok {
			t.Errorf("no calib/loso/%s: run %s", calib.HeldOutName(k), calib.RefitCommand)
			continue
		}
		want, err := calib.JointFigures(d, open, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			want = []string{sim.Unfitted}
		}
		if !slices.Equal(m.FittedTo, want) {
			t.Errorf("calib/loso/%s: fitted to %d figures, want %d: run %s", calib.HeldOutName(k), len(m.FittedTo), len(want), calib.RefitCommand)
		}
	}
	for k := range held {
		if !slices.Contains(keys, k) {
			t.Errorf("calib/loso/%s leaves out %s, which no fitted figure has: run %s", calib.HeldOutName(k), k, calib.RefitCommand)
		}
	}
}

// TestFidelityReportRows checks the generated report's rows against the
// dataset: every figure has a row, simulated or with a reason, every
// simulated one a finite value under each model it ran under.
func TestFidelityReportRows(t *testing.T) {
	longtest.Skip(t)
	rep := report(t)
	d, _ := calib.Published()
	if len(rep.Rows) != len(d.Figures) {
		t.Fatalf("%d rows for %d figures", len(rep.Rows), len(d.Figures))
	}
	for _, r := range rep.Rows {
		if strings.Contains(r.Skip, "which is absent") {
			t.Errorf("%s: %s: add its fixture to calib/testdata/fidelity and calib.FidelityFixtures", r.Figure.ID, r.Skip)
		}
		simulated := r.OK[calib.TimingProfile] || r.OK[calib.TimingRoofline]
		if simulated == (r.Skip != "") {
			t.Errorf("%s: simulated %v, skip %q", r.Figure.ID, simulated, r.Skip)
		}
		for _, v := range []float64{r.Value[calib.TimingProfile], r.Value[calib.TimingRoofline], r.HeldOutValue, r.GPUOutValue} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Errorf("%s: value %v", r.Figure.ID, v)
			}
		}
		if r.Skip == "" && r.Figure.Source != "vllm-paper" && (!r.HeldOutOK || r.Fitted && r.HeldOutBy == "") {
			t.Errorf("%s: held out %v by %q (fitted %v)", r.Figure.ID, r.HeldOutOK, r.HeldOutBy, r.Fitted)
		}
	}
}

// TestPaperFig12aTrace: the paper's setup carries a draw long enough for
// Fig. 12a's 1-hour traces (§6.1) at every rate searched, with the
// lengths of the page's sample: near the sustainable rate a 20-minute
// trace reached 0.5 s/token at a rate 9% higher (vLLM: 2.41 req/s against
// 2.21 on the hour).
func TestPaperFig12aTrace(t *testing.T) {
	ps, err := Paper(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Fig12a) == 0 {
		t.Fatal("no Fig. 12a draw")
	}
	last := ps.Fig12a[len(ps.Fig12a)-1].Arrival
	if need := calib.PaperFig12aSpan(ps.Rate); float64(last) < 0.99*float64(need) {
		t.Errorf("the draw ends at %v, want about %v (an hour at the highest rate searched)", time.Duration(last), need)
	}
	short := ps.Workloads[0].Requests
	for i, q := range short[:100] {
		if l := ps.Fig12a[i]; l.PromptTokens != q.PromptTokens || l.OutputTokens != q.OutputTokens {
			t.Fatalf("request %d: %d/%d tokens in the long draw, %d/%d in the page's sample: want the same draw", i, l.PromptTokens, l.OutputTokens, q.PromptTokens, q.OutputTokens)
		}
	}
}

// TestFoldsRefused: -folds takes source:ID, gpu:NAME or "sources", and
// only folds some fitted figure has; a bad one is an error before any fit,
// and nothing is written.
func TestFoldsRefused(t *testing.T) {
	for _, c := range []struct{ fold, want string }{
		{"accelmark", "want source:ID or gpu:NAME"},
		{"source:no-such-source", "no fitted figure has it"},
		{"gpu:", "want source:ID or gpu:NAME"},
	} {
		var out bytes.Buffer
		err := Run(context.Background(), Options{Root: root, Folds: []string{c.fold}, Out: &out})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("-folds %s: %v, want an error with %q", c.fold, err, c.want)
		}
		if out.Len() != 0 {
			t.Errorf("-folds %s printed %q", c.fold, out.String())
		}
	}
}
