package caching_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/mem"
)

const (
	segA = uint64(0x7f1000000000)
	segB = uint64(0x7f2000000000)
)

// seeded returns an allocator holding a 20 MiB large segment with live
// blocks at offsets 0 (4 MiB) and 10 MiB (2 MiB), and a 2 MiB small segment
// with one 512-byte block at offset 1 KiB.
func seeded(t *testing.T) (*caching.Allocator, []alloc.Handle) {
	t.Helper()
	dev := mem.MustDevice(1*mem.GiB, 0)
	a, err := caching.New(dev, caching.Config{})
	if err != nil {
		t.Fatal(err)
	}
	hs, err := a.Seed([]caching.SeedSegment{
		{Addr: segA, Size: 20 * mem.MiB, Live: []caching.SeedBlock{
			{Addr: segA + uint64(10*mem.MiB), Size: 2 * mem.MiB, Requested: 2*mem.MiB - 7},
			{Addr: segA, Size: 4 * mem.MiB, Requested: 4 * mem.MiB},
		}},
		{Addr: segB, Size: 2 * mem.MiB, Small: true, Live: []caching.SeedBlock{
			{Addr: segB + 1024, Size: 512, Requested: 100},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	return a, hs
}

func TestSeedLayout(t *testing.T) {
	a, hs := seeded(t)
	if len(hs) != 3 {
		t.Fatalf("got %d handles, want 3", len(hs))
	}
	l := a.Layout()
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	type blk struct {
		off   int64
		size  int64
		state mem.BlockState
	}
	want := map[uint64][]blk{
		segA: {{0, 4 * mem.MiB, mem.Active}, {4 * mem.MiB, 6 * mem.MiB, mem.Free},
			{10 * mem.MiB, 2 * mem.MiB, mem.Active}, {12 * mem.MiB, 8 * mem.MiB, mem.Free}},
		segB: {{0, 1024, mem.Free}, {1024, 512, mem.Active}, {1536, 2*mem.MiB - 1536, mem.Free}},
	}
	for _, s := range l.Segments {
		var got []blk
		for _, b := range s.Blocks {
			got = append(got, blk{int64(b.Addr - s.Addr), b.Size, b.State})
		}
		if !reflect.DeepEqual(got, want[s.Addr]) {
			t.Errorf("segment %#x: got %v, want %v", s.Addr, got, want[s.Addr])
		}
	}
	st := a.Stats()
	if st.Reserved != 22*mem.MiB || st.Allocated != 6*mem.MiB+512 || st.Requested != 6*mem.MiB-7+100 ||
		st.Segments != 2 || st.LiveBlocks != 3 || st.Allocs != 0 || st.DeviceAllocs != 0 {
		t.Errorf("stats %+v", st)
	}
}

// After seeding, the allocator behaves as if it had built the state itself:
// best fit takes the smaller gap, a freed seeded block merges.
func TestSeedThenReplay(t *testing.T) {
	a, hs := seeded(t)
	tests := []struct {
		name string
		size int64
		want uint64
	}{
		{"best fit takes the 6 MiB gap, not the 8 MiB tail", 4 * mem.MiB, segA + uint64(4*mem.MiB)},
		{"then the tail", 5 * mem.MiB, segA + uint64(12*mem.MiB)},
		{"small pool: the 1 KiB gap first", 600, segB},
	}
	for _, tc := range tests {
		b, err := a.Alloc(tc.size, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if b.Addr != tc.want {
			t.Errorf("%s: got %#x, want %#x", tc.name, b.Addr, tc.want)
		}
	}
	// Free the seeded 2 MiB block at 10 MiB: it merges with the 2 MiB left
	// free at 8 MiB (its upper neighbour at 12 MiB is live) into 4 MiB.
	if err := a.Free(hs[0]); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(hs[0]); !errors.Is(err, alloc.ErrInvalidHandle) {
		t.Errorf("double free of a seeded handle: %v", err)
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	b, err := a.Alloc(4*mem.MiB, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := segA + uint64(8*mem.MiB); b.Addr != want {
		t.Errorf("merged block: got %#x, want %#x", b.Addr, want)
	}
}

func TestSeedErrors(t *testing.T) {
	tests := []struct {
		name string
		segs []caching.SeedSegment
		kind error
	}{
		{"unaligned size", []caching.SeedSegment{{Addr: segA, Size: 1000}}, alloc.ErrBadSpec},
		{"block outside", []caching.SeedSegment{{Addr: segA, Size: 2 * mem.MiB,
			Live: []caching.SeedBlock{{Addr: segA + uint64(2*mem.MiB-512), Size: 1024, Requested: 1}}}}, alloc.ErrBadSpec},
		{"blocks overlap", []caching.SeedSegment{{Addr: segA, Size: 2 * mem.MiB,
			Live: []caching.SeedBlock{{Addr: segA, Size: 1024, Requested: 1}, {Addr: segA + 512, Size: 512, Requested: 1}}}}, alloc.ErrBadSpec},
		{"requested above size", []caching.SeedSegment{{Addr: segA, Size: 2 * mem.MiB,
			Live: []caching.SeedBlock{{Addr: segA, Size: 512, Requested: 513}}}}, alloc.ErrBadSpec},
		{"segments overlap", []caching.SeedSegment{{Addr: segA, Size: 4 * mem.MiB}, {Addr: segA + uint64(2*mem.MiB), Size: 2 * mem.MiB}}, alloc.ErrBadSpec},
		{"overlaps a held segment", []caching.SeedSegment{{Addr: segA + uint64(mem.MiB), Size: 2 * mem.MiB}}, alloc.ErrBadSpec},
		{"device too small", []caching.SeedSegment{{Addr: segB + uint64(mem.GiB), Size: 2 * mem.GiB}}, alloc.ErrOutOfMemory},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := seeded(t)
			before := a.Layout()
			_, err := a.Seed(tc.segs)
			if !errors.Is(err, tc.kind) {
				t.Fatalf("got %v, want %v", err, tc.kind)
			}
			if !reflect.DeepEqual(a.Layout(), before) {
				t.Error("a refused seed changed the allocator")
			}
		})
	}
}

func TestSeedNothing(t *testing.T) {
	a, err := caching.New(mem.MustDevice(mem.GiB, 0), caching.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if hs, err := a.Seed(nil); err != nil || hs != nil {
		t.Fatalf("Seed(nil) = %v, %v", hs, err)
	}
}

func TestReleaseSegment(t *testing.T) {
	a, hs := seeded(t)
	if a.ReleaseSegment(segA) {
		t.Fatal("released a segment with live blocks")
	}
	if a.ReleaseSegment(segA + 512) {
		t.Fatal("released at an address that starts no segment")
	}
	if err := a.Free(hs[2]); err != nil { // the small segment's only live block
		t.Fatal(err)
	}
	before := a.Stats()
	if !a.ReleaseSegment(segB) {
		t.Fatal("did not release a wholly free segment")
	}
	after := a.Stats()
	if after.Reserved != before.Reserved-2*mem.MiB || after.Segments != before.Segments-1 || after.DeviceFrees != before.DeviceFrees+1 {
		t.Errorf("stats before %+v after %+v", before, after)
	}
	if a.ReleaseSegment(segB) {
		t.Error("released the same segment twice")
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// ReleaseSegment finds segments through an index of segment bases, built at
// its first call and kept by every path that obtains or returns a segment
// afterwards: segments the allocator obtained itself, split ones once
// merged back, ones the out-of-memory ladder or empty_cache returned, and a
// clone's own. CheckInvariants compares the index with the block records.
func TestReleaseSegmentIndex(t *testing.T) {
	a, hs := seeded(t)
	if a.ReleaseSegment(segA) { // builds the index; segA holds live blocks
		t.Fatal("released a segment with live blocks")
	}
	b1, err := a.Alloc(30*mem.MiB, 0) // a new 30 MiB segment
	if err != nil {
		t.Fatal(err)
	}
	b2, err := a.Alloc(3*mem.MiB, 1) // a new 20 MiB segment on stream 1, split
	if err != nil {
		t.Fatal(err)
	}
	c := a.Clone().(*caching.Allocator)
	for _, h := range []alloc.Handle{b1.Handle, b2.Handle} {
		if err := a.Free(h); err != nil {
			t.Fatal(err)
		}
	}
	if !a.ReleaseSegment(b2.Addr) || !a.ReleaseSegment(b1.Addr) {
		t.Fatal("did not release the wholly free segments the allocator obtained")
	}
	if a.ReleaseSegment(b1.Addr) {
		t.Fatal("released a segment twice")
	}
	if c.ReleaseSegment(b1.Addr) {
		t.Fatal("the clone released a segment that holds a live block in it")
	}
	for _, h := range hs[:2] {
		if err := a.Free(h); err != nil {
			t.Fatal(err)
		}
	}
	a.EmptyCache() // returns segA, now wholly free
	if a.ReleaseSegment(segA) {
		t.Fatal("released a segment empty_cache had already returned")
	}
	b3, err := a.Alloc(3*mem.MiB, 0) // obtains a segment again after the index exists
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(b3.Handle); err != nil {
		t.Fatal(err)
	}
	if !a.ReleaseSegment(b3.Addr) {
		t.Fatal("did not release a segment obtained after the index was built")
	}
	for _, x := range []*caching.Allocator{a, c} {
		if err := x.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
}
