// Size-class allocator: stats, layout and the largest request that fits.
// See package alloc for the overview.

package sizeclass

import (
	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// Stats returns the counters.
func (a *Allocator) Stats() alloc.Stats { return a.st }

// MaxAllocatable is the largest request on stream 0 that would succeed now.
// A request succeeds when its class has a free slot, or when a new slab (or,
// above the largest class, the page-rounded request) fits in what the device
// can give after releasing wholly free slabs: avail = device free + whole
// free slabs. So the answer is the larger of
//
//   - the largest class with a free slot (a request of exactly the class
//     size goes to that class), and
//   - floor(avail / page) × page when that exceeds the largest class (a
//     direct request), otherwise the largest class whose slab fits in avail.
//
// Sizes between classes round up to the next class, so no other size can
// beat these. O(classes).
func (a *Allocator) MaxAllocatable() int64 {
	var best int64
	for ci := len(a.classes) - 1; ci >= 0; ci-- {
		if len(a.classes[ci].free) > 0 {
			best = a.classes[ci].size
			break
		}
	}
	avail := a.dev.Free() + a.wholeFree
	if d := avail - avail%mem.PageSize; d > a.classes[len(a.classes)-1].size {
		return d
	}
	for ci := len(a.classes) - 1; ci >= 0; ci-- {
		if c := &a.classes[ci]; c.slabBytes <= avail {
			return max(best, c.size)
		}
	}
	return best
}

// Layout returns every slab (pool named by its class, stream 0: slabs are
// shared by all streams) and every direct block (pool "direct", its
// request's stream), sorted by address. A slab's blocks are its slots in
// address order, then its tail, if any, as a free block.
func (a *Allocator) Layout() mem.Layout {
	l := mem.Layout{
		Capacity:       a.st.Capacity,
		OtherUse:       a.st.OtherUse,
		DeviceFree:     a.dev.Free(),
		MaxAllocatable: a.MaxAllocatable(),
		Segments:       make([]mem.Segment, 0, a.st.Segments),
	}
	n := a.st.Segments - len(a.order) // direct blocks
	for _, id := range a.order {
		c := &a.classes[a.slabs[id].class]
		n += int(c.perSlab) + 1 // + a possible tail
	}
	// One backing array for all segments. n is enough for every block, so
	// appends never move it and the writes through first below reach the
	// slab segments' blocks.
	blocks := make([]mem.Block, 0, n)
	first := make([]int32, len(a.slabs)) // slab index → its first block in blocks
	for _, id := range a.order {
		s := &a.slabs[id]
		c := &a.classes[s.class]
		start := len(blocks)
		first[id] = int32(start)
		for i := range c.perSlab {
			b := mem.Block{Addr: s.addr + uint64(i)*uint64(c.size), Size: c.size}
			if a.slotPos[s.base+i] < 0 {
				b.State = mem.Active // Requested comes from the handle table below
			}
			blocks = append(blocks, b)
		}
		if used := int64(c.perSlab) * c.size; used < c.slabBytes {
			blocks = append(blocks, mem.Block{Addr: s.addr + uint64(used), Size: c.slabBytes - used})
		}
		l.Segments = append(l.Segments, mem.Segment{
			Addr: s.addr, Size: c.slabBytes, Pool: c.name, Blocks: blocks[start:len(blocks):len(blocks)],
		})
	}
	a.live.Each(func(_ alloc.Handle, e *entry) {
		if e.class >= 0 {
			blocks[first[e.ref.slab]+e.ref.idx].Requested = e.requested
			return
		}
		blocks = append(blocks, mem.Block{Addr: e.addr, Size: e.size, Requested: e.requested, State: mem.Active})
		l.Segments = append(l.Segments, mem.Segment{
			Addr: e.addr, Size: e.size, Stream: e.stream, Pool: DirectPool, Blocks: blocks[len(blocks)-1 : len(blocks) : len(blocks)],
		})
	})
	l.Sort()
	return l
}
