package gensnap

import (
	"bytes"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// TestConsistent: a generated snapshot reads, passes Validate, comes out
// near the size asked for, and our caching model replays its history
// address for address, ending in the segments the file lists.
func TestConsistent(t *testing.T) {
	var buf bytes.Buffer
	st, err := Write(&buf, Options{Bytes: 400_000, Seed: 3, OOMEvery: 4, Layers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != st.Bytes {
		t.Fatalf("Stats.Bytes %d, wrote %d", st.Bytes, buf.Len())
	}
	if st.Bytes < 400_000 || st.Bytes > 600_000 {
		t.Errorf("asked for 400,000 bytes, got %d", st.Bytes)
	}
	s, err := snapshot.ReadBytes(buf.Bytes(), "gen")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.DeviceTraces[0]); got != st.Events {
		t.Errorf("%d trace entries read, %d written", got, st.Events)
	}
	r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Devices[0].Replay
	if f == nil || f.Allocs != st.Allocs || f.AddressMatches != f.Allocs || f.SegmentSizeMatches != f.SegmentAllocs || len(f.Mismatches) > 0 {
		t.Fatalf("replay not exact: %+v", f)
	}
	if n := len(r.Devices[0].OOMs); n != st.OOMs || n == 0 {
		t.Errorf("%d oom entries explained, %d written", n, st.OOMs)
	}
	if len(s.Segments) != st.Segments || st.Segments == 0 {
		t.Errorf("%d segments read, %d written", len(s.Segments), st.Segments)
	}
}

// TestGraphPool: a generated snapshot of a server that captured CUDA
// graphs into a private pool (the segments carry segment_pool_id, the
// entries no pool_id) replays address for address, every capture alloc
// routed to the pool by its segment; and the what-if replay of the
// recorded settings, on the generator's 80 GiB device, reserves at its
// peak exactly what the generator's allocator did. Routing the captures
// to the default pools would let eager requests take the graph pool's
// cached blocks and reserve less.
func TestGraphPool(t *testing.T) {
	var buf bytes.Buffer
	st, err := Write(&buf, Options{Bytes: 300_000, Seed: 9, Layers: 4, GraphPool: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.PrivateSegments == 0 || st.PrivateAllocs == 0 {
		t.Fatalf("no graph pool: %+v", st)
	}
	s, err := snapshot.ReadBytes(buf.Bytes(), "graphs")
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{"caching", "sizeclass"}})
	if err != nil {
		t.Fatal(err)
	}
	d := r.Devices[0]
	f := d.Replay
	if f.Allocs != st.Allocs || f.AddressMatches != f.Allocs || f.SegmentSizeMatches != f.SegmentAllocs ||
		f.FinalBlockMatches != f.FinalBlocks || f.PrivateAllocs != st.PrivateAllocs || len(f.Mismatches) > 0 {
		t.Fatalf("replay not exact: %+v (%d private allocs written)", *f, st.PrivateAllocs)
	}
	w := d.WhatIf
	if w.PrivateRequests != st.PrivateAllocs || w.Results[0].PeakReserved != st.PeakReserved || w.Results[0].UnroutedPrivate != 0 {
		t.Errorf("what-if: %d private requests (want %d), recorded settings peak %d (want %d), unrouted %d",
			w.PrivateRequests, st.PrivateAllocs, w.Results[0].PeakReserved, st.PeakReserved, w.Results[0].UnroutedPrivate)
	}
	if got := w.Results[1].UnroutedPrivate; got != st.PrivateAllocs {
		t.Errorf("sizeclass: %d unrouted, want %d", got, st.PrivateAllocs)
	}
}
