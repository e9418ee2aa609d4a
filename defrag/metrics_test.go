package defrag_test

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
)

// TestPlanMetricsMatchFrag checks that the metrics a plan reports are
// frag.Compute's, Before on the input and After on Plan.Layout (PlanLayout
// derives After from Before and the moved layout instead of recomputing it),
// on fragmented layouts of every allocator with relocation and every goal.
func TestPlanMetricsMatchFrag(t *testing.T) {
	for _, c := range []struct {
		spec string
		goal defrag.Goal
	}{
		{"caching", defrag.Goal{Kind: defrag.GoalCompact}},
		{"caching", defrag.Goal{Kind: defrag.GoalFit, Size: 20 * mem.MiB}},
		{"caching:expandable_segments:True", defrag.Goal{Kind: defrag.GoalCompact}},
		{"sizeclass:64KiB/1MiB/16MiB", defrag.Goal{Kind: defrag.GoalCompact}},
		{"arena:0.9", defrag.Goal{Kind: defrag.GoalCompact}},
		{"arena:0.9", defrag.Goal{Kind: defrag.GoalFit}}, // the largest free block + 4 MiB
	} {
		for seed := range uint64(3) {
			l := benchLayout(t, c.spec, 1500, seed)
			if c.goal.Kind == defrag.GoalFit && c.goal.Size == 0 {
				c.goal.Size = frag.LargestFreeBlock(l) + 4*mem.MiB
			}
			p, err := defrag.PlanLayout(l, c.goal, defrag.Options{Allocator: registry.MustParse(c.spec)})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Moves) == 0 && p.UnmapPages == 0 && c.spec != "caching:expandable_segments:True" {
				t.Errorf("%s %s seed %d: no moves, the test checks nothing", c.spec, c.goal, seed)
			}
			if want := frag.Compute(l); p.Before != want {
				t.Errorf("%s %s seed %d: Before\n%+v\nwant\n%+v", c.spec, c.goal, seed, p.Before, want)
			}
			if want := frag.Compute(p.Layout); p.After != want {
				t.Errorf("%s %s seed %d: After\n%+v\nwant\n%+v", c.spec, c.goal, seed, p.After, want)
			}
		}
	}
}
