// Calibrate: a sim.Profile fitted to benchmark runs. The runs are
// replayed through sim (replay.go); the comparison's noise is measured
// over seeds (noise.go); the parameters the runs pin are chosen from their
// effect on the metrics (identify.go); those are fitted by Nelder–Mead
// (gonum/optimize) on the sum of squared log relative errors, each over
// its noise. report.go holds the document it returns.

package calib

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"

	"gonum.org/v1/gonum/optimize"

	"github.com/gpufrag/gpufrag/internal/par"
	"github.com/gpufrag/gpufrag/sim"
)

// Tunables of the fit.
const (
	// DefaultMaxEvals caps the objective's evaluations (each one replay of
	// every fitted run): Nelder–Mead needs some 50-100 per fitted
	// parameter to converge on these objectives (the fits of
	// docs/calibrate.md converge in 100-250 with 2 to 4 parameters), and
	// 500 replays of a few thousand requests take seconds.
	DefaultMaxEvals = 500
	// maxEvalsLimit bounds FitOptions.MaxEvals (100,000: hours of replays).
	maxEvalsLimit = 100_000
	// MaxSeeds bounds FitOptions.Seeds (64 replays of every run per
	// evaluation).
	MaxSeeds = 64
	// simplexSize is Nelder–Mead's initial simplex in the transformed
	// coordinates (params.go): 0.5 moves an efficiency of 0.5 by about 0.12
	// and a time by about a sixth of its log range.
	simplexSize = 0.5
	// convergeIterations and convergeRelative stop the fit when the best
	// objective has improved by less than 1e-6 of itself over 40 simplex
	// updates.
	convergeIterations = 40
	convergeRelative   = 1e-6
	// missingPenalty stands for the log error of a metric the simulation
	// did not produce (no request completed): ln 1e-6, far worse than any
	// real fit.
	missingPenalty = 13.8
)

// FitOptions configure Calibrate.
type FitOptions struct {
	Setup ReplaySetup
	// Start is the profile the fit starts from and keeps the unfitted
	// parameters of; nil: sim.DefaultProfile(GPU, engine). StartName names
	// it in the report ("": "embedded <gpu> (<engine>)").
	Start     *sim.Profile
	StartName string
	// Params, when set, are the parameters to fit (ParamNames), instead of
	// those identify chooses.
	Params []string
	// MaxEvals caps the objective's evaluations (0: DefaultMaxEvals).
	MaxEvals int
	// Seeds is how many draws of a run whose arrivals or lengths are drawn
	// each evaluation replays, fitting the mean of their log metrics (0:
	// 1, the run's own seed). More seeds fit the expected metrics rather
	// than one draw's, at that many times the cost.
	Seeds int
	// Workers bounds the runs simulated at once (0: GOMAXPROCS).
	Workers int
	// SkipBadRuns skips runs that cannot be replayed (each reported as a
	// warning) instead of failing on the first.
	SkipBadRuns bool
	// Warm says which runs are replayed with their prompts already in the
	// prefix cache (sim.Config.WarmPrompts); the zero value is WarmAuto.
	Warm WarmMode
}

// fitter holds one calibration's state.
type fitter struct {
	o      FitOptions
	cases  []*Case
	fitIdx []int  // cases fitted to
	slots  []slot // the objective's metrics
	start  *sim.Profile
	warns  []string
	load   LoadReport // the fitted runs' load (load.go)
}

// slot is one (case, metric) of the objective, with its noise: the
// standard deviation of its log error (noise.go).
type slot struct {
	c     int
	m     Metric
	sigma float64
}

// Calibrate fits a profile to the runs of fit and reports it with the
// errors before and after, also on the runs of holdout (evaluated, not
// fitted). The result depends only on the inputs: the same files give the
// same profile, byte for byte.
func Calibrate(ctx context.Context, fit, holdout []*File, o FitOptions) (*FitReport, error) {
	f, err := newFitter(fit, holdout, o)
	if err != nil {
		return nil, err
	}
	return f.run(ctx)
}

func newFitter(fit, holdout []*File, o FitOptions) (*fitter, error) {
	switch {
	case len(fit) == 0:
		return nil, fmt.Errorf("%w: no benchmark files to fit to", ErrSetup)
	case len(fit)+len(holdout) > MaxFiles:
		return nil, fmt.Errorf("%w: %d files, more than %d", ErrSetup, len(fit)+len(holdout), MaxFiles)
	case o.MaxEvals < 0 || o.MaxEvals > maxEvalsLimit:
		return nil, fmt.Errorf("%w: max evaluations %d: want 1 to %d", ErrSetup, o.MaxEvals, maxEvalsLimit)
	case o.Seeds < 0 || o.Seeds > MaxSeeds:
		return nil, fmt.Errorf("%w: seeds %d: want 1 to %d", ErrSetup, o.Seeds, MaxSeeds)
	case o.Setup.TP < 0:
		return nil, fmt.Errorf("%w: tp %d: want at least 1", ErrSetup, o.Setup.TP)
	}
	if o.MaxEvals == 0 {
		o.MaxEvals = DefaultMaxEvals
	}
	o.Seeds = max(o.Seeds, 1)
	o.Setup.TP = max(o.Setup.TP, 1)
	f := &fitter{o: o}
	seen := map[string]string{}
	for _, group := range []struct {
		files   []*File
		holdout bool
	}{{fit, false}, {holdout, true}} {
		for _, file := range group.files {
			if prev, ok := seen[file.SHA256]; ok {
				return nil, fmt.Errorf("%w: %s has the same contents as %s (sha256 %s): give each file once",
					ErrSetup, file.Name, prev, file.SHA256[:hashPrefix])
			}
			seen[file.SHA256] = file.Name
			for _, run := range file.Runs {
				if len(f.cases) == MaxCases {
					return nil, fmt.Errorf("%w: more than %d runs in all", ErrSetup, MaxCases)
				}
				c, err := newCase(file, run, group.holdout, max(o.Seeds, noiseVariants))
				if err != nil {
					if !o.SkipBadRuns {
						return nil, fmt.Errorf("%w (skip such runs with --skip-bad-runs)", err)
					}
					f.warns = append(f.warns, fmt.Sprintf("skipped: %v", err))
					continue
				}
				f.cases = append(f.cases, c)
			}
		}
	}
	if err := f.markWarm(o.Setup.PrefixCaching); err != nil {
		return nil, err
	}
	for i, c := range f.cases {
		if !c.Holdout {
			f.fitIdx = append(f.fitIdx, i)
		}
	}
	if len(f.fitIdx) == 0 {
		return nil, fmt.Errorf("%w: no run of the files to fit to can be replayed", ErrSetup)
	}
	if err := f.resolveEngine(); err != nil {
		return nil, err
	}
	if err := f.startProfile(); err != nil {
		return nil, err
	}
	return f, nil
}

// resolveEngine sets the engine from the files' harnesses unless one was
// given.
func (f *fitter) resolveEngine() error {
	s := &f.o.Setup
	if s.EngineGiven {
		if !s.Engine.Valid() {
			return fmt.Errorf("%w: engine %v", ErrSetup, s.Engine)
		}
		return nil
	}
	first := f.cases[0]
	s.Engine = harnessEngine(first.Run.Harness)
	for _, c := range f.cases[1:] {
		if e := harnessEngine(c.Run.Harness); e != s.Engine {
			return fmt.Errorf("%w: %s was written by %s's client (engine %v) and %s by %s's (engine %v): a profile is for one engine; "+
				"calibrate them separately, or give the engine (--engine)", ErrSetup,
				first.where(), first.Run.Harness, s.Engine, c.where(), c.Run.Harness, e)
		}
	}
	return nil
}

// startProfile checks or builds the starting profile.
func (f *fitter) startProfile() error {
	s := &f.o.Setup
	if f.o.Start == nil {
		p, err := sim.DefaultProfile(s.GPU.Name, s.Engine, s.EngineVersion)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSetup, err)
		}
		f.start = p
		if f.o.StartName == "" {
			f.o.StartName = fmt.Sprintf("embedded %s (%v)", s.GPU.Name, s.Engine)
		}
		return nil
	}
	p := f.o.Start
	if f.o.StartName == "" {
		f.o.StartName = "the given profile"
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%w: starting profile: %w", ErrSetup, err)
	}
	if !strings.EqualFold(p.GPU, s.GPU.Name) || p.Engine != s.Engine {
		return fmt.Errorf("%w: the starting profile %s is for %s under %v, the runs are replayed on %s under %v: "+
			"start from a profile of that GPU and engine", ErrSetup, f.o.StartName, clipLabel(p.GPU), p.Engine, s.GPU.Name, s.Engine)
	}
	f.start = p.Clone()
	return nil
}

// job is one replay: variant v of case c.
type job struct{ c, v int }

// jobs lists the replays of the cases, each under its first n variants.
func (f *fitter) jobs(cases []int, n int) []job {
	var js []job
	for _, i := range cases {
		for v := range min(n, len(f.cases[i].Variants)) {
			js = append(js, job{i, v})
		}
	}
	return js
}

// simulate replays the jobs under p, at most FitOptions.Workers at once;
// results are by position in js.
func (f *fitter) simulate(ctx context.Context, p *sim.Profile, js []job) ([]sim.Result, error) {
	res, err := par.Map(ctx, len(js), par.Options{Workers: f.o.Workers}, func(_ context.Context, k int) (sim.Result, error) {
		c := f.cases[js[k].c]
		cfg := f.o.Setup.config(p, c.Run.MaxConcurrency)
		cfg.WarmPrompts = c.Warm
		e, err := sim.New(cfg, c.Variants[js[k].v])
		if err != nil {
			return sim.Result{}, fmt.Errorf("%s: %w", c.where(), err)
		}
		res, err := e.Run()
		if cerr := e.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return sim.Result{}, fmt.Errorf("%s: %w", c.where(), err)
		}
		return res, nil
	})
	return res, distinctErrors(err)
}

// distinctErrors keeps one of each message of err's joined errors (par.Map
// joins one a job, and every draw of a run fails alike when its setup is
// bad), in their order; err itself when it joins none or all differ.
func distinctErrors(err error) error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var keep []error
	seen := map[string]bool{}
	for _, e := range j.Unwrap() {
		if msg := e.Error(); !seen[msg] {
			seen[msg] = true
			keep = append(keep, e)
		}
	}
	if len(keep) == len(j.Unwrap()) {
		return err
	}
	return errors.Join(keep...)
}

// simValues are a case's simulated metrics: the mean log over the
// variants replayed (the log itself for one), and whether every variant
// produced the metric.
type simValues struct {
	log [numMetrics]float64
	ok  [numMetrics]bool
}

// value is the metric's simulated value (the geometric mean over the
// variants).
func (s *simValues) value(m Metric) (float64, bool) {
	if !s.ok[m] {
		return 0, false
	}
	return math.Exp(s.log[m]), true
}

// evaluate replays the cases under p, each under its first n variants.
// The results of each case's first variant come back too (first), for
// the checks on what the simulator served.
func (f *fitter) evaluate(ctx context.Context, p *sim.Profile, cases []int, n int) (map[int]*simValues, map[int]*sim.Result, error) {
	js := f.jobs(cases, n)
	res, err := f.simulate(ctx, p, js)
	if err != nil {
		return nil, nil, err
	}
	vals, first := meanValues(js, res)
	return vals, first, nil
}

// meanValues is each case's geometric mean of its jobs' metrics (res by
// position in js), and its first job's result.
func meanValues(js []job, res []sim.Result) (map[int]*simValues, map[int]*sim.Result) {
	vals := map[int]*simValues{}
	first := map[int]*sim.Result{}
	count := map[int]int{}
	for k, j := range js {
		sv := vals[j.c]
		if sv == nil {
			sv = &simValues{}
			for m := range sv.ok {
				_, sv.ok[m] = simulated(&res[k], Metric(m))
			}
			vals[j.c], first[j.c] = sv, &res[k]
		}
		count[j.c]++
		for _, m := range Metrics() {
			v, ok := simulated(&res[k], m)
			if !ok || !(v > 0) {
				sv.ok[m] = false
				continue
			}
			sv.log[m] += math.Log(v)
		}
	}
	for c, sv := range vals {
		for m := range sv.log {
			sv.log[m] /= float64(count[c])
		}
	}
	return vals, first
}

// residuals are the slots' log errors over their noise.
func (f *fitter) residuals(vals map[int]*simValues) []float64 {
	r := make([]float64, len(f.slots))
	for k, s := range f.slots {
		sv := vals[s.c]
		lr := -missingPenalty
		if sv.ok[s.m] {
			lr = sv.log[s.m] - math.Log(f.cases[s.c].measured[s.m].v)
		}
		r[k] = lr / s.sigma
	}
	return r
}

func sumSquares(r []float64) float64 {
	s := 0.0
	for _, x := range r {
		s += x * x
	}
	return s
}

// fittable reports whether metric m of case c can enter an objective
// (fitted, or judged on a held-out run), and why not.
func (f *fitter) fittable(c *Case, m Metric) (bool, string) {
	ms := c.measured[m]
	switch {
	case c.Excluded != "":
		return false, "the run is excluded"
	case !ms.ok:
		return false, "the file does not give it"
	case ms.excluded != "":
		return false, ms.excluded
	case !(ms.v > 0):
		return false, fmt.Sprintf("measured %g: not a positive figure", ms.v)
	}
	return true, ""
}

// run is the calibration: replay at the start, measure the noise, choose,
// fit, replay at the fitted profile, report.
func (f *fitter) run(ctx context.Context) (*FitReport, error) {
	all := make([]int, len(f.cases))
	for i := range all {
		all[i] = i
	}
	noise, first, shown, err := f.noise(ctx, all)
	if err != nil {
		return nil, err
	}
	f.checkRuns(first)
	f.load = f.loadOf(first)
	for _, i := range f.fitIdx {
		for _, m := range Metrics() {
			if ok, _ := f.fittable(f.cases[i], m); ok {
				f.slots = append(f.slots, slot{i, m, noise[i].sigma(m, f.o.Seeds)})
			}
		}
	}
	if len(f.slots) == 0 {
		return nil, fmt.Errorf("%w: no metric of the runs to fit to can be fitted:%s%s", ErrSetup, f.unfittable(), f.caseWarnings())
	}
	// The fitted runs as the objective sees them; the held-out runs' values
	// at the start are their judgeDraws means (shown, below).
	before, _, err := f.evaluate(ctx, f.start, f.fitIdx, f.o.Seeds)
	if err != nil {
		return nil, err
	}
	r0 := f.residuals(before)
	f.warnFar(before)
	chosen, preports, probes, err := f.identify(ctx, r0)
	if err != nil {
		return nil, err
	}
	fitted, stats, err := f.minimize(ctx, chosen, r0)
	if err != nil {
		return nil, err
	}
	stats.ProbeEvaluations, stats.JudgeDraws = probes, 1
	for _, c := range f.cases {
		if c.Holdout && len(c.Variants) > 1 {
			stats.JudgeDraws = f.judgeDraws()
		}
	}
	// Fitted runs are reported as the objective saw them (FitOptions.Seeds
	// draws: simulate --profile with the run's own seed gives the same
	// figures); held-out runs at their expected values (judgeDraws).
	after, _, err := f.evaluate(ctx, fitted, f.fitIdx, f.o.Seeds)
	if err != nil {
		return nil, err
	}
	var held []int
	for i, c := range f.cases {
		if c.Holdout {
			held = append(held, i)
			before[i] = shown[i]
		}
	}
	afterHeld, _, err := f.evaluate(ctx, fitted, held, f.judgeDraws())
	if err != nil {
		return nil, err
	}
	maps.Copy(after, afterHeld)
	for k := range preports {
		p := &preports[k]
		p.After = paramTable[p.index].get(fitted)
		if p.Name == hostParam && !p.Fitted {
			p.After = p.Before // read as step_ns, which may have been fitted alone
		}
		if !p.Fitted && p.After != p.Before && !strings.Contains(p.Reason, hostParam) {
			p.Reason += "; scaled with " + hostParam + ", which is fitted"
		}
	}
	return f.report(fitted, before, after, noise, preports, stats), nil
}

// judgeDraws is how many draws of a drawn held-out run the report's
// replays (before and after the fit) average: the fit's own seeds, and at
// least the noiseVariants the noise is measured over (the replays at the
// start are the noise's). A run whose arrivals the client drew and did
// not save is one draw of many; near a queue's knee one draw of the
// replay's arrivals moves a median TTFT by a factor of several
// (docs/calibrate.md, "Runs at the knee depend on their arrivals"), so a
// held-out run is judged against the replay's geometric mean over draws,
// the metric's expected value, not against one draw. The objective keeps
// FitOptions.Seeds (its cost is per evaluation); the judgement costs one
// evaluation of the held-out runs.
func (f *fitter) judgeDraws() int { return max(f.o.Seeds, noiseVariants) }

// checkRuns warns about runs the simulator could not serve whole, and
// excludes runs whose first tokens beat any prefill (checkPrefill).
func (f *fitter) checkRuns(first map[int]*sim.Result) {
	s := &f.o.Setup
	cfg := s.config(f.start, 0)
	// Only the linear FLOPs per token matter to checkPrefill, not the KV type.
	shape := sim.NewShape(s.RunModel(), s.TP, cfg.KVDType)
	peak := f.start.Peak.BF16FLOPSPerS
	if shape.FP8 && f.start.Peak.FP8FLOPSPerS > 0 {
		peak = f.start.Peak.FP8FLOPSPerS
	}
	for i, c := range f.cases {
		if !c.Warm {
			c.checkPrefill(shape, peak)
		}
		res := first[i]
		if lost := res.RequestsRejected + res.RequestsFailedOOM + res.RequestsUnfinished; lost > 0 {
			c.warn("the simulator did not serve %d of its %d requests (%d rejected as too long for the context or memory, %d failed out of memory, %d unfinished): "+
				"its metrics cover the others", lost, len(c.Requests), res.RequestsRejected, res.RequestsFailedOOM, res.RequestsUnfinished)
		}
	}
}

// farFactor is how far off (a factor) a replay at the start may be before
// calibrate warns that it runs in another regime than the benchmark did:
// a profile's parameters move step times by tens of percent, so a metric
// 3 times off means a queue that grows in the replay and not in the run
// (or the reverse), or a setup that differs (--tp, --max-seqs,
// --max-batch-tokens, cached prompts), and its squared log error would
// dominate the fit.
const farFactor = 3

// warnFar warns about fitted metrics the start's replay is farFactor or
// more off.
func (f *fitter) warnFar(vals map[int]*simValues) {
	for _, s := range f.slots {
		v, ok := vals[s.c].value(s.m)
		meas := f.cases[s.c].measured[s.m].v
		if !ok || math.Abs(math.Log(v/meas)) < math.Log(farFactor) {
			continue
		}
		f.cases[s.c].warn("%v is %.3g simulated with the starting profile, %.3g measured (%.2g times): the replay runs in another regime "+
			"than the benchmark (a queue that grows in one and not the other?); check the setup the files do not record "+
			"(--tp, --max-seqs, --max-batch-tokens, --engine): fitted as it is, this metric's error dominates the fit", s.m, v, meas, v/meas)
	}
}

// unfittable says, run by run, why each metric of the fitted runs cannot
// be fitted (fittable's reasons), a line a metric, for the error that no
// metric can.
func (f *fitter) unfittable() string {
	var sb strings.Builder
	for _, i := range f.fitIdx {
		c := f.cases[i]
		for _, m := range Metrics() {
			if ok, why := f.fittable(c, m); !ok {
				fmt.Fprintf(&sb, "\n  %s: %s: %s", c.where(), m, why)
			}
		}
	}
	return sb.String()
}

func (f *fitter) caseWarnings() string {
	var sb strings.Builder
	for _, c := range f.cases {
		for _, w := range c.Warnings {
			sb.WriteString("\n  " + w)
		}
	}
	return sb.String()
}

// errStop ends Nelder–Mead from its recorder when an evaluation failed.
var errStop = errors.New("calib: evaluation failed")

// minimize fits the chosen parameters (indexes in paramTable) by
// Nelder–Mead from the start and returns the fitted profile, its values
// rounded to sigDigits.
func (f *fitter) minimize(ctx context.Context, chosen []int, r0 []float64) (*sim.Profile, FitStats, error) {
	stats := FitStats{Method: "nelder-mead", MaxEvaluations: f.o.MaxEvals, Seeds: f.o.Seeds, Residuals: len(f.slots),
		ObjectiveBefore: sumSquares(r0)}
	if len(chosen) == 0 {
		stats.Status = "nothing to fit"
		stats.ObjectiveAfter = stats.ObjectiveBefore
		return f.start.Clone(), stats, nil
	}
	x0 := make([]float64, len(chosen))
	for k, j := range chosen {
		x0[k], _ = paramTable[j].toCoord(paramTable[j].get(f.start))
	}
	var evalErr error
	objective := func(p *sim.Profile) float64 {
		vals, _, err := f.evaluate(ctx, p, f.fitIdx, f.o.Seeds)
		if err != nil {
			evalErr = err
			return math.Inf(1)
		}
		return sumSquares(f.residuals(vals))
	}
	result, err := nelderMead(ctx, func(x []float64) float64 { return objective(f.apply(chosen, x, false)) }, x0, f.o.MaxEvals, &evalErr)
	if err != nil {
		return nil, stats, err
	}
	stats.Evaluations = result.Stats.FuncEvaluations
	stats.StoppedAtCap = result.Status == optimize.FunctionEvaluationLimit
	stats.Status = result.Status.String()
	p := f.apply(chosen, result.X, true)
	stats.ObjectiveAfter = objective(p)
	if evalErr != nil {
		return nil, stats, evalErr
	}
	if stats.ObjectiveAfter > stats.ObjectiveBefore {
		// Rounding to sigDigits cost more than the fit gained (a start
		// already at the optimum): keep the start's values.
		p = f.start.Clone()
		stats.ObjectiveAfter = stats.ObjectiveBefore
		stats.Status += "; the start was kept: the fitted values, rounded, fit no better"
	}
	return p, stats, nil
}

// apply returns the start with the chosen parameters at coordinates x,
// rounded when round is set.
func (f *fitter) apply(chosen []int, x []float64, round bool) *sim.Profile {
	return applyParams(f.start, chosen, x, round)
}

// applyParams returns a copy of start with the parameters chosen (indexes
// in paramTable) at coordinates x, rounded to sigDigits when round is set.
func applyParams(start *sim.Profile, chosen []int, x []float64, round bool) *sim.Profile {
	p := start.Clone()
	for k, j := range chosen {
		v := paramTable[j].toValue(x[k])
		if round {
			v = paramTable[j].round(v)
		}
		paramTable[j].set(p, v)
	}
	return p
}

// nelderMead minimises fn from x0 by Nelder–Mead within maxEvals
// evaluations, stopping when the best value improves by less than
// convergeRelative over convergeIterations updates. *evalErr is where fn
// records a failed evaluation: once set, fn is not called again and it is
// the error returned; a done ctx is too.
func nelderMead(ctx context.Context, fn func([]float64) float64, x0 []float64, maxEvals int, evalErr *error) (*optimize.Result, error) {
	problem := optimize.Problem{Func: func(x []float64) float64 {
		if *evalErr != nil {
			return math.Inf(1)
		}
		return fn(x)
	}}
	settings := &optimize.Settings{
		FuncEvaluations: maxEvals,
		Converger:       &optimize.FunctionConverge{Relative: convergeRelative, Iterations: convergeIterations},
		Recorder: recorder(func() error {
			if *evalErr != nil {
				return errStop
			}
			return ctx.Err()
		}),
	}
	result, err := optimize.Minimize(problem, x0, settings, &optimize.NelderMead{SimplexSize: simplexSize})
	switch {
	case *evalErr != nil:
		return nil, *evalErr
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("calib: fit: %w", err)
	}
	return result, nil
}

// recorder adapts a check to optimize.Recorder: Minimize stops with its
// error.
type recorder func() error

// Init implements optimize.Recorder.
func (r recorder) Init() error { return nil }

// Record implements optimize.Recorder.
func (r recorder) Record(*optimize.Location, optimize.Operation, *optimize.Stats) error { return r() }
