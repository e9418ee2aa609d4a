// Seeding: rebuilding segments that existed before a replay started.
// See package alloc for the overview.

package caching

import (
	"fmt"
	"sort"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/internal/invariants"
)

// SeedBlock is one live allocation of a seeded segment.
type SeedBlock struct {
	Addr      uint64
	Size      int64 // bytes the block occupies: a positive multiple of 512
	Requested int64 // bytes the caller asked for: 1..Size
}

// SeedSegment is a cudaMalloc segment as it stood before a replay started:
// where it is, its pool and stream, and its live blocks. The rest of the
// segment is free; each maximal free run becomes one free block, as the
// allocator's merge rule leaves it.
type SeedSegment struct {
	Addr   uint64
	Size   int64 // a positive multiple of 512
	Stream int
	Small  bool        // the small pool (PyTorch segment_type "small"), else large
	Pool   PoolID      // the private pool that owns it (segment_pool_id); zero: the default pools
	Live   []SeedBlock // in any order; they must lie inside the segment and not overlap
}

// Seed adds segments that existed before a replay started (for example the
// ones a PyTorch memory snapshot shows but its trace never allocated: the
// trace's ring buffer began after them). It returns a handle for every live
// block, in the order of segs and of each segment's Live list, which Free
// accepts like any other.
//
// Seeded segments take physical memory from the device (an error wrapping
// alloc.ErrOutOfMemory if it has too little) but not virtual addresses: the
// device's address space does not know them. A caller that seeds addresses
// the device could hand out later must install a VA hook
// (mem.Device.SetVAHook) that avoids them; snapshot replay does, since it
// hands out the trace's recorded addresses anyway.
//
// Seed checks everything before changing anything: on error the allocator is
// unchanged. It does not count as device allocations or Alloc calls in Stats.
// Only cudaMalloc segments can be seeded, not expandable ones.
func (a *Allocator) Seed(segs []SeedSegment) ([]alloc.Handle, error) {
	a.mut.Mutated()
	if len(segs) == 0 {
		return nil, nil
	}
	if err := a.checkSeed(segs); err != nil {
		return nil, err
	}
	var total int64
	for _, s := range segs {
		total += s.Size
	}
	if !a.dev.Reserve(total) {
		return nil, fmt.Errorf("%w: caching: seeding %d bytes of segments, %d free on the device",
			alloc.ErrOutOfMemory, total, a.dev.Free())
	}
	var handles []alloc.Handle
	for _, s := range segs {
		handles = a.seedSegment(s, handles)
	}
	if invariants.Enabled {
		a.mustCheck()
	}
	return handles, nil
}

// seedSegment links one checked segment's blocks and appends the handles of
// its live blocks, in s.Live order.
func (a *Allocator) seedSegment(s SeedSegment, handles []alloc.Handle) []alloc.Handle {
	p := 2*a.openSet(s.Pool) + largePool
	if s.Small {
		p--
	}
	sidx := uint32(a.internStream(s.Stream))
	order := make([]int, len(s.Live))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return s.Live[order[i]].Addr < s.Live[order[j]].Addr })
	ids := make([]int32, len(s.Live))
	prev := none
	link := func(addr uint64, size int64) int32 {
		id := a.newBlock(record{addr: addr, size: size, sidx: sidx, pool: p, mapped: true, prev: prev, next: none, seg: none})
		if prev != none {
			a.blocks[prev].next = id
		}
		prev = id
		return id
	}
	var free []int32
	at := s.Addr
	for _, i := range order {
		lb := s.Live[i]
		if lb.Addr > at {
			free = append(free, link(at, int64(lb.Addr-at)))
		}
		id := link(lb.Addr, lb.Size)
		a.state[id] = stLive
		a.req[id] = lb.Requested
		a.blocks[id].gen++
		a.live++
		a.allocated += lb.Size
		a.requested += lb.Requested
		ids[i] = id
		at = lb.Addr + uint64(lb.Size)
	}
	if end := s.Addr + uint64(s.Size); end > at {
		free = append(free, link(at, int64(end-at)))
	}
	a.addBase(s.Addr, s.Size, sidx, p)
	a.countSegment(p, 1)
	for _, id := range free {
		a.insertFree(id)
	}
	a.reserved += s.Size
	a.peakReserved = max(a.peakReserved, a.reserved)
	a.peakAllocated = max(a.peakAllocated, a.allocated)
	a.segments++
	for _, id := range ids {
		handles = append(handles, handleOf(id, a.blocks[id].gen))
	}
	return handles
}

// checkSeed validates seeded segments against each other and against the
// segments the allocator already holds.
func (a *Allocator) checkSeed(segs []SeedSegment) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: caching: seed: %s", alloc.ErrBadSpec, fmt.Sprintf(format, args...))
	}
	type span struct{ lo, hi uint64 }
	var spans []span
	for id := range a.blocks {
		b := a.rec(int32(id))
		if b.inUse && b.prev == none {
			hi := b.end()
			for n := b.next; n != none; n = a.blocks[n].next {
				hi = a.blocks[n].end()
			}
			spans = append(spans, span{b.addr, hi})
		}
	}
	// Comparing each segment with every span before it is quadratic (45,000
	// seeded segments made 10^9 comparisons). Sorted by address, disjoint
	// spans show in one pass; only when two overlap (a caller's mistake)
	// does the loop below compare pairs, to name the first overlap in order.
	all := append([]span(nil), spans...)
	for _, s := range segs {
		if end := s.Addr + uint64(s.Size); s.Size > 0 && end > s.Addr {
			all = append(all, span{s.Addr, end})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].lo < all[j].lo })
	disjoint := true
	for i := 1; i < len(all) && disjoint; i++ {
		disjoint = all[i].lo >= all[i-1].hi
	}
	for i, s := range segs {
		if s.Size <= 0 || s.Size%kMinBlockSize != 0 || s.Addr%uint64(kMinBlockSize) != 0 {
			return bad("segment %d at %#x: size %d and address must be positive multiples of 512", i, s.Addr, s.Size)
		}
		end := s.Addr + uint64(s.Size)
		if end < s.Addr {
			return bad("segment %d at %#x: size %d overflows the address space", i, s.Addr, s.Size)
		}
		if s.Stream < 0 {
			return bad("segment %d at %#x: negative stream %d", i, s.Addr, s.Stream)
		}
		live := append([]SeedBlock(nil), s.Live...)
		sort.Slice(live, func(x, y int) bool { return live[x].Addr < live[y].Addr })
		at := s.Addr
		for _, lb := range live {
			switch {
			case lb.Size <= 0 || lb.Size%kMinBlockSize != 0:
				return bad("segment %d at %#x: block at %#x: size %d not a positive multiple of 512", i, s.Addr, lb.Addr, lb.Size)
			case lb.Requested <= 0 || lb.Requested > lb.Size:
				return bad("segment %d at %#x: block at %#x: requested %d not in 1..%d", i, s.Addr, lb.Addr, lb.Requested, lb.Size)
			case lb.Addr < at || lb.Addr+uint64(lb.Size) > end || lb.Addr+uint64(lb.Size) < lb.Addr:
				return bad("segment %d at %#x: block at %#x (%d bytes) overlaps another or leaves the segment", i, s.Addr, lb.Addr, lb.Size)
			}
			at = lb.Addr + uint64(lb.Size)
		}
		if !disjoint {
			for _, sp := range spans {
				if s.Addr < sp.hi && sp.lo < end {
					return bad("segment %d at %#x overlaps a segment at %#x", i, s.Addr, sp.lo)
				}
			}
			spans = append(spans, span{s.Addr, end})
		}
	}
	if len(a.streams)+len(segs) > maxStreams {
		return bad("more than %d streams", maxStreams)
	}
	newPools := map[PoolID]bool{}
	for _, s := range segs {
		if _, ok := a.poolSets[s.Pool]; s.Pool != (PoolID{}) && !ok {
			newPools[s.Pool] = true
		}
	}
	if len(a.private)+len(newPools) > MaxPrivatePools {
		return bad("more than %d private pools", MaxPrivatePools)
	}
	return nil
}

// ReleaseSegment gives back to the device the cudaMalloc segment that starts
// at addr if it is wholly free, as release_block does when empty_cache, the
// out-of-memory ladder or garbage collection frees that one segment, and
// reports whether it did. Snapshot replay calls it for each recorded
// segment_free, so the model releases exactly the segments the real
// allocator released. It costs a map lookup and a search of one free set:
// the segment is wholly free exactly when its pool's free set for its
// stream holds a block of the segment's size at its base. (It scanned every
// block record, which made a replay over 45,000 segments quadratic.)
func (a *Allocator) ReleaseSegment(addr uint64) bool {
	a.mut.Mutated()
	if a.bases == nil {
		a.indexBases()
	}
	sb, ok := a.bases[addr]
	if !ok {
		return false
	}
	fs := a.pools[sb.pool].freeSet(uint64(sb.sidx))
	if fs == nil {
		return false
	}
	want := freeKey(sb.size, addr)
	_, k, found := fs.Find(want)
	if !found || k.Hi != want.Hi || k.Lo != want.Lo {
		return false
	}
	a.releaseBlock(k.ID)
	if invariants.Enabled {
		a.mustCheck()
	}
	return true
}

// segBase is a cudaMalloc segment of Allocator.bases: its size, stream
// index and pool.
type segBase struct {
	size int64
	sidx uint32
	pool uint16
}

// addBase records a new cudaMalloc segment in Allocator.bases, once
// ReleaseSegment has built it.
func (a *Allocator) addBase(addr uint64, size int64, sidx uint32, pool uint16) {
	if a.bases != nil {
		a.bases[addr] = segBase{size: size, sidx: sidx, pool: pool}
	}
}

// indexBases builds Allocator.bases from the block records: O(blocks), once.
// Allocators that never release a single segment (every one but a snapshot
// replay's) never pay for the index.
func (a *Allocator) indexBases() {
	a.bases = make(map[uint64]segBase, a.segments)
	for id := range a.blocks {
		b := a.rec(int32(id))
		if !b.inUse || b.seg != none || b.prev != none {
			continue
		}
		size := b.size
		for c := b.next; c != none; c = a.blocks[c].next {
			size += a.blocks[c].size
		}
		a.bases[b.addr] = segBase{size: size, sidx: b.sidx, pool: b.pool}
	}
}
