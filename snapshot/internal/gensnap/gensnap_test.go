package gensnap

import (
	"bytes"
	"fmt"
	"strings"
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

// TestPinnedLeak: a snapshot with many long-lived tensors (Pinned, many
// segments and call sites, deep stacks) still replays address for
// address; and diff of it against the same options plus Leak charges the
// leaked requests to LeakSite and to no other site (its blocks may be
// larger: a free block whose rest is too small to split is taken whole,
// the rest counted as rounding).
func TestPinnedLeak(t *testing.T) {
	o := Options{Bytes: 300_000, Seed: 5, Layers: 4, Pinned: 600, Sites: 600, Depth: 60, Frames: 2000}
	read := func(o Options) (*analysis.Report, Stats) {
		var buf bytes.Buffer
		st, err := Write(&buf, o)
		if err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.ReadBytes(buf.Bytes(), "gen")
		if err != nil {
			t.Fatal(err)
		}
		r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		return r, st
	}
	a, st := read(o)
	if f := a.Devices[0].Replay; f == nil || f.AddressMatches != f.Allocs || f.Allocs != st.Allocs || len(f.Mismatches) > 0 {
		t.Fatalf("replay not exact: %+v", f)
	}
	if st.Segments < 100 || st.Blocks < 400 {
		t.Errorf("600 pinned tensors gave %d segments and %d blocks", st.Segments, st.Blocks)
	}
	o.Leak, o.LeakSize = 40, 3<<20
	b, _ := read(o)
	d := analysis.DiffReports(a, b, analysis.DiffOptions{TopSites: 1000})
	if len(d.Devices) != 1 {
		t.Fatalf("%d devices compared", len(d.Devices))
	}
	var found bool
	for _, s := range d.Devices[0].Sites {
		delta := s.B.Allocated - s.A.Allocated
		switch {
		case s.Site == LeakSite:
			found = true
			if s.A.Blocks != 0 || s.B.Blocks != 40 || s.B.Requested != 40*3<<20 || s.B.Allocated != s.B.Requested+s.B.Rounding {
				t.Errorf("%s: %+v to %+v, want 40 blocks requesting %d bytes", s.Site, s.A, s.B, 40*3<<20)
			}
		case delta != 0:
			t.Errorf("%s: allocated moved by %d; only the leak changed", s.Site, delta)
		}
	}
	if !found {
		t.Errorf("no site %s among %d that moved", LeakSite, len(d.Devices[0].Sites))
	}
}

// TestDepth: stacks have MinDepth to Depth frames, 20 at most by default;
// a Depth that cannot be honoured (below MinDepth, or negative) is refused
// by Validate and by Write before it writes a byte (it became 20).
func TestDepth(t *testing.T) {
	frames := func(depth int) (lo, hi int) {
		var buf bytes.Buffer
		if _, err := Write(&buf, Options{Bytes: 100_000, Seed: 7, Layers: 2, Depth: depth}); err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		s, err := snapshot.ReadBytes(buf.Bytes(), "gen")
		if err != nil {
			t.Fatal(err)
		}
		lo = 1 << 30
		for _, e := range s.DeviceTraces[0] {
			if n := len(e.Frames); n > 0 {
				lo, hi = min(lo, n), max(hi, n)
			}
		}
		return lo, hi
	}
	for _, tc := range []struct{ depth, lo, hi int }{{0, MinDepth, 20}, {MinDepth, MinDepth, MinDepth}, {7, MinDepth, 7}} {
		if lo, hi := frames(tc.depth); lo != tc.lo || hi != tc.hi {
			t.Errorf("depth %d: stacks of %d to %d frames, want %d to %d", tc.depth, lo, hi, tc.lo, tc.hi)
		}
	}
	for _, o := range []Options{{Sites: -1}, {Frames: -2}, {Layers: -1}, {Hidden: -1}, {Pinned: -1}, {Leak: -1}, {OOMEvery: -1}, {LeakSize: -1}} {
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("Validate %+v: %v, want a negative value refused", o, err)
		}
	}
	for _, depth := range []int{1, 4, -3} {
		o := Options{Bytes: 100_000, Depth: depth}
		want := fmt.Sprintf("depth %d: a stack has at least 5 frames", depth)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate, depth %d: %v, want an error with %q", depth, err, want)
		}
		var buf bytes.Buffer
		if _, err := Write(&buf, o); err == nil || buf.Len() != 0 {
			t.Errorf("Write, depth %d: %v after %d bytes, want an error before any", depth, err, buf.Len())
		}
	}
}
