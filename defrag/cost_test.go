package defrag_test

import (
	"errors"
	"testing"

	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

func TestCost(t *testing.T) {
	g := model.GPU{Name: "test", MemBandwidth: 1e12} // 1 TB/s
	for _, c := range []struct {
		name  string
		plan  defrag.Plan
		model defrag.CostModel
		want  int64
	}{
		{"empty", defrag.Plan{}, defrag.CostModel{}, 0},
		// 2 × 1e9 B / (1e12 × 0.8) = 2.5 ms, plus 5 µs for the move.
		{"one move", defrag.Plan{BytesMoved: 1e9, Moves: make([]defrag.Move, 1)}, defrag.CostModel{}, 2_500_000 + 5_000},
		// Full efficiency, 1 µs launches, 3 moves: 2 ms + 3 µs.
		{"custom", defrag.Plan{BytesMoved: 1e9, Moves: make([]defrag.Move, 3)}, defrag.CostModel{Efficiency: 1, LaunchNs: 1_000}, 2_000_000 + 3_000},
		// Pages only: 4 × 20 µs.
		{"pages", defrag.Plan{UnmapPages: 4}, defrag.CostModel{}, 80_000},
		// An efficiency outside (0, 1] falls back to the default.
		{"bad efficiency", defrag.Plan{BytesMoved: 1e9}, defrag.CostModel{Efficiency: 3}, 2_500_000},
	} {
		if got := defrag.Cost(c.plan, g, c.model); got != c.want {
			t.Errorf("%s: Cost = %d ns, want %d", c.name, got, c.want)
		}
	}
	// BytesWithin inverts CopyCost for one move.
	budget := int64(1_000_000)
	n := defrag.BytesWithin(budget, g, defrag.CostModel{})
	if got := defrag.CopyCost(n, 1, g, defrag.CostModel{}); got > budget || defrag.CopyCost(n+1000, 1, g, defrag.CostModel{}) <= budget {
		t.Errorf("BytesWithin(%d) = %d, which costs %d", budget, n, got)
	}
	if defrag.BytesWithin(1_000, g, defrag.CostModel{}) != 0 {
		t.Error("a budget below one launch must allow no bytes")
	}
}

func TestParseGoal(t *testing.T) {
	for _, c := range []struct {
		in   string
		want defrag.Goal
		err  bool
	}{
		{"compact", defrag.Goal{Kind: defrag.GoalCompact}, false},
		{" fit:2GiB ", defrag.Goal{Kind: defrag.GoalFit, Size: 2 * mem.GiB}, false},
		{"fit:512", defrag.Goal{Kind: defrag.GoalFit, Size: 512}, false},
		{"fit:0", defrag.Goal{}, true},
		{"fit:lots", defrag.Goal{}, true},
		{"shrink", defrag.Goal{}, true},
	} {
		g, err := defrag.ParseGoal(c.in)
		if (err != nil) != c.err || (err == nil && g != c.want) || (err != nil && !errors.Is(err, defrag.ErrGoal)) {
			t.Errorf("ParseGoal(%q) = %+v, %v", c.in, g, err)
		}
		if err == nil {
			if back, _ := defrag.ParseGoal(g.String()); back != g {
				t.Errorf("%q does not round-trip through String (%q)", c.in, g.String())
			}
		}
	}
}
