// Size-class allocator: relocation within a class, for compaction.
// See package alloc for the overview.

package sizeclass

import (
	"fmt"
	"sort"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/mem"
)

// Relocation (alloc.Relocator): free slabs go back to the device;
// a block moves only to a free slot of its own class.
func (*Allocator) Relocation() alloc.Relocation {
	return alloc.Relocation{Releasable: true, Slots: true}
}

// Relocate moves the live class block h to the free slot of the same class
// that starts exactly at dst; the slot it leaves goes to the top of the
// class's free list. This is all compaction within a class needs: gather the
// live slots of a class into fewer slabs so the emptied slabs can be
// released. It fails with alloc.ErrInvalidHandle for a handle that is not
// live, and with alloc.ErrBadMove, changing nothing, when h is a direct block
// (raw allocations cannot move) or dst is not the start of a free slot of
// h's class. Stats do not change: the same bytes stay allocated.
func (a *Allocator) Relocate(h alloc.Handle, dst uint64) (alloc.Block, error) {
	e := a.live.Get(h)
	if e == nil {
		return alloc.Block{}, alloc.ErrInvalidHandle
	}
	if e.class < 0 {
		return alloc.Block{}, fmt.Errorf("%w: sizeclass: a direct block (larger than every class) cannot move", alloc.ErrBadMove)
	}
	ref, err := a.freeSlotAt(int(e.class), dst)
	if err != nil {
		return alloc.Block{}, err
	}
	old := e.ref
	a.take(int(e.class), ref)
	a.put(int(e.class), old)
	e.ref, e.addr = ref, dst
	if invariants.Enabled {
		a.mustCheck()
	}
	return alloc.Block{Handle: h, Addr: dst, Size: e.size}, nil
}

// freeSlotAt finds the free slot of class ci that starts at dst, or explains
// with an ErrBadMove why there is none. O(log slabs).
func (a *Allocator) freeSlotAt(ci int, dst uint64) (slotRef, error) {
	i := sort.Search(len(a.order), func(i int) bool { return a.slabs[a.order[i]].addr > dst }) - 1
	if i < 0 {
		return slotRef{}, fmt.Errorf("%w: sizeclass: %s is not inside a slab", alloc.ErrBadMove, mem.FormatAddr(dst))
	}
	id := a.order[i]
	s := &a.slabs[id]
	c := &a.classes[s.class]
	off := dst - s.addr
	switch {
	case off >= uint64(c.slabBytes):
		return slotRef{}, fmt.Errorf("%w: sizeclass: %s is not inside a slab", alloc.ErrBadMove, mem.FormatAddr(dst))
	case int(s.class) != ci:
		return slotRef{}, fmt.Errorf("%w: sizeclass: %s is in a slab of class %s, the block is of class %s",
			alloc.ErrBadMove, mem.FormatAddr(dst), c.name, a.classes[ci].name)
	case off%uint64(c.size) != 0 || off/uint64(c.size) >= uint64(c.perSlab):
		return slotRef{}, fmt.Errorf("%w: sizeclass: %s is not the start of a slot", alloc.ErrBadMove, mem.FormatAddr(dst))
	}
	idx := int32(off / uint64(c.size))
	if a.slotPos[s.base+idx] < 0 {
		return slotRef{}, fmt.Errorf("%w: sizeclass: the slot at %s is live", alloc.ErrBadMove, mem.FormatAddr(dst))
	}
	return slotRef{slab: id, idx: idx}, nil
}
