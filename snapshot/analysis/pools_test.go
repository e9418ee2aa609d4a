package analysis_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

var graph = [2]int64{1, 0} // a CUDA-graph pool id

func inPool(e snapshot.TraceEntry, pool [2]int64) snapshot.TraceEntry {
	e.PoolID, e.HasPoolID = pool, true
	return e
}

func poolEvents(parts []snapshot.TraceEntry, pool [2]int64) []snapshot.TraceEntry {
	out := make([]snapshot.TraceEntry, len(parts))
	for i, e := range parts {
		out[i] = inPool(e, pool)
	}
	return out
}

// A capture's allocation is freed and cached in the graph's pool; the next
// request of the same size, outside the capture, must not take that block
// (PyTorch gives it a segment of its own), while the graph's next request
// does. Routing every request to the default pools places the second at
// segA instead of segB. The trace carries no pool ids: the pool comes from
// the final segment's segment_pool_id.
func TestReplayRoutesByFinalSegmentPool(t *testing.T) {
	trace := events(
		segAlloc(segA, 20*mib), alloc(segA, 4*mib), freeOf(segA, 4*mib), // captured, then freed into the graph pool
		segAlloc(segB, 20*mib), alloc(segB, 4*mib), // eager: a new default segment
		alloc(segA, 2*mib), // captured again: the graph pool's cached block
	)
	gseg := seg(segA, "large", live(2*mib, 2*mib, "graph"), free(18*mib))
	gseg.PoolID = graph
	s := snap(trace, gseg, seg(segB, "large", live(4*mib, 4*mib, "eager"), free(16*mib)))
	f := analyze(t, s, analysis.Options{WhatIf: []string{}}).Replay
	want := analysis.Fidelity{Source: analysis.SourceTrace, PrivateAllocs: 2, Allocs: 3, AddressMatches: 3,
		SegmentAllocs: 2, SegmentSizeMatches: 2, Frees: 1, FinalBlocks: 4, FinalBlockMatches: 4}
	f.Mismatches = nil
	if !reflect.DeepEqual(*f, want) {
		t.Errorf("replay\n got %+v\nwant %+v", *f, want)
	}
}

// Entries that carry pool_id route themselves, also when the private
// segment is gone by the end (the graph was destroyed and the cache
// emptied), so the final snapshot cannot tell. A pre-trace segment of a
// MemPool is seeded into that pool: neither the graph's request nor the
// eager ones take its free 18 MiB.
func TestReplayRoutesByEntryPoolID(t *testing.T) {
	trace := events(
		poolEvents(events(segAlloc(segA, 20*mib), alloc(segA, 4*mib), freeOf(segA, 4*mib)), graph),
		segAlloc(segB, 20*mib), alloc(segB, 4*mib),
		inPool(segFree(segA, 20*mib), graph),
		segAlloc(segC, 18*mib), alloc(segC, 17*mib), // eager, too large for segB's free 16 MiB, not the MemPool's 18 MiB
	)
	pre := seg(segC+32<<20, "large", live(2*mib, 2*mib, "mempool"), free(18*mib))
	pre.PoolID = [2]int64{0, 1}
	s := snap(trace, seg(segB, "large", live(4*mib, 4*mib, "eager"), free(16*mib)),
		seg(segC, "large", live(18*mib, 17*mib, "eager")), pre)
	d := analyze(t, s, analysis.Options{WhatIf: []string{}})
	f := d.Replay
	if f.AddressMatches != 3 || f.Allocs != 3 || f.SegmentSizeMatches != 3 || f.SegmentFreeMatches != 1 ||
		f.PrivateAllocs != 1 || f.PrivateSegments != 1 || f.SeededSegments != 1 || f.FinalBlockMatches != f.FinalBlocks {
		t.Errorf("replay %+v\nmismatches %v", *f, f.Mismatches)
	}
	var text strings.Builder
	r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&text, "pools"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "1 pre-trace segments seeded into their pools, 1 allocs routed to them") {
		t.Errorf("text does not report the private pools:\n%s", text.String())
	}
}

// Free memory cached in a graph's pool cannot serve an eager request: an
// oom with 30 MiB cached there and 20 MiB on the device, short of a 40 MiB
// segment, is demand, not fragmentation, and says where the 30 MiB is.
func TestOOMPrivateCachedFree(t *testing.T) {
	trace := events(segAlloc(segA, 30*mib), alloc(segA, 30*mib), freeOf(segA, 30*mib), oom(40*mib, 20*mib))
	gseg := seg(segA, "large", free(30*mib))
	gseg.PoolID = graph
	d := analyze(t, snap(trace, gseg), analysis.Options{WhatIf: []string{}})
	if len(d.OOMs) != 1 {
		t.Fatalf("ooms %+v", d.OOMs)
	}
	o := d.OOMs[0]
	if o.Cause != "demand" || o.PrivateCachedFree != 30*mib || !strings.Contains(o.Why, "30MiB more is cached in private pools") {
		t.Errorf("oom %+v", o)
	}
}
