package calib

import (
	"context"
	"errors"
	"math"
	"testing"
)

// TestJudgeWith: a fold judged with its embedded leave-one-out model gives
// the held-out errors calib/residuals.yaml records for the source's target
// figures (the refit wrote both from the same model), and no other figure.
func TestJudgeWith(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	held, err := HeldOutModels()
	if err != nil {
		t.Fatal(err)
	}
	res, err := EmbeddedResiduals()
	if err != nil {
		t.Fatal(err)
	}
	const fold = "source:lmdeploy-a100"
	if held[fold] == nil {
		t.Fatalf("no embedded model without %s", fold)
	}
	figs, err := JudgeWith(context.Background(), d, JointFitOptions{Open: fidOpenFixture, Without: fold}, held[fold])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, r := range res.Residuals {
		if r.Source == "lmdeploy-a100" && (r.Use == "fit" || r.Use == "holdout") &&
			(r.Metric == "ttft_median" || r.Metric == "tpot_median" || r.Metric == "output_throughput") {
			want[r.Figure] = r.HeldOut
		}
	}
	if len(figs) != len(want) || len(figs) == 0 {
		t.Fatalf("%d figures judged, residuals.yaml has %d", len(figs), len(want))
	}
	for _, f := range figs {
		w, ok := want[f.Figure.ID]
		if !ok || !f.OK || math.Abs(f.Err-w) > 1e-3*max(1, math.Abs(w)) {
			t.Errorf("%s: error %v (ok %v), residuals.yaml %v (listed %v)", f.Figure.ID, f.Err, f.OK, w, ok)
		}
	}
	if _, err := JudgeFold(context.Background(), d, JointFitOptions{Open: fidOpenFixture}); !errors.Is(err, ErrFidelity) {
		t.Errorf("a fold without what it leaves out: %v, want ErrFidelity", err)
	}
}
