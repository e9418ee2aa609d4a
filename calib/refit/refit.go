// Package refit regenerates what calib's joint fit writes into the
// repository (`go run ./calib/cmd/refit`): the joint step-time model
// sim/profiles/joint.yaml, its leave-one-source-out and leave-one-GPU-out
// siblings in calib/loso, the out-of-sample residuals calib/residuals.yaml
// and the page docs/fidelity.md. It is a package of its own because the
// page reproduces the vLLM paper from its scenario file, which sim/scenario
// reads and calib may not import; its tests check that the page and the
// files are what the embedded models and the dataset give today.
//
// With Options.Folds (`-folds source:ID,gpu:NAME` or `-folds sources`) it
// fits and judges only those leave-one-out folds and prints each judged
// figure's error, writing nothing: the quick loop for a change of the
// step model or the fit, a few minutes a fold where the whole refit takes
// tens of minutes.
package refit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// PaperScenario is the vLLM paper's setup, from the repository root.
const PaperScenario = "docs/scenarios/vllm-paper-fig13a.yaml"

// paperSystems names the scenario's runs by KV strategy, as the figures'
// setup.system names them.
var paperSystems = map[string]string{
	"contiguous-max": "orca-max", "contiguous-max:pow2": "orca-pow2",
	"contiguous-max:oracle": "orca-oracle", "paged:16": "vllm",
}

// paperVariants are the length shapes of the page: the paper's (the
// scenario file's: log-s.d. fitted to Fig. 11's bars), and the former
// default's log-s.d. 1.56 / 1.00, with mu solved for the same truncated
// means on the scenario's bounds (calib/README.md, "ShareGPT lengths").
var paperVariants = []struct {
	label                      string
	muIn, sigIn, muOut, sigOut float64
}{
	{"log-s.d. 2.37 in / 1.58 out (the page's)", 4.5182, 2.37, 6.237, 1.58},
	{"log-s.d. 1.56 in / 1.00 out", 4.4977, 1.56, 5.7594, 1.00},
}

// Paper builds the paper's setup from its scenario file under root.
func Paper(root string) (*calib.PaperSetup, error) {
	data, err := os.ReadFile(filepath.Join(root, PaperScenario))
	if err != nil {
		return nil, err
	}
	ps := &calib.PaperSetup{Scenario: PaperScenario}
	for i, v := range paperVariants {
		s, err := scenario.Read(bytes.NewReader(data), PaperScenario)
		if err != nil {
			return nil, err
		}
		rq := s.Workload.Requests
		if i == 0 && (rq.Prompt.Mu != v.muIn || rq.Prompt.Sigma != v.sigIn || rq.Output.Mu != v.muOut || rq.Output.Sigma != v.sigOut) {
			return nil, fmt.Errorf("%s: lengths %+v / %+v, want the page's first variant %+v", PaperScenario, rq.Prompt, rq.Output, v)
		}
		rq.Prompt.Mu, rq.Prompt.Sigma, rq.Output.Mu, rq.Output.Sigma = v.muIn, v.sigIn, v.muOut, v.sigOut
		plan, err := scenario.Build(s, nil)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			ps.GPU, ps.Rate = plan.GPU.Name, rq.Rate
			for _, c := range plan.Configs {
				if c.Engine != sim.EngineVLLMV0 || c.ChunkedPrefill || c.Activations {
					return nil, fmt.Errorf("%s: engine %v, chunked prefill %v, activations %v: want the paper's vllm-v0 without either", PaperScenario,
						c.Engine, c.ChunkedPrefill, c.Activations)
				}
				name, ok := paperSystems[c.KV.String()]
				if !ok {
					return nil, fmt.Errorf("%s: run kv %q is not one of the paper's systems", PaperScenario, c.KV)
				}
				ps.Systems = append(ps.Systems, calib.PaperSystem{Name: name, Config: c})
			}
		}
		if i == 0 {
			// Fig. 12a's traces: the same draw, long enough for the
			// paper's hour at every rate its search tries.
			short := s.Duration
			s.Duration = scenario.Duration(calib.PaperFig12aSpan(rq.Rate))
			long, err := scenario.Build(s, nil)
			if err != nil {
				return nil, err
			}
			ps.Fig12a = long.Requests
			s.Duration = short
		}
		d, _ := s.Duration.MarshalYAML()
		ps.Workloads = append(ps.Workloads, calib.PaperWorkload{Label: v.label, Requests: plan.Requests,
			Sampling: fmt.Sprintf("prompt and output lengths drawn independently as round(exp(N(μ, σ²))), drawn again until in [%d, %d] "+
				"(so prompt + output ≤ 2,048), prompts μ %.4f σ %.2f, outputs μ %.4f σ %.2f (μ solved so the truncated means are the paper's; "+
				"σ 2.37 / 1.58 are the maximum-likelihood fits to the bars of the paper's Fig. 11, 1.56 / 1.00 the former default's: calib/README.md), "+
				"from sim/scenario's lognormal with seed %d; %d requests in %v.",
				rq.Prompt.Min, rq.Prompt.Max, v.muIn, v.sigIn, v.muOut, v.sigOut, s.Seed, len(plan.Requests), d)})
	}
	return ps, nil
}

// Options configure Run.
type Options struct {
	Root    string    // the repository root
	Workers int       // simulations at once (<= 0: GOMAXPROCS)
	Loosen  bool      // record a held-out median above the page's ratchet
	Log     io.Writer // progress, one line a fit (nil: none)
	// PageOnly skips the fits: the page and the residuals come from the
	// embedded models (those of the last refit, once rebuilt).
	PageOnly bool
	// Folds, when set, fits and judges only these leave-one-out folds
	// ("source:ID", "gpu:NAME", or "sources" for every source's) and
	// prints their figures' errors to Out, writing nothing: the quick loop
	// for a change of the model (a full refit takes tens of minutes).
	Folds []string
	Out   io.Writer
}

// Report opens the fixtures under root and generates the fidelity report
// under the given models (nil: the embedded ones), with the kernel timings
// of calib.OpsDir judged under the joint one.
func Report(ctx context.Context, root string, joint *sim.JointModel, held map[string]*sim.JointModel, workers int) (*calib.FidelityReport, error) {
	d, err := calib.Published()
	if err != nil {
		return nil, err
	}
	ps, err := Paper(root)
	if err != nil {
		return nil, err
	}
	rep, err := calib.Fidelity(ctx, d, calib.FidelityOptions{Open: calib.OpenFixture(filepath.Join(root, "calib")), Paper: ps,
		Joint: joint, HeldOut: held, Workers: workers})
	if err != nil {
		return nil, err
	}
	if rep.Ops, err = calib.OpsPage(filepath.Join(root, calib.OpsDir), joint); err != nil {
		return nil, err
	}
	return rep, nil
}

// Ratchet is the figure the page records for the report: the current
// leave-one-source-out median, or the old page's when it is lower and of
// the same protocol. It is an error for the median to rise above an old
// page's of the same protocol, unless loosen.
func Ratchet(rep *calib.FidelityReport, old []byte, loosen bool) (float64, error) {
	m := rep.HeldOutMedian().Median
	ratchet, protocol, ok := calib.FidelityRatchet(old)
	switch {
	case !ok || protocol != calib.FidelityProtocol || loosen:
		return calib.FidelityRatchetValue(m), nil
	case m > ratchet:
		return 0, fmt.Errorf("the leave-one-source-out median %.4f is above the ratchet %.4f of %s: not written (pass -loosen to record it, and say why in the commit)",
			m, ratchet, calib.FidelityPath)
	}
	return min(ratchet, calib.FidelityRatchetValue(m)), nil
}

// Run fits the joint model and every leave-one-out sibling, then writes
// them, the residuals and the page under o.Root.
func Run(ctx context.Context, o Options) error {
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	d, err := calib.Published()
	if err != nil {
		return err
	}
	open := calib.OpenFixture(filepath.Join(o.Root, "calib"))
	keys, err := calib.HeldOutKeys(d, open)
	if err != nil {
		return err
	}
	if o.PageOnly {
		return writePage(ctx, o, nil, nil, logf)
	}
	if len(o.Folds) > 0 {
		return judgeFolds(ctx, o, d, keys, logf)
	}
	write := func(path string, fit *calib.JointFit) error {
		var b bytes.Buffer
		if err := calib.WriteJointFit(&b, fit); err != nil {
			return err
		}
		logf("%s: %d figures, %d parameters, loss %.4g → %.4g, %d iterations, %d evaluations, %s", path, len(fit.Figures), len(fit.Params),
			fit.LossBefore, fit.LossAfter, fit.Iterations, fit.Evaluations, fit.Status)
		return os.WriteFile(filepath.Join(o.Root, path), b.Bytes(), 0o644)
	}
	full, err := calib.FitJoint(ctx, d, calib.JointFitOptions{Open: open, Workers: o.Workers})
	if err != nil {
		return err
	}
	if err := write(sim.JointPath, full); err != nil {
		return err
	}
	olds, _ := filepath.Glob(filepath.Join(o.Root, "calib", "loso", "without-*.yaml"))
	for _, name := range olds {
		if err := os.Remove(name); err != nil {
			return err
		}
	}
	held := map[string]*sim.JointModel{}
	for _, k := range keys {
		fit, err := calib.FitJoint(ctx, d, calib.JointFitOptions{Open: open, Workers: o.Workers, Without: k})
		if err != nil {
			return err
		}
		if err := write(filepath.Join("calib", "loso", calib.HeldOutName(k)), fit); err != nil {
			return err
		}
		held[k] = fit.Model
	}
	return writePage(ctx, o, full.Model, held, logf)
}

// writePage writes docs/fidelity.md and calib/residuals.yaml under the
// models given (nil: the embedded ones).
func writePage(ctx context.Context, o Options, joint *sim.JointModel, held map[string]*sim.JointModel, logf func(string, ...any)) error {
	rep, err := Report(ctx, o.Root, joint, held, o.Workers)
	if err != nil {
		return err
	}
	page := filepath.Join(o.Root, calib.FidelityPath)
	old, err := os.ReadFile(page)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	ratchet, err := Ratchet(rep, old, o.Loosen)
	if err != nil {
		return err
	}
	if err := os.WriteFile(page, rep.Markdown(ratchet), 0o644); err != nil {
		return err
	}
	var rb bytes.Buffer
	if err := rep.WriteResiduals(&rb); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.Root, calib.ResidualsPath), rb.Bytes(), 0o644); err != nil {
		return err
	}
	logf("%s, %s written; leave-one-source-out median %.4f", calib.FidelityPath, calib.ResidualsPath, rep.HeldOutMedian().Median)
	return nil
}

// Stale returns the first line at which have differs from want (1-based)
// and both lines, or 0 when they are equal.
func Stale(have, want []byte) (int, string, string) {
	if bytes.Equal(have, want) {
		return 0, "", ""
	}
	hl, wl := bytes.Split(have, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(hl), len(wl)) {
		var a, b []byte
		if i < len(hl) {
			a = hl[i]
		}
		if i < len(wl) {
			b = wl[i]
		}
		if !slices.Equal(a, b) {
			return i + 1, string(a), string(b)
		}
	}
	return 0, "", ""
}

// NeverSeenFold is the -folds entry that fits the joint model to every
// fitted figure, as the full refit does, and judges it on the sources no
// fit used (docs/fidelity.md's "never seen" rows), each source apart.
const NeverSeenFold = "never-seen"

// judgeNeverSeen is the fold NeverSeenFold: the full fit, judged on the
// fit or holdout figures of every source that keys (the fitted sources'
// folds) does not name.
func judgeNeverSeen(ctx context.Context, d *calib.Dataset, o calib.JointFitOptions, keys []string) (*calib.Fold, error) {
	fit, err := calib.FitJoint(ctx, d, o)
	if err != nil {
		return nil, err
	}
	out := &calib.Fold{Fit: fit}
	var seen []string
	for _, f := range d.Figures {
		k := "source:" + f.Source
		if f.Use != "holdout" || slices.Contains(keys, k) || slices.Contains(seen, k) {
			continue
		}
		seen = append(seen, k)
		o.Without = k
		figs, err := calib.JudgeWith(ctx, d, o, fit.Model)
		if err != nil {
			return nil, err
		}
		out.Figures = append(out.Figures, figs...)
	}
	return out, nil
}

// judgeFolds fits and judges the folds o names (refit -folds), printing
// each figure's error, each fold's median and the median over all.
func judgeFolds(ctx context.Context, o Options, d *calib.Dataset, keys []string, logf func(string, ...any)) error {
	var folds []string
	for _, f := range o.Folds {
		if f == NeverSeenFold {
			if !slices.Contains(folds, f) {
				folds = append(folds, f)
			}
			continue
		}
		if f == "sources" {
			for _, k := range keys {
				if strings.HasPrefix(k, "source:") && !slices.Contains(folds, k) {
					folds = append(folds, k)
				}
			}
			continue
		}
		if err := calib.CheckWithout(f); err != nil {
			return err
		}
		if !slices.Contains(keys, f) {
			return fmt.Errorf("fold %q: no fitted figure has it: want one of %s, or %s (the full fit, judged on the sources no fit used)", f, strings.Join(keys, ", "), NeverSeenFold)
		}
		if !slices.Contains(folds, f) {
			folds = append(folds, f)
		}
	}
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	open := calib.OpenFixture(filepath.Join(o.Root, "calib"))
	var all calib.Fold
	for _, k := range folds {
		var fold *calib.Fold
		var err error
		if k == NeverSeenFold {
			fold, err = judgeNeverSeen(ctx, d, calib.JointFitOptions{Open: open, Workers: o.Workers}, keys)
		} else {
			fold, err = calib.JudgeFold(ctx, d, calib.JointFitOptions{Open: open, Workers: o.Workers, Without: k})
		}
		if err != nil {
			return err
		}
		logf("fold %s: %d figures fitted, %d parameters, loss %.4g → %.4g, %d iterations, %s; fitted: %s", k, len(fold.Fit.Figures), len(fold.Fit.Params),
			fold.Fit.LossBefore, fold.Fit.LossAfter, fold.Fit.Iterations, fold.Fit.Status, fittedValues(fold.Fit))
		for _, f := range fold.Figures {
			e := "no value"
			if f.OK {
				e = fmt.Sprintf("%+.1f%%", 100*f.Err)
			}
			fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\n", k, f.Profile, f.Figure.Metric, f.Figure.ID, e)
		}
		m, n := fold.Median()
		fmt.Fprintf(out, "%s\tmedian |error| %.1f%% over %d figures\n", k, 100*m, n)
		all.Figures = append(all.Figures, fold.Figures...)
	}
	if len(folds) > 1 {
		m, n := all.Median()
		fmt.Fprintf(out, "all folds\tmedian |error| %.1f%% over %d figures\n", 100*m, n)
	}
	return nil
}

// fittedValues lists a fit's fitted parameters with their values.
func fittedValues(fit *calib.JointFit) string {
	var b strings.Builder
	for i, n := range fit.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		v, _ := calib.JointParamValue(fit.Model, n)
		fmt.Fprintf(&b, "%s=%.4g", n, v)
	}
	return b.String()
}
