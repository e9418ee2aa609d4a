// Relocation: the hook defragmentation uses.
// See package alloc for the overview.

package caching

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/ordset"
	"github.com/gpufrag/gpufrag/internal/invariants"
)

// Relocation (alloc.Relocator): wholly free segments go back to the device (EmptyCache); a block moves within its
// stream and its size pool (small: at most 1 MiB; large), to memory free before the move.
func (*Allocator) Relocation() alloc.Relocation {
	return alloc.Relocation{Releasable: true, Streams: true, SizePools: true}
}

// Relocate moves a live block to dst, which must lie inside one free mapped
// block of the same pool and stream with room for the whole block (PyTorch
// itself never moves memory; this is what a compacting runtime built on the
// same pools would do). The moved block keeps its size and request; the free
// block is split around it and the old range is freed and merged as by Free.
// The handle stays valid.
func (a *Allocator) Relocate(h alloc.Handle, dst uint64) (alloc.Block, error) {
	a.mut.Mutated()
	old, ok := a.lookup(h)
	if !ok {
		return alloc.Block{}, fmt.Errorf("%w: caching: handle %#x", alloc.ErrInvalidHandle, uint64(h))
	}
	ob := a.rec(old)
	// Find the free block covering dst: the pool's free blocks on this stream.
	target := none
	if fs := a.pools[ob.pool].freeSet(uint64(ob.sidx)); fs != nil {
		fs.All(func(k ordset.Key) bool {
			if k.Lo <= dst && dst < k.Lo+uint64(keySize(k)) {
				target = k.ID
				return false
			}
			return true
		})
	}
	if target == none {
		return alloc.Block{}, fmt.Errorf("%w: caching: %#x is not free memory of the block's pool and stream", alloc.ErrBadMove, dst)
	}
	t := a.rec(target)
	if (dst-t.addr)%uint64(kMinBlockSize) != 0 || dst+uint64(ob.size) > t.end() {
		return alloc.Block{}, fmt.Errorf("%w: caching: %d bytes do not fit at %#x in the free block [%#x, %#x)",
			alloc.ErrBadMove, ob.size, dst, t.addr, t.end())
	}
	a.removeFree(target)
	// Carve [dst, dst+size) out of the target: free pieces before and after.
	if before := int64(dst - t.addr); before > 0 {
		f := a.newBlock(record{addr: t.addr, size: before, sidx: t.sidx, pool: t.pool, mapped: true,
			prev: t.prev, next: target, seg: t.seg})
		if t.prev != none {
			a.blocks[t.prev].next = f
		}
		a.blocks[target].prev = f
		a.insertFree(f)
	}
	if after := int64(t.end() - (dst + uint64(ob.size))); after > 0 {
		f := a.newBlock(record{addr: dst + uint64(ob.size), size: after, sidx: t.sidx, pool: t.pool, mapped: true,
			prev: target, next: a.blocks[target].next, seg: t.seg})
		if n := a.blocks[target].next; n != none {
			a.blocks[n].prev = f
		}
		a.blocks[target].next = f
		a.insertFree(f)
	}
	nb := &a.blocks[target]
	nb.addr, nb.size = dst, ob.size
	a.req[target] = ob.requested
	a.state[target] = stLive
	// Free the old range without touching the counters of live memory.
	a.req[old] = 0
	a.state[old] = stFree
	a.freeBlock(old) // merged or not, the free range keeps record old
	a.swapRecords(old, target)
	if invariants.Enabled {
		a.mustCheck()
	}
	return alloc.Block{Handle: h, Addr: dst, Size: ob.size}, nil
}

// swapRecords moves the free block of record x (in its free set) into
// record y and y's allocated block into x, each record keeping its
// generation, so that a handle, which names its record, follows its
// allocation. The free block leaves and re-enters its free set (and queues)
// under its new id; its gcBase is unchanged (no free-set query between).
func (a *Allocator) swapRecords(x, y int32) {
	a.removeFree(x)
	bx, by := a.rec(x), a.rec(y)
	bx.gen, by.gen = by.gen, bx.gen
	a.put(x, by)
	a.put(y, bx)
	swapped := func(id int32) int32 {
		switch id {
		case x:
			return y
		case y:
			return x
		}
		return id
	}
	for _, id := range [2]int32{x, y} {
		b := &a.blocks[id]
		b.prev, b.next = swapped(b.prev), swapped(b.next)
	}
	for _, id := range [2]int32{x, y} { // then the neighbours' links, which may be x and y themselves
		b := &a.blocks[id]
		if b.prev != none {
			a.blocks[b.prev].next = id
		}
		if b.next != none {
			a.blocks[b.next].prev = id
		}
	}
	a.insertFree(y)
}
