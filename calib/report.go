// FitReport: the `gpufrag calibrate --json` document, and the fitted profile
// with what it was fitted to. See fit.go.

package calib

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
)

// FitReport is what a calibration found: the setup, each parameter before and
// after, how the fit ran, and every run's metrics measured, simulated
// with the starting profile (before) and with the fitted one (after).
// JSON field names are the `gpufrag calibrate --json` contract
// (docs/calibrate.md).
type FitReport struct {
	Model  string `json:"model"`
	GPU    string `json:"gpu"`
	TP     int    `json:"tp"`
	Engine string `json:"engine"`
	// Setup is the rest of the setup the runs were replayed with.
	Setup SetupReport `json:"setup"`
	// Start names the starting profile.
	Start string `json:"start_profile"`
	// FittedTo is the fitted profile's fitted_to: the files fitted to, as
	// base name @ sha256 prefix.
	FittedTo []string `json:"fitted_to"`
	// Load is the fitted runs' load and what the rule of load.go lets a
	// fit to it move.
	Load   LoadReport    `json:"load"`
	Params []ParamReport `json:"params"`
	Fit    FitStats      `json:"fit"`
	Runs   []RunReport   `json:"runs"`
	// Errors summarises the fitted metrics; Holdout the metrics of the
	// held-out runs (nil without any).
	Errors   ErrorSummary  `json:"errors"`
	Holdout  *ErrorSummary `json:"holdout_errors,omitempty"`
	Warnings []string      `json:"warnings"`

	// Profile is the fitted profile (Profile.WriteYAML writes it).
	Profile *sim.Profile `json:"-"`
}

// SetupReport is the setup a calibration replayed the runs with, beyond
// the model, GPU, TP and engine: the values in effect, defaults included.
type SetupReport struct {
	WeightDType string `json:"weight_dtype"` // the weights' type (the model's unless set)
	// Unquantized is what quantized weights keep in 16 bits beyond the
	// embedding, lm_head and norms (model.Unquantized; "" for nothing).
	Unquantized string `json:"unquantized,omitempty"`
	KVDType     string `json:"kv_dtype"`
	// MaxContext is the longest sequence in tokens (the model's unless set).
	MaxContext     int  `json:"max_context"`
	MaxBatchTokens int  `json:"max_batch_tokens"`
	MaxSeqs        int  `json:"max_seqs"`
	ChunkedPrefill bool `json:"chunked_prefill"`
	PrefixCaching  bool `json:"prefix_caching"`
	MixedChunk     bool `json:"mixed_chunk"`
	// SchedulerSteps is vLLM V0's --num-scheduler-steps when above 1.
	SchedulerSteps       int     `json:"num_scheduler_steps,omitempty"`
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	// FromFiles are the settings taken from what the files state
	// (StatedSetup), where no flag gave them.
	FromFiles []Stated `json:"from_files"`
}

// setupReport describes s.
func setupReport(s *ReplaySetup) SetupReport {
	m := s.RunModel()
	w, u := m.WeightDType, m.Unquantized
	if w.Bits() >= 16 {
		u = model.Unquantized{}
	}
	steps := 0 // 0 and 1 are both off: the report has it only above 1
	if s.SchedulerSteps > 1 {
		steps = s.SchedulerSteps
	}
	kv := "default"
	if s.KVDType.Valid() {
		kv = s.KVDType.String()
	}
	return SetupReport{WeightDType: w.String(), Unquantized: u.String(), KVDType: kv, MaxContext: cmp.Or(s.MaxContext, s.Model.MaxContext),
		MaxBatchTokens: s.MaxBatchTokens, MaxSeqs: s.MaxSeqs, ChunkedPrefill: s.ChunkedPrefill, PrefixCaching: s.PrefixCaching,
		MixedChunk: s.MixedChunk, SchedulerSteps: steps, GPUMemoryUtilization: s.GPUMemoryUtilization, FromFiles: []Stated{}}
}

// String says the setup in words, for the report and the profile's notes.
func (r SetupReport) String() string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	s := fmt.Sprintf("%s weights, %s KV cache, contexts up to %d tokens, at most %d batched tokens and %d sequences a step, "+
		"chunked prefill %s, prefix caching %s", r.WeightDType, r.KVDType, r.MaxContext, r.MaxBatchTokens, r.MaxSeqs,
		onOff(r.ChunkedPrefill), onOff(r.PrefixCaching))
	if r.Unquantized != "" {
		s = strings.Replace(s, " weights,", " weights ("+r.Unquantized+" in 16 bits),", 1)
	}
	if r.MixedChunk {
		s += ", mixed chunks"
	}
	if r.SchedulerSteps > 1 {
		s += fmt.Sprintf(", %d scheduler steps", r.SchedulerSteps)
	}
	return s + fmt.Sprintf(", gpu_memory_utilization %g", r.GPUMemoryUtilization)
}

// ParamReport is one fittable parameter.
type ParamReport struct {
	Name   string  `json:"name"` // YAML path in the profile
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Fitted bool    `json:"fitted"`
	// Elasticity is the largest |d ln(metric) ÷ d ln(parameter)| over the
	// fitted metrics at the start (0 when not measured).
	Elasticity float64 `json:"elasticity"`
	// StdErr is a fitted parameter's standard error in ln units (0.1:
	// about ±10%) in the linearised fit at the start, over the metrics'
	// noise; 0 for a parameter not fitted.
	StdErr float64 `json:"std_error"`
	// Reason says why the parameter was kept at its start (or, for one
	// fitted on request, why the runs do not pin it).
	Reason string `json:"reason,omitempty"`
	// Because says why a fitted parameter may move at the fitted runs'
	// load (load.go); "" for one not fitted.
	Because string `json:"because,omitempty"`

	index int // in paramTable
}

// FitStats says how the optimiser ran.
type FitStats struct {
	Method string `json:"method"` // "nelder-mead"
	// Evaluations is the objective's evaluations (each a replay of every
	// fitted run); MaxEvaluations the cap; StoppedAtCap that the fit ended
	// there rather than converging.
	Evaluations    int  `json:"evaluations"`
	MaxEvaluations int  `json:"max_evaluations"`
	StoppedAtCap   bool `json:"stopped_at_cap"`
	// ProbeEvaluations is the evaluations spent measuring the parameters'
	// effects before the fit.
	ProbeEvaluations int `json:"probe_evaluations"`
	// Seeds is the draws of each drawn run an evaluation of the fit
	// replays (and the fitted runs' before and after values); JudgeDraws
	// those a held-out run's before and after values average
	// (fitter.judgeDraws: at least 8; 1 when no held-out run is drawn).
	Seeds      int    `json:"seeds"`
	JudgeDraws int    `json:"judge_draws"`
	Status     string `json:"status"` // gonum/optimize's status
	// Residuals is the number of fitted metrics; the objectives are the
	// sums of their squared log relative errors, each over its noise.
	Residuals       int     `json:"residuals"`
	ObjectiveBefore float64 `json:"objective_before"`
	ObjectiveAfter  float64 `json:"objective_after"`
}

// RunReport is one run of one file.
type RunReport struct {
	File     string `json:"file"` // as given
	ID       string `json:"id"`   // base name @ sha256 prefix
	Run      int    `json:"run"`  // 1-based, in its file
	Runs     int    `json:"runs"` // runs of the file
	Holdout  bool   `json:"holdout"`
	Harness  string `json:"harness"`
	Requests int    `json:"requests"`
	// RequestRate is the client's rate (requests/s; "inf" when all were
	// sent at once), MaxConcurrency its cap (0: none).
	RequestRate    string `json:"request_rate"`
	MaxConcurrency int    `json:"max_concurrency"`
	WarmPrompts    bool   `json:"warm_prompts"` // replayed with its prompts in the prefix cache
	// WarmReason says why the run was replayed warm or cold (calib's
	// WarmMode): what --warm-prompts auto decided from the files, or the
	// mode asked for.
	WarmReason string         `json:"warm_prompts_reason"`
	Excluded   string         `json:"excluded,omitempty"`
	Warnings   []string       `json:"warnings"`
	Metrics    []MetricReport `json:"metrics"`
}

// MetricReport is one metric of one run. Values are in seconds, or output
// tokens per second for output_throughput; a value the file or the
// simulator does not give is null.
type MetricReport struct {
	Metric   Metric   `json:"metric"`
	Measured *float64 `json:"measured"`
	Source   string   `json:"source,omitempty"` // "per-request arrays" or "summary"
	Before   *float64 `json:"before"`
	After    *float64 `json:"after"`
	// BeforeErr and AfterErr are simulated ÷ measured − 1.
	BeforeErr *float64 `json:"before_rel_error"`
	AfterErr  *float64 `json:"after_rel_error"`
	// Noise is the standard deviation of the metric's log error that the
	// replay's own draws and a benchmark's repeat explain (noise.go): an
	// error within it is as good as the comparison can tell.
	Noise float64 `json:"noise"`
	// Fitted: the metric is in the objective. Judged: a held-out run's
	// metric that would have been; it counts in holdout_errors.
	Fitted   bool   `json:"fitted"`
	Judged   bool   `json:"judged,omitempty"`
	Excluded string `json:"excluded,omitempty"` // why neither
}

// ErrorSummary is the median and largest |relative error| over a set of
// metrics, before and after the fit.
type ErrorSummary struct {
	Metrics      int     `json:"metrics"`
	BeforeMedian float64 `json:"before_median"`
	BeforeMax    float64 `json:"before_max"`
	AfterMedian  float64 `json:"after_median"`
	AfterMax     float64 `json:"after_max"`
}

// AllWarnings returns the calibration's warnings, then every run's, in
// run order.
func (r *FitReport) AllWarnings() []string {
	ws := append([]string(nil), r.Warnings...)
	for _, run := range r.Runs {
		ws = append(ws, run.Warnings...)
	}
	return ws
}

func ptr(v float64) *float64 { return &v }

// worseThanStart is the warning for a fit that left the fitted metrics
// further from the measurements than its start on both the median and the
// largest |error| ("" otherwise), naming top, the metric that weighs most
// in the objective after the fit. The objective weighs each metric's log
// error by its noise, so it can fall while both plain summaries rise: a
// metric measured with little noise that the model cannot reach pulls the
// others away.
func worseThanStart(e ErrorSummary, top string) string {
	if e.Metrics == 0 || e.AfterMedian <= e.BeforeMedian || e.AfterMax <= e.BeforeMax {
		return ""
	}
	return fmt.Sprintf("the fitted profile is further from the measurements than its start, on the median |error| over the fitted metrics "+
		"(%.1f%% → %.1f%%) and on the largest (%.1f%% → %.1f%%): the fit weighs each metric's log error by its noise, and %s weighs most; "+
		"check that run's setup, or calibrate without that run, before using the profile",
		100*e.BeforeMedian, 100*e.AfterMedian, 100*e.BeforeMax, 100*e.AfterMax, top)
}

// summarise builds an ErrorSummary from before and after |errors|.
func summarise(before, after []float64) ErrorSummary {
	s := ErrorSummary{Metrics: len(before)}
	if len(before) == 0 {
		return s
	}
	b, a := slices.Clone(before), slices.Clone(after)
	slices.Sort(b)
	slices.Sort(a)
	s.BeforeMedian, s.BeforeMax = percentile(b, 50), b[len(b)-1]
	s.AfterMedian, s.AfterMax = percentile(a, 50), a[len(a)-1]
	return s
}

// report assembles the FitReport and the fitted profile's fitted_to and notes.
func (f *fitter) report(fitted *sim.Profile, before, after map[int]*simValues, noise map[int]spread,
	params []ParamReport, stats FitStats) *FitReport {
	s := &f.o.Setup
	rep := &FitReport{Model: s.Model.Name, GPU: s.GPU.Name, TP: s.TP, Engine: s.Engine.String(), Setup: setupReport(s), Start: f.o.StartName,
		Load: f.load, Params: params, Fit: stats, Warnings: append([]string{}, f.warns...)}
	type key struct {
		c int
		m Metric
	}
	fittedSet := map[key]bool{}
	for _, sl := range f.slots {
		fittedSet[key{sl.c, sl.m}] = true
	}
	var fb, fa, hb, ha []float64
	var top string // the fitted metric with the largest share of the objective after the fit
	topWeight := -1.0
	seen := map[string]bool{}
	for i, c := range f.cases {
		if !c.Holdout && !seen[c.File.SHA256] {
			seen[c.File.SHA256] = true
			rep.FittedTo = append(rep.FittedTo, c.File.ID())
		}
		rr := RunReport{File: c.File.Name, ID: c.File.ID(), Run: c.Run.Run, Runs: c.Run.Runs, Holdout: c.Holdout,
			Harness: c.Run.Harness, Requests: len(c.Requests), RequestRate: rateString(c.Run.RequestRate),
			MaxConcurrency: c.Run.MaxConcurrency, WarmPrompts: c.Warm, WarmReason: c.WarmReason, Excluded: c.Excluded, Warnings: append([]string{}, c.Warnings...)}
		for _, m := range Metrics() {
			ms := c.measured[m]
			mr := MetricReport{Metric: m, Source: ms.source, Noise: noise[i].sigma(m, f.draws(c))}
			if ms.ok {
				mr.Measured = ptr(ms.v)
			}
			bv, bok := before[i].value(m)
			av, aok := after[i].value(m)
			if bok {
				mr.Before = ptr(bv)
			}
			if aok {
				mr.After = ptr(av)
			}
			if ms.ok && ms.v != 0 && bok && aok {
				mr.BeforeErr, mr.AfterErr = ptr(bv/ms.v-1), ptr(av/ms.v-1)
			}
			ok, why := f.fittable(c, m)
			switch {
			case fittedSet[key{i, m}] && mr.BeforeErr != nil:
				mr.Fitted = true
				fb, fa = append(fb, math.Abs(*mr.BeforeErr)), append(fa, math.Abs(*mr.AfterErr))
				if w := math.Pow(math.Log1p(*mr.AfterErr)/math.Max(mr.Noise, 1e-9), 2); w > topWeight {
					topWeight, top = w, fmt.Sprintf("%v of %s (%+.1f%% after the fit, against a noise of %.2g)", m, c.where(), 100**mr.AfterErr, mr.Noise)
				}
			case c.Holdout && ok && mr.BeforeErr != nil:
				mr.Judged = true
				hb, ha = append(hb, math.Abs(*mr.BeforeErr)), append(ha, math.Abs(*mr.AfterErr))
			case why != "":
				mr.Excluded = why
			case !bok || !aok:
				mr.Excluded = "the simulation did not produce it (no request of the run completed)"
			}
			rr.Metrics = append(rr.Metrics, mr)
		}
		rep.Runs = append(rep.Runs, rr)
	}
	rep.Errors = summarise(fb, fa)
	if w := worseThanStart(rep.Errors, top); w != "" {
		rep.Warnings = append(rep.Warnings, w)
	}
	if len(hb) > 0 {
		h := summarise(hb, ha)
		rep.Holdout = &h
	}
	fitted.FittedTo = rep.FittedTo
	fitted.Notes = f.notes(rep)
	rep.Profile = fitted
	return rep
}

// notes is the fitted profile's notes: where it came from and how well it
// fits.
func (f *fitter) notes(rep *FitReport) string {
	var fittedNames, kept, moved []string
	for _, p := range rep.Params {
		switch {
		case p.Fitted:
			fittedNames = append(fittedNames, p.Name)
		case p.After != p.Before:
			moved = append(moved, p.Name)
		default:
			kept = append(kept, p.Name)
		}
	}
	runs := 0
	for _, c := range f.cases {
		if !c.Holdout {
			runs++
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Fitted by gpufrag calibrate to %d run(s) of %d file(s) (fitted_to) for %s at tp %d under %s (%s), from %s. ",
		runs, len(rep.FittedTo), rep.Model, rep.TP, rep.Engine, rep.Setup, rep.Start)
	if len(fittedNames) == 0 {
		sb.WriteString("No parameter was fitted; every value is the start's. ")
	} else {
		fmt.Fprintf(&sb, "Fitted: %s (Nelder-Mead, %d evaluations", strings.Join(fittedNames, ", "), rep.Fit.Evaluations)
		if rep.Fit.StoppedAtCap {
			fmt.Fprintf(&sb, ", stopped at the cap of %d", rep.Fit.MaxEvaluations)
		}
		sb.WriteString("). ")
	}
	if len(moved) > 0 {
		fmt.Fprintf(&sb, "Scaled with %s (the host's speed): %s. ", hostParam, strings.Join(moved, ", "))
	}
	if len(kept) > 0 {
		fmt.Fprintf(&sb, "Kept from the start: %s. ", strings.Join(kept, ", "))
	}
	fmt.Fprintf(&sb, "Peaks and CUDA-graph sizes are the start's. |relative error| over %d fitted metrics: median %.1f%%, max %.1f%% (before: %.1f%%, %.1f%%).",
		rep.Errors.Metrics, 100*rep.Errors.AfterMedian, 100*rep.Errors.AfterMax, 100*rep.Errors.BeforeMedian, 100*rep.Errors.BeforeMax)
	if h := rep.Holdout; h != nil {
		fmt.Fprintf(&sb, " Held out (%d metrics): median %.1f%%, max %.1f%%.", h.Metrics, 100*h.AfterMedian, 100*h.AfterMax)
	}
	return sb.String()
}

// rateString writes a request rate as the files do: a number, or "inf".
func rateString(r float64) string {
	switch {
	case math.IsInf(r, 1):
		return "inf"
	case r == 0:
		return "unknown"
	}
	return fmt.Sprintf("%g", r)
}
