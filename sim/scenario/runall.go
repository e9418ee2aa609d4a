package scenario

import (
	"context"
	"fmt"

	"github.com/gpufrag/gpufrag/internal/par"
	"github.com/gpufrag/gpufrag/sim"
)

// RunAll simulates every config of p (RunConfig), up to workers at once
// (internal/par; <= 0: GOMAXPROCS), calls onDone, when set, after each, and
// returns the results in the plan's order. Each run is single-threaded and
// deterministic and the runs share the read-only requests, so the results
// do not depend on workers. A run's error names its KV strategy and
// allocator; when every run of several fails with the same error (a
// setting they share, such as a weight dtype), it is said once.
func (p *Plan) RunAll(ctx context.Context, workers int, onDone func()) ([]sim.Result, error) {
	rs, err := par.Map(ctx, len(p.Configs), par.Options{Workers: workers, OnDone: onDone},
		func(_ context.Context, i int) (sim.Result, error) {
			c := p.Configs[i]
			r, err := RunConfig(c, p.Requests)
			if err != nil {
				return r, &runError{kv: c.KV.String(), alloc: c.Alloc.String(), err: err}
			}
			return r, nil
		})
	return rs, sameForAll(err, len(p.Configs))
}

// runError is a run's error, naming its KV strategy and allocator.
type runError struct {
	kv, alloc string
	err       error
}

func (e *runError) Error() string { return fmt.Sprintf("run %s on %s: %v", e.kv, e.alloc, e.err) }
func (e *runError) Unwrap() error { return e.err }

// sameForAll returns err, the joined errors of n runs, as one error when
// all n failed alike (n > 1); else err as it is.
func sameForAll(err error, n int) error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok || n < 2 {
		return err
	}
	errs := j.Unwrap()
	if len(errs) != n {
		return err
	}
	var first *runError
	for _, e := range errs {
		re, ok := e.(*runError)
		if !ok || (first != nil && re.err.Error() != first.err.Error()) {
			return err
		}
		if first == nil {
			first = re
		}
	}
	return fmt.Errorf("every run (%d): %w", n, first.err)
}
