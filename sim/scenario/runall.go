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
// allocator.
func (p *Plan) RunAll(ctx context.Context, workers int, onDone func()) ([]sim.Result, error) {
	return par.Map(ctx, len(p.Configs), par.Options{Workers: workers, OnDone: onDone},
		func(_ context.Context, i int) (sim.Result, error) {
			c := p.Configs[i]
			r, err := RunConfig(c, p.Requests)
			if err != nil {
				return r, fmt.Errorf("run %s on %s: %w", c.KV, c.Alloc, err)
			}
			return r, nil
		})
}
