package sim_test

import (
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// TestFastPathsDefaultScenario runs the default scenario's runs on its
// first 300 requests with and without the engine's fast paths and compares
// the results and the allocators' and strategies' counters.
func TestFastPathsDefaultScenario(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() || invariants.Enabled {
		t.Skip("long")
	}
	p, err := scenario.Build(scenario.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests[:min(300, len(p.Requests))]
	var runs int64
	for _, c := range p.Configs {
		var res [2]sim.Result
		var es [2]*sim.Engine
		for i := range es {
			if es[i], err = sim.New(c, reqs); err != nil {
				t.Fatal(err)
			}
			if i == 1 {
				sim.NoFastPaths(es[i])
			}
			if res[i], err = es[i].Run(); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(res[0], res[1]) {
			t.Fatalf("%s on %s: results differ with the fast paths", c.KV, c.Alloc)
		}
		if a, b := es[0].Allocator().Stats(), es[1].Allocator().Stats(); a != b {
			t.Fatalf("%s on %s: allocator stats differ:\nfast %+v\nslow %+v", c.KV, c.Alloc, a, b)
		}
		if a, b := es[0].Strategy().Stats(), es[1].Strategy().Stats(); a != b {
			t.Fatalf("%s on %s: strategy stats differ:\nfast %+v\nslow %+v", c.KV, c.Alloc, a, b)
		}
		r, _ := sim.FastPathSteps(es[0])
		runs += r
	}
	if runs == 0 {
		t.Fatal("no decode runs in the default scenario")
	}
}
