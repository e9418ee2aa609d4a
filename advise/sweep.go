// Running the sweep: the simulation evaluator and the worker pool.
// See doc.go for the overview.

package advise

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/internal/par"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
	"github.com/gpufrag/gpufrag/workload"
)

// Evaluator simulates one candidate at one rate (requests per second).
// It must be deterministic and safe to call from several goroutines at
// once; tests inject fakes.
type Evaluator func(s Settings, rate float64) (Outcome, error)

// Workload is the trace every candidate replays, with arrival times that
// the search rescales to each rate it tries.
type Workload struct {
	trace   workload.Trace // arrival times drawn, not rescaled
	buckets []int          // the bucket sizes prepared (0 always)
	// NativeRPS is the trace's own mean rate, (n − 1) ÷ (last − first
	// arrival).
	NativeRPS float64
	// MeanOutputTokens is the requests' mean output length: at rate r
	// the trace offers r × MeanOutputTokens output tokens per second.
	MeanOutputTokens float64

	// The requests at the rates tried most recently, shared read-only by
	// the runs at that rate and bucket (sim.New copies what it keeps):
	// the candidates of a sweep try the same rates, so each (bucket, rate)
	// is rescaled once rather than once a run. Bounded by maxCachedRuns
	// entries and maxCachedRequests requests in all.
	mu     sync.Mutex
	cached []cachedRun
}

// cachedRun is the requests of one bucket size at one rate.
type cachedRun struct {
	bucket int
	rate   float64
	reqs   []workload.Request
}

// The bounds of Workload's cache: a sweep's workers run at a handful of
// rates at a time (the coarse pass tries the same bracket rates for every
// candidate), and 16 entries of the 19,366-request Azure trace are 32 MB.
const (
	maxCachedRuns     = 16
	maxCachedRequests = 2_000_000
)

// untimedRate and untimedSeed give a length-only trace arrival times:
// Poisson at 1 request per second from the arrival stream of scenario
// seed 1 (scenario.TraceAt, as a scenario's trace section draws them), so
// its "native" rate is 1 rps and the search rescales from there.
const (
	untimedRate = 1.0
	untimedSeed = 1
)

// NewWorkload prepares t (which it copies) for the given bucket sizes. A
// trace without arrival times gets Poisson arrivals at 1 rps from a fixed
// seed.
func NewWorkload(t *workload.Trace, buckets []int) (*Workload, error) {
	if len(t.Requests) < 2 {
		return nil, fmt.Errorf("%w: trace %s: %d requests; a rate search needs at least 2", ErrBadSpace, t.Name, len(t.Requests))
	}
	c := *t
	if c.Timed {
		c.Requests = slices.Clone(t.Requests)
	} else {
		reqs, err := scenario.TraceAt(t, untimedRate, 0, untimedSeed)
		if err != nil {
			return nil, err
		}
		c.Requests, c.Timed = reqs, true
	}
	n := len(c.Requests)
	span := float64(c.Requests[n-1].Arrival-c.Requests[0].Arrival) / 1e9
	if !(span > 0) {
		return nil, fmt.Errorf("%w: trace %s: every request arrives at the same time; a rate search needs arrivals spread over time, "+
			"and advise has no --rate: give a trace with arrival times, or the requests' lengths alone in a format without times "+
			"(a Vidur CSV of prompt and output tokens), whose arrivals advise draws itself (Poisson at 1 req/s)", ErrBadSpace, t.Name)
	}
	// Errors of the rescaling name the trace "trace", as they always have.
	c.Name = "trace"
	out := 0
	for i := range c.Requests {
		out += c.Requests[i].OutputTokens
	}
	w := &Workload{trace: c, buckets: []int{0}, NativeRPS: float64(n-1) / span, MeanOutputTokens: float64(out) / float64(n)}
	for _, b := range buckets {
		if b <= 0 || slices.Contains(w.buckets, b) {
			continue
		}
		// Bucketed once here for its error (a size the workload refuses);
		// the runs bucket their own copies (at).
		if _, err := scenario.TraceAt(&w.trace, 0, b, 0); err != nil {
			return nil, fmt.Errorf("bucket %d: %w", b, err)
		}
		w.buckets = append(w.buckets, b)
	}
	return w, nil
}

// Requests returns the trace's requests (bucket 0) with their native
// arrivals; the caller must not modify them.
func (w *Workload) Requests() []workload.Request { return w.trace.Requests }

// at returns the requests for bucket b rescaled to rate (scenario.TraceAt),
// shared with other runs at that rate: the caller must not modify them.
func (w *Workload) at(b int, rate float64) ([]workload.Request, error) {
	if !slices.Contains(w.buckets, b) {
		return nil, fmt.Errorf("%w: bucket %d was not prepared", ErrBadSpace, b)
	}
	w.mu.Lock()
	for _, c := range w.cached {
		if c.bucket == b && c.rate == rate {
			w.mu.Unlock()
			return c.reqs, nil
		}
	}
	w.mu.Unlock()
	reqs, err := scenario.TraceAt(&w.trace, rate, b, 0)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	total := len(reqs)
	for _, c := range w.cached {
		total += len(c.reqs)
	}
	// Oldest out first, until the new entry fits the bounds.
	for len(w.cached) > 0 && (len(w.cached) >= maxCachedRuns || total > maxCachedRequests) {
		total -= len(w.cached[0].reqs)
		w.cached = slices.Delete(w.cached, 0, 1)
	}
	if total <= maxCachedRequests {
		w.cached = append(w.cached, cachedRun{b, rate, reqs})
	}
	return reqs, nil
}

// SimEvaluator returns an Evaluator that runs package sim on w with the
// engine config base (model, GPU, TP, limits) and the candidate's
// settings. Each call builds its own engine, so calls may run in parallel.
func SimEvaluator(base sim.Config, w *Workload) Evaluator {
	return func(s Settings, rate float64) (Outcome, error) {
		c, err := s.Apply(base)
		if err != nil {
			return Outcome{}, err
		}
		reqs, err := w.at(s.Bucket, rate)
		if err != nil {
			return Outcome{}, err
		}
		e, err := sim.New(c, reqs)
		if err != nil {
			if badSpec(err) {
				return Outcome{}, err
			}
			return Outcome{}, fmt.Errorf("%w: %w", ErrCannotRun, err)
		}
		r, err := e.Run()
		if err != nil {
			return Outcome{}, err
		}
		o := OutcomeOf(r, rate)
		o.OfferedTokensPerS = round6(rate * w.MeanOutputTokens)
		return o, nil
	}
}

// OutcomeOf extracts the figures the advice uses from a sim result.
func OutcomeOf(r sim.Result, rate float64) Outcome {
	return Outcome{
		RateRPS: rate, StoppedEarly: r.StoppedEarly, OOMs: r.RequestsFailedOOM, ActivationOOMs: r.ActivationOOMs,
		Rejected: r.RequestsRejected, Unfinished: r.RequestsUnfinished, Completed: r.RequestsCompleted,
		Total: r.RequestsTotal, Preemptions: r.Preemptions,
		FragRate: FragRate{P50: r.FragRate.P50, P99: r.FragRate.P99}, HealthMin: r.HealthMin,
		TTFTP99: r.TTFT.P99, TPOTP99: r.TPOT.P99, ITLP99: r.ITL.P99, OutputTokensPerS: r.OutputTokensPerS, BatchSizeMean: r.BatchSizeMean,
		PeakReservedBytes: r.PeakReservedBytes,
	}
}

// ErrCannotRun marks a candidate whose engine cannot be built on this model
// and GPU (no memory left for KV at its utilization, a paged pool that does
// not fit); such a candidate is reported as not eligible, with the reason,
// instead of stopping the sweep.
var ErrCannotRun = errors.New("advise: candidate cannot run")

// badSpec reports an error in a KV strategy or allocator spec: a mistake in
// the sweep, not a property of the candidate.
func badSpec(err error) bool {
	return errors.Is(err, alloc.ErrBadSpec) || errors.Is(err, strategy.ErrBadSpec)
}

// Check builds every candidate's engine on no requests before the sweep
// starts. A bad KV or allocator spec is an error naming the candidate; so
// is a sweep in which no candidate can run at all (the model does not fit).
// Candidates that cannot run for lack of memory are left to Run, which
// reports them as not eligible.
func Check(base sim.Config, cands []Candidate) error {
	seen := map[settingsKey]bool{}
	var firstErr error
	runnable := false
	for i, c := range cands {
		s := c.Settings
		s.Bucket = 0
		if seen[s.key()] {
			continue
		}
		seen[s.key()] = true
		cfg, err := s.Apply(base)
		if err == nil {
			_, err = sim.New(cfg, nil)
		}
		switch {
		case err == nil:
			runnable = true
		case badSpec(err):
			return fmt.Errorf("candidate %d (%s): %w", i, c.Settings, err)
		case firstErr == nil:
			firstErr = fmt.Errorf("candidate %d (%s): %w", i, c.Settings, err)
		}
	}
	if !runnable && firstErr != nil {
		return fmt.Errorf("no candidate can run: %w", firstErr)
	}
	return nil
}

// Options control Run.
type Options struct {
	SLO    SLO
	Search Search
	// Workers is the number of candidates searched at once (0:
	// GOMAXPROCS). Results do not depend on it.
	Workers int
	// OnDone, when set, is called after each candidate's search (from the
	// worker goroutines; it must be safe for concurrent use).
	OnDone func()
	// Rerun, when set, evaluates a rate whole (the evaluator may stop a
	// run early once it is certain to fail, sim.Config.EarlyStop): a
	// candidate that held at no rate is reported with the figures of its
	// lowest rate, so that rate is run again with Rerun when its run
	// stopped early.
	Rerun Evaluator
	// Prune searches coarse to fine: every candidate's bracket first (no
	// bisection), then bisection only for the candidates whose bracket
	// reaches within the tie tolerance of the second-best rate that held
	// among those that can be eligible. The others cannot be recommended
	// or runner-up, so the recommendation and runner-up are those of a
	// full search (TestPruneSameAdvice); a pruned candidate is reported
	// with its bracket's ends (its rate known to a factor of 2). Needs
	// every candidate in one Run (not a shard).
	Prune bool
}

// Run searches the sustainable rate of each candidate whose index is in
// which (all when which is nil), up to Options.Workers at once, and
// returns the results in the order of which. Each candidate's search is
// sequential and deterministic, so the results are the same for any
// number of workers.
func Run(cands []Candidate, which []int, eval Evaluator, o Options) ([]Result, error) {
	if which == nil {
		which = make([]int, len(cands))
		for i := range which {
			which[i] = i
		}
	}
	if err := o.Search.Validate(); err != nil {
		return nil, err
	}
	for _, i := range which {
		if i < 0 || i >= len(cands) {
			return nil, fmt.Errorf("%w: candidate %d of %d", ErrBadSpace, i, len(cands))
		}
	}
	ctx := context.Background()
	if !o.Prune || o.Search.BisectSteps == 0 {
		return par.Map(ctx, len(which), par.Options{Workers: o.Workers, OnDone: o.OnDone},
			func(_ context.Context, j int) (Result, error) {
				f, err := search(cands[which[j]], eval, o.SLO, o.Search)
				return finish(cands, which[j], f, err, o)
			})
	}
	coarse := o.Search
	coarse.BisectSteps = 0
	type found struct {
		f   Found
		err error
	}
	fs, err := par.Map(ctx, len(which), par.Options{Workers: o.Workers},
		func(_ context.Context, j int) (found, error) {
			f, err := search(cands[which[j]], eval, o.SLO, coarse)
			if err != nil && !errors.Is(err, ErrCannotRun) {
				return found{}, fmt.Errorf("candidate %d (%s): %w", which[j], cands[which[j]].Settings, err)
			}
			return found{f, err}, nil
		})
	if err != nil {
		return nil, err
	}
	// The second-best lower end among the candidates that can be eligible
	// (held, fewest rejections, deployable): a final rate below it by more
	// than the tolerance is neither tied with the best nor above the
	// runner-up.
	minRej := -1
	for _, x := range fs {
		if x.err == nil && x.f.Held && (minRej < 0 || x.f.Sustainable.Rejected < minRej) {
			minRej = x.f.Sustainable.Rejected
		}
	}
	var los []float64
	for j, x := range fs {
		if x.err == nil && x.f.Held && x.f.Sustainable.Rejected == minRej && !isOracle(cands[which[j]].Settings.KV) {
			los = append(los, x.f.Sustainable.RateRPS)
		}
	}
	second := 0.0
	if len(los) >= 2 {
		slices.Sort(los)
		second = los[len(los)-2]
	}
	tol := tieTolerance(o.Search)
	return par.Map(ctx, len(which), par.Options{Workers: o.Workers, OnDone: o.OnDone},
		func(_ context.Context, j int) (Result, error) {
			x := fs[j]
			if x.err == nil && x.f.Held && x.f.Failed != nil && x.f.Failed.RateRPS*tol > second*(1-1e-12) {
				c := cands[which[j]]
				x.f, x.err = ResumeSustainable(func(rate float64) (Outcome, error) { return eval(c.Settings, rate) }, o.SLO, x.f, o.Search.BisectSteps)
			}
			return finish(cands, which[j], x.f, x.err, o)
		})
}

// search runs one candidate's search under s.
func search(c Candidate, eval Evaluator, slo SLO, s Search) (Found, error) {
	return FindSustainable(func(rate float64) (Outcome, error) { return eval(c.Settings, rate) }, slo, s)
}

// finish turns candidate i's search into its Result: a candidate that
// cannot run is reported so, and one that held at no rate has its lowest
// rate run whole (Options.Rerun) when that run stopped early.
func finish(cands []Candidate, i int, f Found, err error, o Options) (Result, error) {
	c := cands[i]
	if errors.Is(err, ErrCannotRun) {
		return Result{Index: i, Candidate: c, Evaluations: f.Evaluations, FailReason: cannotRunReason(err)}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("candidate %d (%s): %w", i, c.Settings, err)
	}
	if !f.Held && f.Failed != nil && f.Failed.StoppedEarly != "" && o.Rerun != nil {
		rate := f.Failed.RateRPS
		whole, err := o.Rerun(c.Settings, rate)
		if err != nil {
			return Result{}, fmt.Errorf("candidate %d (%s): %w at %.4g rps: %w", i, c.Settings, ErrEvaluate, rate, err)
		}
		whole.RateRPS = rate
		_, why := whole.Check(o.SLO)
		f.Failed, f.Why = &whole, why
		f.Sustainable = whole
		f.Sustainable.RateRPS = 0 // Evaluations counts the search's runs, not this re-run
	}
	r := Result{Index: i, Candidate: c, Outcome: f.Sustainable, Held: f.Held, Evaluations: f.Evaluations,
		SustainableRPS: f.Sustainable.RateRPS, Multiplier: round6(f.Sustainable.RateRPS / o.Search.StartRPS)}
	if f.Failed != nil {
		r.FailedAtRPS, r.FailReason = f.Failed.RateRPS, f.Why
	}
	return r, nil
}

// cannotRunReason is the evidence for a candidate that cannot run: the
// engine's own message, without the wrapping.
func cannotRunReason(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ErrCannotRun.Error()+": "); i >= 0 {
		msg = msg[i+len(ErrCannotRun.Error())+2:]
	}
	return "cannot run: " + msg
}

// round6 keeps JSON short and stable: six significant digits.
func round6(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := math.Pow(10, 5-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}
