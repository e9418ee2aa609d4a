package calib

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/sim"
)

// synthetic returns the dataset's `use: fit` figures of the sources given,
// their values replaced by what truth gives them.
func synthetic(t *testing.T, truth *sim.JointModel, sources ...string) *Dataset {
	t.Helper()
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	syn := &Dataset{Version: d.Version, Sources: d.Sources}
	for _, f := range d.Figures {
		if f.Use == "fit" && slices.Contains(sources, f.Source) {
			syn.Figures = append(syn.Figures, f)
		}
	}
	jp, err := newJointProblem(context.Background(), syn, JointFitOptions{Open: fidOpenFixture})
	if err != nil {
		t.Fatal(err)
	}
	vals, ok, err := jp.values(context.Background(), truth)
	if err != nil {
		t.Fatal(err)
	}
	for k, tg := range jp.targets {
		if !ok[k] {
			t.Fatalf("%s: no value", tg.fig.ID)
		}
		tg.fig.Value = vals[k] // the targets point into syn.Figures
	}
	return syn
}

// TestFitJointRecovers: figures made by a known joint model (the prior with
// 1.6× lmdeploy's step overhead and 0.85× the shared weight-read
// efficiency) are fitted back from the prior without its pull: with the
// two changed parameters, both come back within 3% and every figure within
// 1%; with every parameter the figures move, the figures within 2%.
func TestFitJointRecovers(t *testing.T) {
	if testkit.SlowBuild {
		t.Skip("hundreds of simulations with every allocator self-check")
	}
	truth := sim.PriorJoint()
	o := truth.Engines[sim.ClassLMDeploy]
	o.StepNs = o.StepNs * 16 / 10
	truth.Engines[sim.ClassLMDeploy] = o
	truth.Linear.WeightBWEff *= 0.85
	// lmdeploy's static batches (7B, 13B and 70B: one model alone cannot
	// tell a step's fixed cost from its weight reads) and Vidur's operator
	// figures (the linear term alone).
	syn := synthetic(t, truth, "lmdeploy-a100", "vidur-profiling")
	for _, c := range []struct {
		params []string
		tol    float64
	}{{[]string{"linear.weight_bw_eff", "engines.lmdeploy.step_ns"}, 0.01}, {nil, 0.02}} {
		if testing.Short() && c.params == nil {
			continue
		}
		fit, err := FitJoint(context.Background(), syn, JointFitOptions{Open: fidOpenFixture, Params: c.params, PriorWeight: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("params %v; %d iterations, %d evaluations; loss %.3g → %.3g; %s", fit.Params, fit.Iterations, fit.Evaluations, fit.LossBefore, fit.LossAfter, fit.Status)
		jp, err := newJointProblem(context.Background(), syn, JointFitOptions{Open: fidOpenFixture})
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := jp.values(context.Background(), fit.Model)
		if err != nil {
			t.Fatal(err)
		}
		for k, tg := range jp.targets {
			if !ok[k] || math.Abs(got[k]/tg.fig.Value-1) > c.tol {
				t.Errorf("%v: %s: fitted %v, truth %v", c.params, tg.fig.ID, got[k], tg.fig.Value)
			}
		}
		if !slices.Equal(fit.Model.FittedTo, fit.Figures) || fit.LossAfter >= fit.LossBefore || !strings.Contains(fit.Model.Notes, "lmdeploy-a100") {
			t.Errorf("fitted_to %v, figures %v, loss %v → %v, notes %q", fit.Model.FittedTo, fit.Figures, fit.LossBefore, fit.LossAfter, fit.Model.Notes)
		}
		if c.params == nil {
			continue
		}
		if r := float64(fit.Model.Engines[sim.ClassLMDeploy].StepNs) / float64(o.StepNs); math.Abs(r-1) > 0.03 {
			t.Errorf("step_ns fitted %d, truth %d", fit.Model.Engines[sim.ClassLMDeploy].StepNs, o.StepNs)
		}
		if r := fit.Model.Linear.WeightBWEff / truth.Linear.WeightBWEff; math.Abs(r-1) > 0.03 {
			t.Errorf("weight_bw_eff fitted %v, truth %v", fit.Model.Linear.WeightBWEff, truth.Linear.WeightBWEff)
		}
	}
}

// TestFitJointLeavesOut: a fit without a source or a GPU has none of its
// figures; an unknown kind of Without is refused.
func TestFitJointLeavesOut(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	for _, without := range []string{"source:lmdeploy-a100", "gpu:a100-80g"} {
		jp, err := jointTargets(d, JointFitOptions{Open: fidOpenFixture, Without: without}, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(jp.targets) == 0 {
			t.Fatalf("%s: no figure left", without)
		}
		for _, tg := range jp.targets {
			if withoutFigure(tg.fig, without) || tg.fig.Use != "fit" || tg.fig.Source == paperSource {
				t.Errorf("%s: fits %s (%s, %s)", without, tg.fig.ID, tg.fig.Source, tg.fig.Setup.GPU)
			}
		}
	}
	if _, err := FitJoint(context.Background(), d, JointFitOptions{Without: "model:x"}); err == nil {
		t.Error("without model:x accepted")
	}
}
