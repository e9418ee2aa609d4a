// Fidelity: the simulator's timing held against every published figure of
// published.yaml that can be simulated (issue 16, item 6). Each figure's
// setup becomes a simulation (fidelity_cases.go), run under the GPU's
// embedded profile and under the roofline; the vLLM paper's figures are
// reproduced from its scenario (fidelity_paper.go); the page
// docs/fidelity.md renders the lot (fidelity_doc.go).

package calib

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/internal/par"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// ErrFidelity is wrapped by every error of Fidelity: an input it cannot
// use (no dataset, a paper setup without its systems) or a simulation that
// failed.
var ErrFidelity = errors.New("calib: fidelity")

// FidelityTiming names the two step-time models every figure is simulated under.
type FidelityTiming int

// The step-time models, in the order of the page's columns.
const (
	TimingProfile  FidelityTiming = iota // the GPU's embedded sim.Profile under the figure's engine
	TimingRoofline                       // sim.DefaultRoofline (Config.Profile nil)
	numTimings
)

// String names the model as the page does.
func (t FidelityTiming) String() string {
	if t == TimingProfile {
		return "profile"
	}
	return "roofline"
}

// FidelityOptions is what Fidelity needs besides the dataset.
type FidelityOptions struct {
	// Open opens the benchmark file a figure was read from, by the
	// figure's setup.workload.local_copy ("shared/data/bench/NAME"). An
	// error wrapping fs.ErrNotExist (or a nil Open) lists the figures that
	// need it as not simulated, naming the file; any other error is
	// Fidelity's.
	Open func(localCopy string) (io.ReadCloser, error)
	// Paper is the vLLM paper's setup (sim/scenario builds it from
	// docs/scenarios/vllm-paper-fig13a.yaml); nil lists the paper's
	// figures as not simulated.
	Paper *PaperSetup
	// Workers bounds the simulations run at once (<= 0: GOMAXPROCS); the
	// result does not depend on it.
	Workers int
}

// FidelityRow is one published figure and what gpufrag makes of it.
type FidelityRow struct {
	Figure *Figure
	// Setup says in one line how the figure was simulated: model, GPU, TP,
	// engine, workload.
	Setup string
	// Note qualifies the comparison (how the metric was taken, an
	// approximation of the setup); empty when there is nothing to say.
	Note string
	// Skip says why the figure was not simulated; empty when it was.
	Skip string
	// Value is the simulated figure in the figure's unit, per timing
	// model; OK says it exists (an operator-level figure has no roofline
	// value: the roofline has no per-term breakdown).
	Value [numTimings]float64
	OK    [numTimings]bool
	// Fitted: the figure is named in the fitted_to of the profile it was
	// simulated under (or is from a file named there).
	Fitted bool
	// HeldOutValue is the figure simulated under the profile fitted without
	// its source (calib/loso), or, where the profile never saw the source,
	// under the profile itself: leave-one-source-out. HeldOutBy names the
	// calib/loso profile, "" for the profile itself.
	HeldOutValue float64
	HeldOutOK    bool
	HeldOutBy    string
	// Profile is the profile the figure was simulated under ("a100-40g
	// vllm-v0"), for the page.
	Profile string
}

// HeldOut reports whether the row counts towards the held-out targets:
// use holdout or fit (every figure has a held-out value, HeldOutValue, from
// a profile that never saw its source).
func (r *FidelityRow) HeldOut() bool {
	return r.Figure.Use == "holdout" || r.Figure.Use == "fit"
}

// HeldOutErr is (HeldOutValue − published) ÷ published; ok is false when
// there is no held-out value.
func (r *FidelityRow) HeldOutErr() (float64, bool) {
	if !r.HeldOutOK {
		return 0, false
	}
	return r.HeldOutValue/r.Figure.Value - 1, true
}

// RelErr is (simulated − published) ÷ published under t; ok is false when
// there is no simulated value.
func (r *FidelityRow) RelErr(t FidelityTiming) (float64, bool) {
	if !r.OK[t] {
		return 0, false
	}
	return r.Value[t]/r.Figure.Value - 1, true
}

// FidelityReport is every row, in the dataset's order, and the paper's
// reproduction.
type FidelityReport struct {
	Rows  []*FidelityRow
	Paper *PaperReport // nil without FidelityOptions.Paper
	// Profiles lists the profiles used, "gpu engine: what it was fitted to", sorted.
	Profiles []string
}

// FidelityMetrics are the metrics the targets are stated over:
// median TTFT, median TPOT and output throughput.
var FidelityMetrics = []string{"ttft_median", "tpot_median", "output_throughput"}

// Targets of issue 16 on figures not used for fitting.
const (
	// FidelityTargetMedian: held-out median |relative error| at most 10%.
	FidelityTargetMedian = 0.10
	// FidelityTargetMax: no held-out figure worse than 30%.
	FidelityTargetMax = 0.30
	// FidelityTargetPaper: each of Fig. 12a's and Fig. 13a's four values within 10%.
	FidelityTargetPaper = 0.10
)

// Fidelity simulates every figure of d that can be simulated, under both
// timing models. It is deterministic: the same dataset, files, paper setup
// and embedded profiles give the same report, whatever Workers is.
func Fidelity(ctx context.Context, d *Dataset, o FidelityOptions) (*FidelityReport, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: no dataset", ErrFidelity)
	}
	rep := &FidelityReport{}
	fitted, err := fidFittedIDs()
	if err != nil {
		return nil, err
	}
	losos, err := losoProfiles()
	if err != nil {
		return nil, err
	}
	var cases []*fidCase
	byKey := map[string]*fidCase{}
	files := map[string][]*workload.BenchResult{}
	type pending struct {
		row     *FidelityRow
		c, base *fidCase
		pick    fidPicker
	}
	share := func(c *fidCase) *fidCase {
		if c == nil {
			return nil
		}
		if old := byKey[c.key]; old != nil {
			return old
		}
		byKey[c.key] = c
		cases = append(cases, c)
		return c
	}
	var rows []pending
	for i := range d.Figures {
		f := &d.Figures[i]
		row := &FidelityRow{Figure: f}
		rep.Rows = append(rep.Rows, row)
		if f.Source == paperSource {
			continue // fidelity_paper.go
		}
		plan, err := fidTranslate(f, o.Open, files)
		if err != nil {
			return nil, err
		}
		row.Setup, row.Note, row.Skip, row.Profile = plan.setup, plan.note, plan.skip, plan.profileName()
		if row.Skip != "" {
			continue
		}
		held := losos[row.Profile+"|"+f.Source]
		if held != nil {
			row.HeldOutBy = row.Profile + " without " + f.Source
		}
		if plan.sim == nil { // an operator-level figure: the profile's breakdown, no run
			row.Value[TimingProfile], row.OK[TimingProfile] = plan.opValue, true
			row.HeldOutValue, row.HeldOutOK = plan.opValue, true
			if held != nil {
				row.HeldOutValue = plan.op(held)
			}
			continue
		}
		// Cases are keyed by source too, so a shared case has one held-out profile.
		plan.sim.heldOut = held
		if plan.base != nil {
			plan.base.heldOut = held
		}
		rows = append(rows, pending{row, share(plan.sim), share(plan.base), plan.pick})
	}
	if err := fidRunCases(ctx, cases, o.Workers); err != nil {
		return nil, err
	}
	for _, p := range rows {
		for t := range numTimings {
			v, ok := p.pick(&p.c.res[t])
			if p.base != nil {
				b, bok := p.pick(&p.base.res[t])
				v, ok = v/b, ok && bok
			}
			p.row.Value[t], p.row.OK[t] = v, ok
		}
		held := func(c *fidCase) *sim.Result {
			if c.heldOut != nil {
				return &c.resHeld
			}
			return &c.res[TimingProfile]
		}
		v, ok := p.pick(held(p.c))
		if p.base != nil {
			b, bok := p.pick(held(p.base))
			v, ok = v/b, ok && bok
		}
		p.row.HeldOutValue, p.row.HeldOutOK = v, ok
		if n := p.c.runNote(); n != "" {
			p.row.Note = strings.TrimPrefix(p.row.Note+"; "+n, "; ")
		}
	}
	if o.Paper != nil {
		if rep.Paper, err = fidPaper(ctx, o.Paper, o.Workers); err != nil {
			return nil, err
		}
	}
	fidPaperRows(rep)
	for _, r := range rep.Rows {
		if r.Figure.Source == paperSource {
			// FitFigures never fits the paper's figures: the profile never saw them.
			r.HeldOutValue, r.HeldOutOK = r.Value[TimingProfile], r.OK[TimingProfile]
		}
	}
	fidMarkFitted(rep, fitted)
	rep.Profiles = fidProfiles(rep)
	return rep, nil
}

// fidCase is one simulation several figures may share (the five figures of
// one benchmark file are one run).
type fidCase struct {
	key     string // what makes two cases the same simulation
	cfg     sim.Config
	profile *sim.Profile // the profile of TimingProfile
	heldOut *sim.Profile // the leave-one-source-out profile; nil: profile
	reqs    []workload.Request
	res     [numTimings]sim.Result
	resHeld sim.Result // under heldOut
}

// fidRunCases runs every case under both timing models, and under its
// held-out profile where it has one.
func fidRunCases(ctx context.Context, cases []*fidCase, workers int) error {
	type job struct {
		c    *fidCase
		t    FidelityTiming
		held bool
	}
	var jobs []job
	for _, c := range cases {
		for t := range numTimings {
			jobs = append(jobs, job{c, t, false})
		}
		if c.heldOut != nil {
			jobs = append(jobs, job{c, TimingProfile, true})
		}
	}
	res, err := par.Map(ctx, len(jobs), par.Options{Workers: workers}, func(_ context.Context, i int) (sim.Result, error) {
		j := jobs[i]
		p, what := j.c.profileFor(j.t), j.t.String()
		if j.held {
			p, what = j.c.heldOut, "held-out profile"
		}
		r, err := fidSimulate(j.c.cfg, p, j.c.reqs)
		if err != nil {
			return r, fmt.Errorf("%w: %s (%s): %w", ErrFidelity, j.c.key, what, err)
		}
		return r, nil
	})
	if err != nil {
		return err
	}
	for i, j := range jobs {
		if j.held {
			j.c.resHeld = res[i]
		} else {
			j.c.res[j.t] = res[i]
		}
	}
	return nil
}

// runNote says which requests of the runs did not complete as asked
// (rejected, failed on OOM, unfinished, outputs cut), per timing model;
// empty when all did.
func (c *fidCase) runNote() string {
	var parts []string
	for t := range numTimings {
		r := &c.res[t]
		var bad []string
		for _, x := range []struct {
			n    int
			what string
		}{{r.RequestsRejected, "rejected"}, {r.RequestsFailedOOM, "failed on OOM"}, {r.RequestsUnfinished, "unfinished"}, {r.OutputsTruncated, "with outputs cut"}} {
			if x.n > 0 {
				bad = append(bad, fmt.Sprintf("%d requests %s", x.n, x.what))
			}
		}
		if len(bad) > 0 {
			parts = append(parts, fmt.Sprintf("%s: %s", FidelityTiming(t), strings.Join(bad, ", ")))
		}
	}
	return strings.Join(parts, "; ")
}

func (c *fidCase) profileFor(t FidelityTiming) *sim.Profile {
	if t == TimingProfile {
		return c.profile
	}
	return nil
}

// fidSimulate runs reqs under cfg with profile p (nil: the roofline).
func fidSimulate(cfg sim.Config, p *sim.Profile, reqs []workload.Request) (sim.Result, error) {
	cfg.Profile = p
	e, err := sim.New(cfg, reqs)
	if err != nil {
		return sim.Result{}, err
	}
	res, err := e.Run()
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	return res, err
}

// fidFittedIDs returns, per profile ("gpu engine"), the ids in its fitted_to
// (none for an unfitted profile).
func fidFittedIDs() (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	for _, gpu := range sim.ProfileGPUs() {
		for _, e := range sim.EngineNames() {
			k, _ := sim.ParseEngine(e)
			p, err := sim.DefaultProfile(gpu, k)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrFidelity, err)
			}
			ids := map[string]bool{}
			for _, id := range p.FittedTo {
				if id != sim.Unfitted {
					ids[id] = true
				}
			}
			out[gpu+" "+e] = ids
		}
	}
	return out, nil
}

// fidMarkFitted sets Fitted: a figure is fitted when its id, or the base
// name of its local copy (gpufrag calibrate names a file
// "NAME@sha256:PREFIX"), is in the fitted_to of the profile it was
// simulated under.
func fidMarkFitted(rep *FidelityReport, fitted map[string]map[string]bool) {
	for _, r := range rep.Rows {
		ids := fitted[r.Profile]
		if len(ids) == 0 {
			continue
		}
		if ids[r.Figure.ID] {
			r.Fitted = true
		}
		if lc := r.Figure.Setup.Workload.LocalCopy; lc != "" {
			base := lc[strings.LastIndex(lc, "/")+1:]
			for id := range ids {
				if name, _, ok := strings.Cut(id, "@sha256:"); ok && name == base {
					r.Fitted = true
				}
			}
		}
	}
}

// fidProfiles names the profiles the rows were simulated under with what
// they were fitted to (how many figures, of which sources), sorted.
func fidProfiles(rep *FidelityReport) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rep.Rows {
		if r.Profile == "" || seen[r.Profile] {
			continue
		}
		seen[r.Profile] = true
		gpu, eng, _ := strings.Cut(r.Profile, " ")
		k, _ := sim.ParseEngine(eng)
		p, err := sim.DefaultProfile(gpu, k)
		if err != nil {
			continue
		}
		if slices.Equal(p.FittedTo, []string{sim.Unfitted}) {
			out = append(out, r.Profile+": the prior, fitted_to [unfitted]")
			continue
		}
		var srcs []string
		for _, id := range p.FittedTo {
			for _, row := range rep.Rows {
				if row.Figure.ID == id && !slices.Contains(srcs, row.Figure.Source) {
					srcs = append(srcs, row.Figure.Source)
				}
			}
		}
		slices.Sort(srcs)
		out = append(out, fmt.Sprintf("%s: fitted to %d figures of %s", r.Profile, len(p.FittedTo), strings.Join(srcs, ", ")))
	}
	slices.Sort(out)
	return out
}

// FidelitySummary is the median and largest |relative error| of a set of rows,
// per timing model.
type FidelitySummary struct {
	N      [numTimings]int
	Median [numTimings]float64
	Max    [numTimings]float64
}

// Summarize summarises the held-out rows with a metric of FidelityMetrics
// for the GPU gpu ("" for all): rows of use holdout or fit, under
// TimingProfile by their held-out values (leave-one-source-out), under the
// roofline by theirs; cross-check figures are reported but, as
// calib/README.md sets out, not in the targets.
func (rep *FidelityReport) Summarize(gpu string) FidelitySummary {
	var s FidelitySummary
	for t := range numTimings {
		var errs []float64
		for _, r := range rep.Rows {
			if !r.HeldOut() || !slices.Contains(FidelityMetrics, r.Figure.Metric) {
				continue
			}
			if gpu != "" && r.Figure.Setup.GPU != gpu {
				continue
			}
			e, ok := r.RelErr(t)
			if t == TimingProfile {
				e, ok = r.HeldOutErr()
			}
			if ok {
				errs = append(errs, math.Abs(e))
			}
		}
		s.N[t] = len(errs)
		s.Median[t], s.Max[t] = fidMedian(errs), fidMax(errs)
	}
	return s
}

// fidMedian is the median of xs (the mean of the middle two for an even
// count); 0 for none.
func fidMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func fidMax(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return slices.Max(xs)
}
