package caching_test

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/mem"
)

// TestStreamsKeptApart: a block freed on one stream is reused by that
// stream only, whichever stream was asked for last (the allocator tries
// the stream index it found last before its map).
func TestStreamsKeptApart(t *testing.T) {
	a, err := caching.FromSpec(mem.MustDevice(mem.GiB, 0), "")
	if err != nil {
		t.Fatal(err)
	}
	const size = 4 << 20
	b1, err := a.Alloc(size, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Alloc(size, 2); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(b1.Handle); err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{2, 7, 2} {
		b, err := a.Alloc(size, s)
		if err != nil {
			t.Fatal(err)
		}
		if b.Addr == b1.Addr {
			t.Fatalf("stream %d got the block freed on stream 1", s)
		}
	}
	b, err := a.Alloc(size, 1)
	if err != nil {
		t.Fatal(err)
	}
	if b.Addr != b1.Addr {
		t.Errorf("stream 1 got %#x, not its cached block at %#x", b.Addr, b1.Addr)
	}
}
