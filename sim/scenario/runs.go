package scenario

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
)

// PairError is a KV strategy PairRuns cannot pair. Index is its position in
// the strategies given. With Explicit, the allocators were asked for and
// none of them can run it (Err: strategy.CheckPair's reason with the
// first; KV.DefaultAlloc is the one that could); without, no allocator can
// run it at all (Err: AllocsFor's).
type PairError struct {
	Index    int
	KV       strategy.Spec
	Explicit bool
	Err      error
}

func (e *PairError) Error() string {
	if e.Explicit {
		return fmt.Sprintf("kv %s cannot run on the allocators given: %v; add %s", e.KV, e.Err, e.KV.DefaultAlloc())
	}
	return e.Err.Error()
}

func (e *PairError) Unwrap() error { return e.Err }

// TooManyRunsError is a crossing of more than MaxRuns runs.
type TooManyRunsError struct{ Runs int }

func (e *TooManyRunsError) Error() string {
	return fmt.Sprintf("%d runs, more than %d (scenario.MaxRuns): each run simulates the whole workload again", e.Runs, MaxRuns)
}

// PairRuns crosses KV strategies with allocators by AllocsFor (the rule of
// `gpufrag simulate --kv ... --alloc ...`): each strategy runs on every
// allocator of allocs it can run on, in order. A strategy none of them can
// run (vmm:P on caching) runs on its DefaultAlloc when the allocators were
// not asked for (explicit false: allocs are the defaults); when they were,
// the pair is impossible, a *PairError, since running it anyway would be a
// silent swap. More than MaxRuns runs is a *TooManyRunsError.
func PairRuns(kvs []strategy.Spec, allocs []registry.Spec, explicit bool) ([]Run, error) {
	var runs []Run
	for i, ks := range kvs {
		fit, ok, err := AllocsFor(ks, allocs)
		if err != nil {
			return nil, &PairError{Index: i, KV: ks, Err: err}
		}
		if explicit && !ok {
			return nil, &PairError{Index: i, KV: ks, Explicit: true, Err: strategy.CheckPair(ks, allocs[0])}
		}
		for _, a := range fit {
			runs = append(runs, Run{KV: KVSpec{Spec: ks}, Alloc: AllocSpec{Spec: a}})
		}
	}
	if len(runs) > MaxRuns {
		return nil, &TooManyRunsError{len(runs)}
	}
	return runs, nil
}

// SetRate sets the request rate of whichever workload w holds (a trace's
// rescaling or Poisson rate, generated requests' or sessions' arrival
// rate); a workload of none is left as it is.
func (w *Workload) SetRate(rps float64) {
	switch {
	case w.Trace != nil:
		w.Trace.Rate = rps
	case w.Requests != nil:
		w.Requests.Rate = rps
	case w.Sessions != nil:
		w.Sessions.Rate = rps
	}
}

// UseTrace replaces s's workload with the trace tr, which runs to its end
// unless keepDuration (the caller set a duration of its own).
func (s *Scenario) UseTrace(tr *Trace, keepDuration bool) {
	s.Workload = Workload{Trace: tr}
	if !keepDuration {
		s.Duration = 0
	}
}

// SetOnOOM sets the engine's policy on an out-of-memory error for every
// run: the runs' own on_oom give way to it.
func (s *Scenario) SetOnOOM(policy string) {
	s.Engine.OnOOM = policy
	for i := range s.Runs {
		s.Runs[i].OnOOM = ""
	}
}
