package analysis_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// An oom entry after frees the model could not place is not called
// fragmentation (or demand) on the model's word: the replay had diverged
// (issue 28 item 5: 1,993 such frees, then "cause: fragmentation"). The
// trace is TestOOM's fragmentation case with one free_completed, inside
// segB, of an address the model never held.
func TestOOMAfterUnknownFrees(t *testing.T) {
	for _, tc := range []struct {
		name    string
		unknown bool
		cause   string
	}{
		{"replay followed", false, "fragmentation"},
		{"replay diverged", true, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := []any{segAlloc(segB, 20*mib), alloc(segB, 3*mib), alloc(segB+uint64(3*mib), 9*mib)}
			if tc.unknown {
				parts = append(parts, freeOf(segB+uint64(12*mib), 512))
			}
			parts = append(parts, oom(10*mib, 4*mib))
			s := snap(events(parts...), seg(segB, "large", live(3*mib, 3*mib, "x"), live(9*mib, 9*mib, "y"), free(8*mib)))
			d := analyze(t, s, analysis.Options{WhatIf: []string{}})
			if len(d.OOMs) != 1 {
				t.Fatalf("%d OOMs", len(d.OOMs))
			}
			o := d.OOMs[0]
			if o.Cause != tc.cause {
				t.Errorf("cause %q, want %q (%s)", o.Cause, tc.cause, o.Why)
			}
			if tc.unknown && (d.Replay.UnknownFrees != 1 || !strings.Contains(o.Why, "the replay had diverged from the trace before this entry "+
				"(1 free_completed events named an address where the model held no allocation)")) {
				t.Errorf("unknown frees %d, why %q", d.Replay.UnknownFrees, o.Why)
			}
		})
	}
}

// A request above mem.MaxRequest (a caller may ask for anything; PyTorch
// records it in the oom entry) is demand, its segment the request itself:
// rounding it overflowed to a negative segment and "fragmentation".
func TestOOMHugeRequest(t *testing.T) {
	for _, size := range []int64{4 << 60, math.MaxInt64} {
		s := snap(events(segAlloc(segB, 20*mib), alloc(segB, 3*mib), oom(size, 4*mib)),
			seg(segB, "large", live(3*mib, 3*mib, "x"), free(17*mib)))
		d := analyze(t, s, analysis.Options{WhatIf: []string{}})
		if len(d.OOMs) != 1 {
			t.Fatalf("%d OOMs", len(d.OOMs))
		}
		if o := d.OOMs[0]; o.Cause != "demand" || o.AllocSize != size || o.Requested != size {
			t.Errorf("request %d: cause %q, segment %d (%s)", size, o.Cause, o.AllocSize, o.Why)
		}
	}
}
