package analysis_test

import (
	"encoding/json"
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

// The what-if replays route private-pool requests as the recorded-settings
// replay does. In the trace of TestReplayRoutesByFinalSegmentPool the
// eager 4 MiB request cannot take the graph pool's cached block, so every
// caching alternative reserves a second 20 MiB segment (40 MiB at the
// peak, 20 MiB when everything goes to the default pools); an allocator
// without private pools serves the two graph requests from its default
// pools and the report says so. With a pre-trace MemPool segment (the
// trace of TestReplayRoutesByEntryPoolID) its live block is a private
// request too, and pool ids the entries carry route as well.
func TestWhatIfRoutesPrivatePools(t *testing.T) {
	trace := events(
		segAlloc(segA, 20*mib), alloc(segA, 4*mib), freeOf(segA, 4*mib),
		segAlloc(segB, 20*mib), alloc(segB, 4*mib),
		alloc(segA, 2*mib),
	)
	gseg := seg(segA, "large", live(2*mib, 2*mib, "graph"), free(18*mib))
	gseg.PoolID = graph
	s := snap(trace, gseg, seg(segB, "large", live(4*mib, 4*mib, "eager"), free(16*mib)))
	r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{"caching:max_split_size_mb:64", "sizeclass"}})
	if err != nil {
		t.Fatal(err)
	}
	w := r.Devices[0].WhatIf
	if w == nil || len(w.Results) != 3 {
		t.Fatalf("what-if %+v", w)
	}
	if w.PrivateRequests != 2 {
		t.Errorf("private requests %d, want 2", w.PrivateRequests)
	}
	for _, a := range w.Results[:2] {
		if a.PeakReserved != 40*mib || a.UnroutedPrivate != 0 {
			t.Errorf("%s: peak reserved %d, unrouted %d; want 40 MiB (the graph pool kept apart), 0", a.Settings, a.PeakReserved, a.UnroutedPrivate)
		}
	}
	if a := w.Results[2]; a.UnroutedPrivate != 2 {
		t.Errorf("%s: unrouted %d, want 2", a.Settings, a.UnroutedPrivate)
	}
	var text strings.Builder
	if err := r.WriteText(&text, "pools"); err != nil {
		t.Fatal(err)
	}
	if want := "2 requests of private pools (CUDA graphs, MemPool) replayed in their pools; sizeclass has no private pools and served them from its default pools"; !strings.Contains(text.String(), want) {
		t.Errorf("text does not say %q:\n%s", want, text.String())
	}
	doc, err := json.Marshal(r.Doc("pools"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"private_requests":2`, `"unrouted_private_requests":2`} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}

	trace = events(
		poolEvents(events(segAlloc(segA, 20*mib), alloc(segA, 4*mib), freeOf(segA, 4*mib)), graph),
		segAlloc(segB, 20*mib), alloc(segB, 4*mib),
	)
	pre := seg(segC, "large", live(2*mib, 2*mib, "mempool"), free(18*mib))
	pre.PoolID = [2]int64{-5, 1} // pool ids are opaque: a negative one replays too
	s = snap(trace, seg(segB, "large", live(4*mib, 4*mib, "eager"), free(16*mib)), pre)
	d := analyze(t, s, analysis.Options{WhatIf: []string{"caching"}})
	// The MemPool's 20 MiB, the graph's 20 MiB and the eager segment.
	if w := d.WhatIf; w == nil || w.PrivateRequests != 2 || w.Results[0].PeakReserved != 60*mib {
		t.Errorf("what-if %+v, want 2 private requests and 60 MiB reserved at the peak", w)
	}
}

// The fuzz seed of private pools (poolSeed) replays address for address
// and its what-ifs route the graph's requests.
func TestPoolSeed(t *testing.T) {
	s, err := snapshot.ReadBytes(poolSeed(), "pools.pickle")
	if err != nil {
		t.Fatal(err)
	}
	d := analyze(t, s, analysis.Options{WhatIf: []string{"caching", "direct"}})
	if f := d.Replay; f.AddressMatches != 3 || f.PrivateAllocs != 2 || f.FinalBlockMatches != f.FinalBlocks {
		t.Errorf("replay %+v", *f)
	}
	if w := d.WhatIf; w.PrivateRequests != 2 || w.Results[0].PeakReserved != 40*mib || w.Results[1].UnroutedPrivate != 2 {
		t.Errorf("what-if %+v", *w)
	}
}
