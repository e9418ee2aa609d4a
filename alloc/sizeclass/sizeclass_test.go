package sizeclass

import (
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
)

// TestCloneIsIndependent changes a clone in every structure Clone copies
// (slabs, slot states, free lists, released indexes, the handle table) and
// checks that the original did not move.
func TestCloneIsIndependent(t *testing.T) {
	a, err := New(mem.MustDevice(64*mem.MiB, 0), Config{Classes: []int64{mem.MiB, 4 * mem.MiB}})
	if err != nil {
		t.Fatal(err)
	}
	var hs []alloc.Handle
	for _, s := range []int64{mem.MiB, mem.MiB, 3 * mem.MiB, 10 * mem.MiB} {
		b, err := a.Alloc(s, 0)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, b.Handle)
	}
	if err := a.Free(hs[1]); err != nil {
		t.Fatal(err)
	}
	before, st := a.Layout(), a.Stats()

	c := a.Clone().(*Allocator)
	if _, err := c.Relocate(hs[0], before.Segments[0].Blocks[1].Addr); err != nil {
		t.Fatal(err)
	}
	for _, h := range []alloc.Handle{hs[0], hs[2], hs[3]} {
		if err := c.Free(h); err != nil {
			t.Fatal(err)
		}
	}
	c.EmptyCache()
	if _, err := c.Alloc(512, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Layout(), before) || a.Stats() != st {
		t.Fatalf("changing the clone changed the original:\n%s\nwant\n%s", a.Layout(), before)
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(hs[0]); err != nil {
		t.Fatalf("original lost a handle the clone freed: %v", err)
	}
}

// TestDescendingAddresses hands out virtual ranges from the top down (as a
// snapshot replay's VA hook may), so new slabs are inserted at the front of
// the address order rather than appended, and relocation must still find
// the slab that holds a destination.
func TestDescendingAddresses(t *testing.T) {
	dev := mem.MustDevice(64*mem.MiB, 0)
	next := mem.DefaultVABase + uint64(mem.GiB)
	dev.SetVAHook(func(size int64) uint64 { next -= uint64(mem.RoundUp(size, mem.PageSize)); return next })
	a, err := New(dev, Config{Classes: []int64{mem.MiB}})
	if err != nil {
		t.Fatal(err)
	}
	live := map[alloc.Handle]alloctest.Live{}
	var hs []alloc.Handle
	for range 6 { // three slabs of two slots, each below the last
		b, err := a.Alloc(mem.MiB, 0)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, b.Handle)
		live[b.Handle] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: mem.MiB}
	}
	if err := alloctest.Check(a, live); err != nil {
		t.Fatal(err)
	}
	// Empty the middle slab's first slot and the top slab's second, then move
	// the block of the lowest slab's first slot into the middle one.
	for _, i := range []int{2, 1} {
		if err := a.Free(hs[i]); err != nil {
			t.Fatal(err)
		}
		delete(live, hs[i])
	}
	dst := live[hs[3]].Addr - uint64(mem.MiB) // hs[2]'s slot, below hs[3]'s
	b, err := a.Relocate(hs[4], dst)
	if err != nil {
		t.Fatalf("relocate to %s: %v\n%s", mem.FormatAddr(dst), err, a.Layout())
	}
	live[hs[4]] = alloctest.Live{Addr: b.Addr, Size: b.Size, Requested: mem.MiB}
	if err := alloctest.Check(a, live); err != nil {
		t.Fatal(err)
	}
}
