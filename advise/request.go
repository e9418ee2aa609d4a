package advise

import (
	"fmt"

	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// Request is one advise run with its inputs parsed and checked: the trace
// read once, the engine configuration every candidate starts from, the
// space, the SLO and the search. Advise runs it; `gpufrag advise` only
// builds it from flags and prints what comes back.
type Request struct {
	// Trace is the workload, read and checked (workload.Read).
	Trace *workload.Trace
	// Inputs describes the run as the report records it: Trace's File,
	// SHA256 and MaxRows, Model, ModelID, GPU, TP, KVDType, MaxContext,
	// StepTime, EngineVersion, SLO, Space, and Search's BracketSteps and
	// BisectSteps with StartRPS the first rate tried (0: the trace's own
	// mean rate). Advise fills the rest: the trace's format, counts and
	// rate, the candidates and RefinedFrom, and sets ModelID to a
	// benchmark run's own model id where it agrees with the model
	// (RunModelID).
	Inputs Inputs
	// Base is the engine configuration every candidate starts from (model,
	// GPU, TP, step-time profile, KV dtype, context).
	Base sim.Config
	// PrefixCachingGiven says the space's prefix-caching values were
	// chosen by the user; otherwise "off" is tried only where the trace
	// shares prefixes (without prefix ids no request can hit the cache, and
	// off would only repeat the runs with it on).
	PrefixCachingGiven bool
	// Refine, when set, is the first-stage report whose best RefineTop
	// setups this run crosses with every utilization and bucket (Refine);
	// it must be advice for the same trace, model, GPU and TP.
	Refine    *Report
	RefineTop int
	// Shard and Shards select the candidates with index % Shards == Shard
	// (ShardIndices); Shards 0 means 1.
	Shard, Shards int
	// PartialOnly stops after the partial result (a shard of a larger
	// run): Advise returns no report.
	PartialOnly bool
	// Exhaustive bisects every candidate's rate, not only those that can
	// reach the top two (Options.Prune off; always off with a partial
	// result, which needs every bracket).
	Exhaustive bool
	// Extend is the most candidates the search may add past the space
	// when nothing meets the SLO (Follow); 0: none.
	Extend int
	// Workers is the number of candidates searched at once (0:
	// GOMAXPROCS); the results do not depend on it.
	Workers int
}

// Hooks let the caller show progress and keep the partial result; every
// field is optional.
type Hooks struct {
	// Planned is called once the candidates are known, before the search,
	// with the run's inputs and the indices of the candidates this run
	// searches.
	Planned func(in Inputs, run []int)
	// Done is called after each candidate's search (from the worker
	// goroutines: it must be safe for concurrent use), Searched once the
	// search of the space is over, whether it failed or not.
	Done     func()
	Searched func()
	// Partial, when set, receives the partial result of the candidates
	// this run searched (for `gpufrag advise merge`), before any search
	// past the space; an error it returns ends the run.
	Partial func(*Partial) error
	// Extending is called with the candidates of each round of the search
	// past the space (Follow).
	Extending func(next []Candidate)
}

// BadRequestError is a request Advise cannot run as given: an invalid
// space, candidates no engine can run, or an invalid search (a usage error,
// exit status 2 for the CLI).
type BadRequestError struct{ Err error }

func (e *BadRequestError) Error() string { return e.Err.Error() }
func (e *BadRequestError) Unwrap() error { return e.Err }

// RefineError is a Request.Refine report that does not fit this run, or
// that Refine cannot cross; the caller names the file it came from.
type RefineError struct{ Err error }

func (e *RefineError) Error() string { return e.Err.Error() }
func (e *RefineError) Unwrap() error { return e.Err }

// Advise runs a request: it draws the candidates (Space.Candidates, or
// Refine's), checks them against the engine (Check), searches the
// sustainable rate of each (Run; each run stops once it is certain to
// fail, and the lowest rate of a candidate that never held is run whole
// again for its figures), hands the partial result to Hooks.Partial, goes
// on past the space where nothing meets the SLO (Follow) and says whether
// short outputs are why TPOT binds (ExplainShortOutputs). With
// Request.PartialOnly it returns a nil report after the partial result.
func Advise(req Request, h Hooks) (*Report, error) {
	t, in, space := req.Trace, req.Inputs, req.Inputs.Space
	w, err := NewWorkload(t, space.Buckets)
	if err != nil {
		return nil, err
	}
	if !req.PrefixCachingGiven && len(space.PrefixCaching) > 1 && !sharesPrefixes(t) {
		space.PrefixCaching = space.PrefixCaching[:1]
	}
	cands, err := space.Candidates()
	if err != nil {
		return nil, &BadRequestError{err}
	}
	if prev := req.Refine; prev != nil {
		pt := prev.Inputs
		if pt.Trace.SHA256 != in.Trace.SHA256 || pt.Trace.Run != in.Trace.Run || pt.Model != in.Model || pt.GPU != in.GPU || pt.TP != in.TP {
			return nil, &RefineError{fmt.Errorf("advice for %s (sha256 %.12s…%s), %s on %s tp %d; this run is %s (sha256 %.12s…%s), %s on %s tp %d",
				pt.Trace.File, pt.Trace.SHA256, runOf(pt.Trace), pt.Model, pt.GPU, pt.TP, in.Trace.File, in.Trace.SHA256, runOf(in.Trace), in.Model, in.GPU, in.TP)}
		}
		if cands, err = Refine(prev, space, req.RefineTop); err != nil {
			return nil, &RefineError{err}
		}
		in.RefinedFrom = prev.Digest
	}
	if err := Check(req.Base, cands); err != nil {
		return nil, &BadRequestError{err}
	}
	if in.Search.StartRPS == 0 {
		in.Search.StartRPS = w.NativeRPS
	}
	if err := in.Search.Validate(); err != nil {
		return nil, &BadRequestError{err}
	}
	if b := t.Bench; b != nil {
		// The run's own model id, where it agrees with the model, is
		// what was served: the deploy command names it.
		in.ModelID = RunModelID(in.ModelID, b.Model, req.Base.Model)
	}
	switch {
	case !t.Timed:
		in.Trace.Arrivals = "assigned"
	case t.Bench != nil && t.DrawnFrom != nil:
		in.Trace.Arrivals, in.Trace.RequestRate = "drawn", t.Bench.RequestRate
	}
	in.Trace.Format, in.Trace.Requests, in.Trace.Skipped, in.Trace.NativeRPS = t.Format.String(), len(t.Requests), t.Skipped, w.NativeRPS
	in.Space, in.Candidates = space, cands
	shards := max(req.Shards, 1)
	which := ShardIndices(len(cands), req.Shard, shards)
	if h.Planned != nil {
		h.Planned(in, which)
	}
	stopping := req.Base
	stopping.EarlyStop = in.SLO.earlyStop()
	eval := SimEvaluator(stopping, w)
	partial := req.PartialOnly || h.Partial != nil
	opts := Options{SLO: in.SLO, Search: in.Search, Workers: req.Workers, OnDone: h.Done, Rerun: SimEvaluator(req.Base, w),
		// Coarse to fine needs every candidate's bracket: not in a shard.
		Prune: !partial && !req.Exhaustive}
	results, err := Run(cands, which, eval, opts)
	if h.Searched != nil {
		h.Searched()
	}
	if err != nil {
		return nil, err
	}
	if h.Partial != nil {
		if err := h.Partial(NewPartial(in, req.Shard, shards, results)); err != nil {
			return nil, err
		}
	}
	if req.PartialOnly {
		return nil, nil
	}
	// Where nothing meets the SLO, the search goes on in the direction its
	// advice names, then says whether short outputs are why TPOT binds.
	opts.OnDone = nil
	_, _, rep, err := Follow(in, results, eval, opts, req.Extend, h.Extending)
	if err != nil {
		return nil, err
	}
	if err := ExplainShortOutputs(rep, req.Base, w); err != nil {
		return nil, err
	}
	return rep, nil
}

// sharesPrefixes reports whether any request of t carries prefix ids (the
// only requests a prefix cache can serve).
func sharesPrefixes(t *workload.Trace) bool {
	for i := range t.Requests {
		if len(t.Requests[i].PrefixHashes) > 0 {
			return true
		}
	}
	return false
}

// runOf names the benchmark run a trace took (--run), for messages; "" for
// a file of one.
func runOf(t TraceInfo) string {
	if t.Run == 0 {
		return ""
	}
	return fmt.Sprintf(", run %d", t.Run)
}
