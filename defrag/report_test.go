package defrag_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/model"
)

// TestNewReport: the move list is cut at maxMoves (-1: all), notes and
// moves are [] rather than null in JSON, a layout file has no device, and
// the pause is Cost's.
func TestNewReport(t *testing.T) {
	l := benchLayout(t, "caching", 500, 3)
	p, err := defrag.PlanLayout(l, defrag.Goal{}, defrag.Options{Allocator: registry.MustParse("caching")})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Moves) < 3 {
		t.Fatalf("the bench layout needs moves for this test: %d", len(p.Moves))
	}
	gpu, err := model.LookupGPU("h100-80g")
	if err != nil {
		t.Fatal(err)
	}
	cm := defrag.DefaultCostModel
	for _, maxMoves := range []int{-1, 0, 2} {
		r := defrag.NewReport("l.json", "layout", 3, gpu, cm, &p, maxMoves)
		want := len(p.Moves)
		if maxMoves >= 0 {
			want = maxMoves
		}
		if len(r.MoveList) != want || r.Moves != len(p.Moves) || r.Device != 0 || r.Goal != p.Goal.String() {
			t.Errorf("maxMoves %d: %d listed of %d, device %d, goal %q", maxMoves, len(r.MoveList), r.Moves, r.Device, r.Goal)
		}
		if r.PauseS != float64(defrag.Cost(p, gpu, cm))/1e9 {
			t.Errorf("pause %v, Cost says %v ns", r.PauseS, defrag.Cost(p, gpu, cm))
		}
	}
	q := p
	q.Notes, q.Moves = nil, nil
	b, err := json.Marshal(defrag.NewReport("s.pickle", "snapshot", 1, gpu, cm, &q, -1))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"notes":[]`) || !strings.Contains(s, `"move_list":[]`) || !strings.Contains(s, `"device":1`) {
		t.Errorf("JSON %s: want notes and move_list as [] and the snapshot's device", s)
	}
}
