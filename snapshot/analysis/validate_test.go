package analysis_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// Analyze refuses a snapshot that breaks an invariant instead of indexing
// with it (issue 13 case 1: a segment on device -1 panicked with index out
// of range, with and without replay).
func TestAnalyzeRefusesInvalid(t *testing.T) {
	bad := []func(s *snapshot.Snapshot){
		func(s *snapshot.Snapshot) { s.Segments[0].Device = -1 },
		func(s *snapshot.Snapshot) { s.Segments[1].Address = s.Segments[0].Address }, // overlap
		func(s *snapshot.Snapshot) { s.Segments[0].Blocks[0].Size -= 512 },           // no tiling
		func(s *snapshot.Snapshot) { s.Segments[0].Address = ^uint64(0) - 512 },      // wraps
	}
	for i, breakIt := range bad {
		for _, noReplay := range []bool{true, false} {
			s := snap(events(segAlloc(segA, 20*mib), alloc(segA, 8*mib)),
				seg(segA, "large", live(8*mib, 8*mib, "f"), free(12*mib)),
				seg(segB, "large", free(20*mib)))
			breakIt(s)
			_, err := analysis.Analyze(s, analysis.Options{NoReplay: noReplay})
			var e *snapshot.Error
			if !errors.As(err, &e) || !errors.Is(err, snapshot.ErrField) || !strings.HasPrefix(e.Field, "segments[") {
				t.Errorf("case %d (no replay %v): got %v, want a field error", i, noReplay, err)
			}
		}
	}
}

// The fuzz seeds analyse, so FuzzAnalyzeSpec starts inside the analysis.
func TestSpecSeedsAnalyse(t *testing.T) {
	for i, spec := range snaptest.Seeds {
		s, err := snapshot.ReadBytes(snaptest.Encode(snaptest.FromSpec(spec)), "seed")
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		r, err := analysis.Analyze(s, analysis.Options{Capacity: 1 << 30})
		if err != nil || len(r.Devices) == 0 {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}
