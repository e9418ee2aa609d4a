package calib

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/sim"
)

var refitProfiles = flag.Bool("refit", false, "refit the embedded profiles and calib/loso from calib/published.yaml ("+FitProfilesCommand+")")

// TestFitProfiles holds the fitted embedded profiles (sim/profiles/<gpu>.<engine>.yaml)
// and the leave-one-source-out ones (calib/loso) to the dataset: one per
// profile its `use: fit` figures run under, each fitted to exactly the
// figures the dataset marks for it now (less one source for calib/loso),
// none left over. With -refit it fits and writes them all.
func TestFitProfiles(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := FitKeys(d, fidOpenFixture)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("no profile has figures to fit")
	}
	if *refitProfiles {
		refit(t, d, keys)
	}
	losos, err := losoProfiles()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, key := range keys {
		gpu, e, _ := strings.Cut(key, " ")
		engine, _ := sim.ParseEngine(e)
		f, err := newFigFitter(d, gpu, engine, FigureFitOptions{Open: fidOpenFixture})
		if err != nil {
			t.Fatal(err)
		}
		ids, bySource := figTargetIDs(f)
		if _, ok := sim.FittedProfileYAML(gpu, engine); !ok {
			t.Errorf("%s: no sim/profiles/%s.%s.yaml; run %s", key, gpu, engine, FitProfilesCommand)
			continue
		}
		p, err := sim.DefaultProfile(gpu, engine)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.FittedTo, ids) {
			t.Errorf("%s: fitted to %v, the dataset marks %v for it: run %s", key, p.FittedTo, ids, FitProfilesCommand)
		}
		for src := range bySource {
			k := key + "|" + src
			seen[k] = true
			lp, ok := losos[k]
			if !ok {
				t.Errorf("no calib/loso/%s; run %s", losoName(gpu, engine, src), FitProfilesCommand)
				continue
			}
			want := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return slices.Contains(bySource[src], id) })
			if len(want) == 0 {
				want = []string{sim.Unfitted}
			}
			if !slices.Equal(lp.FittedTo, want) {
				t.Errorf("calib/loso/%s: fitted to %v, want %v: run %s", losoName(gpu, engine, src), lp.FittedTo, want, FitProfilesCommand)
			}
		}
	}
	for k := range losos {
		if !seen[k] {
			t.Errorf("calib/loso has %q, which no fitted profile needs: run %s", k, FitProfilesCommand)
		}
	}
	for _, gpu := range sim.ProfileGPUs() {
		for _, e := range sim.EngineNames() {
			engine, _ := sim.ParseEngine(e)
			if _, ok := sim.FittedProfileYAML(gpu, engine); ok && !slices.Contains(keys, gpu+" "+e) {
				t.Errorf("sim/profiles/%s.%s.yaml is fitted, but no figure marked for fitting runs there: run %s", gpu, e, FitProfilesCommand)
			}
		}
	}
}

// figTargetIDs returns a fitter's figure ids, sorted, and them by source.
func figTargetIDs(f *figFitter) ([]string, map[string][]string) {
	var ids []string
	by := map[string][]string{}
	for _, t := range f.targets {
		ids = append(ids, t.fig.ID)
		by[t.fig.Source] = append(by[t.fig.Source], t.fig.ID)
	}
	slices.Sort(ids)
	return ids, by
}

// refit fits every profile of keys and its leave-one-source-out siblings
// and writes them, removing the fitted files no key needs.
func refit(t *testing.T, d *Dataset, keys []string) {
	old, _ := filepath.Glob(filepath.Join("..", "sim", "profiles", "*.*.yaml"))
	olds, _ := filepath.Glob(filepath.Join("loso", "*.yaml"))
	for _, name := range append(old, olds...) {
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string, fit *FigureFit) {
		var b bytes.Buffer
		if err := WriteFigureFit(&b, fit); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d figures, loss %.4g → %.4g, %d evaluations, %s", path, len(fit.Figures), fit.ObjectiveBefore, fit.ObjectiveAfter, fit.Evaluations, fit.Status)
	}
	ctx := context.Background()
	for _, key := range keys {
		gpu, e, _ := strings.Cut(key, " ")
		engine, _ := sim.ParseEngine(e)
		fit, err := FitFigures(ctx, d, gpu, engine, FigureFitOptions{Open: fidOpenFixture})
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Join("..", "sim", "profiles", gpu+"."+e+".yaml"), fit)
		for _, src := range fit.Sources {
			lf, err := FitFigures(ctx, d, gpu, engine, FigureFitOptions{Open: fidOpenFixture, Without: src})
			if err != nil {
				t.Fatal(err)
			}
			write(filepath.Join("loso", losoName(gpu, engine, src)), lf)
		}
	}
	t.Log("written: rebuild (the profiles are embedded) and regenerate docs/fidelity.md (" + FidelityCommand + ")")
	t.SkipNow()
}

// TestFitFiguresRecovers: figures made by a known profile (the prior with
// a 1.6× step overhead and 0.8× the weight-read efficiency) are fitted
// back from the prior without its pull: every figure within 1%, with the
// parameters the fit chooses (more than the figures tell apart) and with
// the two changed ones alone, which come back within 5% of the truth; with
// the pull, the figures within 3% (the pull holds what they do not tell
// apart near the prior, at a cost).
func TestFitFiguresRecovers(t *testing.T) {
	if invariants.Enabled {
		t.Skip("hundreds of simulations with every allocator self-check: TestFitProfiles covers the fit's inputs")
	}
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	const gpu, engine = "a100-80g", sim.EngineVLLMV1
	truth, err := sim.PriorProfile(gpu, engine)
	if err != nil {
		t.Fatal(err)
	}
	truth.Overhead.StepNs = truth.Overhead.StepNs * 16 / 10
	truth.Linear.WeightBWEff *= 0.8
	// lmdeploy's static batches only: cheap, and they tell a step's fixed
	// cost from its weight reads (7B, 13B and 70B: one model alone cannot,
	// its weights are a fixed cost a decode step too).
	syn := &Dataset{Version: d.Version, Sources: d.Sources}
	for _, f := range d.Figures {
		if f.Source == "lmdeploy-a100" && f.Use == "fit" {
			syn.Figures = append(syn.Figures, f)
		}
	}
	ff, err := newFigFitter(syn, gpu, engine, FigureFitOptions{Open: fidOpenFixture})
	if err != nil {
		t.Fatal(err)
	}
	vals, ok, err := ff.values(context.Background(), truth)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) < 4 {
		t.Fatalf("%d figures: want lmdeploy's fit figures", len(vals))
	}
	for k, tg := range ff.targets {
		if !ok[k] {
			t.Fatalf("%s: no value", tg.fig.ID)
		}
		tg.fig.Value = vals[k] // ff.targets point into syn.Figures
	}
	for _, c := range []struct {
		params []string
		pull   float64
		tol    float64
	}{{nil, -1, 0.01}, {[]string{"overhead.step_ns", "linear.weight_bw_eff"}, -1, 0.01}, {nil, 0, 0.03}} {
		if testing.Short() && c.params == nil {
			continue // -short (CI's race run): the two-parameter case, 300 runs instead of 2,700
		}
		fit := refitSynthetic(t, syn, ff, vals, c.params, c.pull, c.tol)
		if c.params == nil {
			continue
		}
		p := fit.Profile
		if r := float64(p.Overhead.StepNs) / float64(truth.Overhead.StepNs); math.Abs(r-1) > 0.05 {
			t.Errorf("step_ns fitted %d, truth %d", p.Overhead.StepNs, truth.Overhead.StepNs)
		}
		if r := p.Linear.WeightBWEff / truth.Linear.WeightBWEff; math.Abs(r-1) > 0.05 {
			t.Errorf("weight_bw_eff fitted %v, truth %v", p.Linear.WeightBWEff, truth.Linear.WeightBWEff)
		}
	}
}

// refitSynthetic fits syn (whose values are vals) from the prior with
// params and the prior's pull, and checks the fit matches every figure
// within tol.
func refitSynthetic(t *testing.T, syn *Dataset, ff *figFitter, vals []float64, params []string, pull, tol float64) *FigureFit {
	t.Helper()
	fit, err := FitFigures(context.Background(), syn, ff.gpu, ff.engine, FigureFitOptions{Open: fidOpenFixture, Params: params, PriorWeight: pull})
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := ff.values(context.Background(), fit.Profile)
	if err != nil {
		t.Fatal(err)
	}
	for k, tg := range ff.targets {
		if !ok[k] || math.Abs(got[k]/vals[k]-1) > tol {
			t.Errorf("%s: fitted %v, truth %v", tg.fig.ID, got[k], vals[k])
		}
	}
	p := fit.Profile
	if fit.ObjectiveAfter >= fit.ObjectiveBefore || !slices.Equal(p.FittedTo, fit.Figures) || len(fit.Params) == 0 {
		t.Errorf("loss %v → %v, fitted_to %v, figures %v, params %v", fit.ObjectiveBefore, fit.ObjectiveAfter, p.FittedTo, fit.Figures, fit.Params)
	}
	t.Logf("params %v; %d evaluations; %s", fit.Params, fit.Evaluations, fit.Status)
	return fit
}
