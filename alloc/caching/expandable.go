// expandable_segments: one growing virtual range per stream and pool.
// See package alloc for the overview.

package caching

import "github.com/gpufrag/gpufrag/alloc/internal/ordset"

// vaFactor: an expandable segment reserves VA for 1⅛ of the device memory,
// as PyTorch does (address_space_size = total + total/8), so pages unmapped
// early in the range can be re-mapped at its end.
const (
	vaNum = 9
	vaDen = 8
)

func (a *Allocator) pageSize(p uint16) int64 {
	if isSmallPool(p) {
		return kSmallBuffer
	}
	return kLargeBuffer
}

// allocatable: a neighbour that can be part of a new allocation's range.
func (a *Allocator) allocatable(id int32) bool {
	return id != none && !a.isAllocated(id)
}

// tryAllocateExpandable is try_allocate_expandable_block: find free or
// unmapped room for size bytes at the lowest address, map what is missing,
// and return the block (removed from the free set).
func (a *Allocator) tryAllocateExpandable(p uint16, stream int, size int64) (int32, bool) {
	c := a.findExpandableBlock(p, stream, size)
	if c == none {
		return none, false
	}
	if !a.isMapped(c) {
		var ok bool
		if c, ok = a.mapBlock(c, min(a.blocks[c].size, size)); !ok {
			return none, false
		}
	}
	for a.blocks[c].size < size {
		nc := a.blocks[c].next
		if nc == none || a.isMapped(nc) {
			return none, false // cannot happen: findExpandableBlock checked the room
		}
		var ok bool
		if c, ok = a.mapBlock(nc, min(size-a.blocks[c].size, a.blocks[nc].size)); !ok {
			return none, false
		}
	}
	a.removeFree(c)
	return c, true
}

// findExpandableBlock is find_expandable_block: the first unmapped block of
// this stream (in address order), or the free block just before it, from
// which a run of free and unmapped blocks holds size bytes; else a new
// segment's whole unmapped range.
func (a *Allocator) findExpandableBlock(p uint16, stream int, size int64) int32 {
	found := none
	sk := a.internStream(stream)
	a.pools[p].unmapped.Ascend(ordset.Key{Hi: sk}, func(k ordset.Key) bool {
		if k.Hi != sk {
			return false
		}
		c := k.ID
		if prev := a.blocks[c].prev; a.allocatable(prev) {
			c = prev
		}
		var bytes int64
		for b := c; bytes < size && a.allocatable(b); b = a.blocks[b].next {
			bytes += a.blocks[b].size
		}
		if bytes >= size {
			found = c
			return false
		}
		return true
	})
	if found != none {
		return found
	}
	page := a.pageSize(p)
	va := a.dev.Capacity() * vaNum / vaDen
	va = (va + page - 1) / page * page
	base, ok := a.dev.TryReserveVA(va)
	if !ok {
		return none // no address range left for a new segment: out of memory
	}
	seg := int32(len(a.exp))
	a.exp = append(a.exp, expSegment{base: base, size: va, pageSize: page, stream: stream, pool: p, live: true})
	a.countSegment(p, 1)
	id := a.newBlock(record{addr: a.exp[seg].base, size: va, sidx: uint32(sk), pool: p, prev: none, next: none, seg: seg})
	a.insertUnmapped(id)
	return id
}

// mapBlock is map_block: map the pages covering the first n bytes of an
// unmapped block (all or nothing), split off the unmapped rest, merge with
// free mapped neighbours and insert into the free set. It returns the id of
// the resulting free block.
func (a *Allocator) mapBlock(id int32, n int64) (int32, bool) {
	b := &a.blocks[id]
	seg := &a.exp[a.cold[id].seg]
	mapped := (n + seg.pageSize - 1) / seg.pageSize * seg.pageSize // b.addr is page aligned
	if !a.dev.Reserve(mapped) {
		return none, false
	}
	a.removeUnmapped(id)
	a.state[id] |= stMapped
	prevMapped := b.prev != none && a.isMapped(b.prev)
	nextMapped := false
	if mapped < b.size {
		rest := a.newBlock(record{addr: b.addr + uint64(mapped), size: b.size - mapped, sidx: b.sidx, pool: a.bpool[id],
			prev: id, next: a.blocks[id].next, seg: a.cold[id].seg})
		b = &a.blocks[id]
		if b.next != none {
			a.blocks[b.next].prev = rest
		}
		b.next = rest
		b.size = mapped
		a.insertUnmapped(rest)
	} else {
		nextMapped = b.next != none && a.isMapped(b.next)
	}
	a.segments += 1 - btoi(prevMapped) - btoi(nextMapped)
	id = a.tryMerge(id, a.blocks[id].prev)
	id = a.tryMerge(id, a.blocks[id].next)
	a.insertFree(id)
	a.reserved += mapped
	a.peakReserved = max(a.peakReserved, a.reserved)
	a.deviceAllocs++
	return id, true
}

// unmapBlock is unmap_block: give back the whole pages strictly inside a
// free mapped block; partial-page slivers at either end stay mapped as free
// blocks. It returns the id of the unmapped block (merged with unmapped
// neighbours), or the block's own id when no whole page was inside.
func (a *Allocator) unmapBlock(id int32) int32 {
	b := &a.blocks[id]
	u0, u1 := a.wholePages(id)
	if u0 >= u1 {
		return id
	}
	a.removeFree(id)
	leftMapped := u0 > b.addr || (b.prev != none && a.isMapped(b.prev))
	rightMapped := u1 < b.end() || (b.next != none && a.isMapped(b.next))
	a.segments += btoi(leftMapped) + btoi(rightMapped) - 1
	if before := int64(u0 - b.addr); before > 0 {
		f := a.newBlock(record{addr: a.blocks[id].addr, size: before, sidx: a.blocks[id].sidx, pool: a.bpool[id],
			mapped: true, prev: a.blocks[id].prev, next: id, seg: a.cold[id].seg})
		b = &a.blocks[id]
		if b.prev != none {
			a.blocks[b.prev].next = f
		}
		b.prev = f
		a.insertFree(f)
	}
	if after := int64(b.end() - u1); after > 0 {
		f := a.newBlock(record{addr: u1, size: after, sidx: a.blocks[id].sidx, pool: a.bpool[id],
			mapped: true, prev: id, next: a.blocks[id].next, seg: a.cold[id].seg})
		b = &a.blocks[id]
		if b.next != none {
			a.blocks[b.next].prev = f
		}
		b.next = f
		a.insertFree(f)
	}
	b.addr, b.size = u0, int64(u1-u0)
	a.state[id] &^= stMapped
	a.dev.Release(b.size)
	a.reserved -= b.size
	a.deviceFrees++
	id = a.tryMerge(id, a.blocks[id].prev)
	id = a.tryMerge(id, a.blocks[id].next)
	a.insertUnmapped(id)
	return id
}

// releaseExpandableSegment drops a segment whose whole range is unmapped.
func (a *Allocator) releaseExpandableSegment(id int32) {
	a.removeUnmapped(id)
	a.countSegment(a.bpool[id], -1)
	a.exp[a.cold[id].seg].live = false
	a.dropBlock(id)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
