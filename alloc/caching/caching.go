// The caching allocator: allocation and free paths.
// See package alloc for the overview.

package caching

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/ordset"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/mem"
)

// Allocator models one device's DeviceCachingAllocator.
//
// Invariants (CheckInvariants verifies them):
//
//	reserved == Σ sizes of mapped blocks == dev.Used()
//	allocated == Σ sizes of allocated blocks; requested == Σ their requests
//	a block is in exactly one of: a pool's free set, a pool's unmapped set,
//	  allocated (live == their number; handleOf(id, gen) names each)
//	no two adjacent blocks of a segment are both free with the same mapped state
//	cudaMalloc segments never hold unmapped blocks
//	blocks, cold, req, bpool and state have one entry a record
type Allocator struct {
	cfg Config
	hot hotConfig // derived from cfg
	dev *mem.Device

	blocks  []block     // block records by id, their hot part; +newBlock, -dropBlock
	cold    []blockCold // the rest of each record (block's comment)
	req     []int64     // each record's request while allocated, 0 when free
	bpool   []uint16    // each record's pool (record.pool)
	state   []uint8     // allocated, mapped and in-use bits of each record (stateOf)
	freeIDs []int32     // ids of unused records, reused LIFO
	pools   []pool      // by index: 2·set + (small 0, large 1); set 0 is the default pools (smallPool, largePool), set s ≥ 1 the private pool private[s-1]
	// private are the private pools (CUDA graphs, MemPools) by set − 1, and
	// poolSets their sets by id; see private.go. Empty until the first one.
	private  []privateSet
	poolSets map[PoolID]uint16
	exp      []expSegment
	live     int   // live allocations (allocated records)
	segments int   // cudaMalloc segments + mapped runs of expandable segments
	streams  []int // stream of each dense stream index, in order of first use; only grows
	// streamIdx is the inverse of streams: a stream's dense index. A scan
	// of streams on every allocation made 20,000 streams cost 16 µs a pair
	// (BenchmarkStreams); nil until the first stream.
	streamIdx map[int]uint32
	// streamHint is the index streamIndex last found (any value is
	// safe: it is checked against streams before use).
	streamHint uint32
	// bases are the cudaMalloc segments by base address (expandable ones
	// are not in it), so that ReleaseSegment finds one without scanning
	// every block record: snapshot replay calls it for each segment_free,
	// and the scan made a trace over 45,000 segments quadratic. nil until
	// the first ReleaseSegment builds it; kept from then on.
	bases map[uint64]segBase
	// queued: the pools' whole and unmappable queues are kept (index.go);
	// false until the first empty_cache, out-of-memory ladder or garbage
	// collection builds them, so an allocator that never needs them pays
	// one compare per free-set change.
	queued bool
	// largest answers LargestFreeBlock (index.go); nil until it is asked.
	largest *maxIndex
	// indexed is queued || largest != nil: whether a block entering or
	// leaving a free set must be indexed, one test on the hot paths
	// instead of two.
	indexed bool
	// fast is !cfg.ExpandableSegments && !hot.gc && !indexed: Alloc's one
	// test for the best fit it writes out (otherwise getFreeBlock). noRest
	// is !hot.gc && !indexed: Free's and splitLow's one test for what
	// insertFree does after the insert (freeRest).
	fast, noRest bool
	// into is the pool set Alloc allocates into: 0 (the default pools)
	// but while AllocIn routes a call of Alloc to a private pool.
	into uint16

	reserved, allocated, requested int64
	peakReserved, peakAllocated    int64
	allocs, frees, ooms            int64
	deviceAllocs, deviceFrees      int64
	retries                        int64

	// mut counts the calls that can change the state (Alloc, Free,
	// EmptyCache, Relocate, Seed, ReleaseSegment) and gives the stamp. See
	// trip.go.
	mut alloc.Mutations
}

// New returns a caching allocator over dev.
func New(dev *mem.Device, cfg Config) (*Allocator, error) {
	if dev == nil {
		return nil, fmt.Errorf("%w: caching: nil device", alloc.ErrBadSpec)
	}
	if err := dev.CheckUnused("caching"); err != nil {
		return nil, err
	}
	if cfg.MaxNonSplitRounding == 0 {
		cfg.MaxNonSplitRounding = kLargeBuffer
	}
	a := &Allocator{cfg: cfg, hot: cfg.hot(), dev: dev, pools: make([]pool, 2)}
	a.noRest = !a.hot.gc
	a.fast = a.noRest && !cfg.ExpandableSegments
	return a, nil
}

// hotConfig is what the hot paths would otherwise recompute from the
// configuration on every call (Config.hot).
type hotConfig struct {
	gc       bool   // gcEnabled
	plain    bool   // no roundup_power2_divisions: round_size is the next multiple of 512
	maxSplit int64  // Config.maxSplit
	nonSplit int64  // Config.nonSplitRounding
	smallFit uint64 // fitLimit of a request below maxSplit
}

func (c *Config) hot() hotConfig {
	h := hotConfig{gc: c.PerProcessMemoryFraction > 0 && c.GCThreshold > 0, plain: true,
		maxSplit: c.maxSplit(), nonSplit: c.nonSplitRounding()}
	h.smallFit = uint64(h.maxSplit-1) >> 9
	for _, d := range c.RoundupDivisions {
		if d > 1 {
			h.plain = false
		}
	}
	return h
}

// roundSize is Config.roundSize, without its division lookup when no
// divisions are configured.
func (a *Allocator) roundSize(size int64) int64 {
	if a.hot.plain {
		return max(kMinBlockSize, (size+kMinBlockSize-1)&^(kMinBlockSize-1))
	}
	return a.cfg.roundSize(size)
}

// FromSpec parses PYTORCH_CUDA_ALLOC_CONF-style args and returns an allocator.
func FromSpec(dev *mem.Device, args string) (alloc.Allocator, error) {
	cfg, err := ParseConfig(args)
	if err != nil {
		return nil, err
	}
	return New(dev, cfg)
}

// Spec implements alloc.Allocator.
func (a *Allocator) Spec() string {
	if s := a.cfg.String(); s != "" {
		return "caching:" + s
	}
	return "caching"
}

// Config returns the allocator's configuration.
func (a *Allocator) Config() Config { return a.cfg }

func (a *Allocator) gcEnabled() bool { return a.hot.gc }

// allowedMax is allowed_memory_maximum, or -1 when no fraction is set.
func (a *Allocator) allowedMax() int64 {
	if a.cfg.PerProcessMemoryFraction <= 0 {
		return -1
	}
	return int64(a.cfg.PerProcessMemoryFraction * float64(a.dev.Capacity()))
}

func poolFor(size int64) uint16 {
	if size <= kSmallSize {
		return smallPool
	}
	return largePool
}

// Alloc is DeviceCachingAllocator::malloc.
//
//  1. Round the request (round_size) and pick the pool (≤ 1 MiB: small).
//  2. Best fit in the pool's free set (get_free_block).
//  3. Otherwise: garbage-collect if configured; cudaMalloc a new segment (or
//     map pages of an expandable segment); on failure free oversize cached
//     blocks and retry; on failure free every wholly free segment and retry.
//  4. Otherwise fail with PyTorch's out-of-memory fields.
//  5. Split the block if should_split says so; the caller gets the low end.
//
// Alloc allocates into pool set a.into: 0, the default pools, except
// while AllocIn routes an allocation to a private pool. An allocation
// into a private pool happens while PyTorch has a capture (or a MemPool
// context) underway, when malloc skips the last rung of the ladder
// (release_cached_blocks and retry). The set is a field, not a parameter,
// so that Alloc is malloc itself rather than a call of it: the wrapper
// and the parameter's spill were ~14 of a free+alloc pair's ~680
// instructions (callgrind).
//
// The hot path (get_free_block without expandable segments, garbage
// collection or indexes, a.fast; and alloc_found_block) is written out here
// rather than called: the calls' prologues, spills and reloads were ~45 of
// a free+alloc pair's ~800 instructions (callgrind). A hit jumps over the
// other paths (mallocSlow, with getFreeBlock when !a.fast) to the found
// block, so that nothing they need is reloaded on it. Its test:
// TestBestFitAgainstWalk.
func (a *Allocator) Alloc(orig int64, stream int) (alloc.Block, error) {
	if orig <= 0 {
		return alloc.Block{}, fmt.Errorf("%w: caching: got %d", alloc.ErrInvalidSize, orig)
	}
	a.mut.Mutated()
	// Past mem.MaxRequest no device holds the request; rounding it as
	// MaxRequest keeps the sizes below from wrapping, and it fails like any
	// request the device cannot hold.
	size := a.roundSize(min(orig, mem.MaxRequest))
	var id int32
	if a.fast {
		// getFreeBlock's cudaMalloc-segment path, without garbage
		// collection or indexes to keep (otherwise mallocSlow's
		// getFreeBlock). The pool is found after the stream, and
		// mallocSlow finds it again, so that nothing is kept across
		// streamSlot's map lookup or TakeBest but what the found block
		// needs.
		// streamIndex, written out: a stream never used gets noStream.
		var si uint64
		if h := a.streamHint; int(h) < len(a.streams) && a.streams[h] == stream {
			si = uint64(h)
		} else {
			si = a.streamSlot(stream)
		}
		pl := &a.pools[2*a.into+poolFor(size)]
		if fs := pl.freeSet(si); fs != nil { // nil for a stream never used
			if cand, ok := fs.TakeBest(uint64(size)>>9, a.fitLimit(size)); ok {
				id = cand.ID
				goto found
			}
		}
	}
	{
		var ok bool
		if id, ok = a.mallocSlow(orig, size, stream); !ok {
			return alloc.Block{}, a.oomError(orig, size)
		}
	}
found:
	// allocFoundBlock, written out.
	b := &a.blocks[id]
	if a.shouldSplit(b.size, size) {
		id = a.splitLow(id, size)
		b = &a.blocks[id]
	}
	a.state[id] = stLive // a free block in a free set is mapped
	a.req[id] = orig
	b.gen++
	a.live++
	a.allocated += b.size
	a.requested += orig
	a.peakAllocated = max(a.peakAllocated, a.allocated)
	a.allocs++
	if invariants.Enabled {
		a.mustCheck()
	}
	return alloc.Block{Handle: handleOf(id, b.gen), Addr: b.addr, Size: b.size}, nil
}

// mallocSlow is Alloc's search for a block of size bytes (orig
// requested) on a stream other than by the hot path: best fit with
// expandable segments, or with garbage collection or indexes, or (any of
// these) a new segment. The block it returns is not in any free set.
//
//go:noinline
func (a *Allocator) mallocSlow(orig, size int64, stream int) (int32, bool) {
	p := 2*a.into + poolFor(size)
	if a.cfg.ExpandableSegments {
		if id, ok := a.getFreeBlockExpandable(p, stream, size); ok {
			return id, true
		}
	} else if !a.fast {
		if id, ok := a.getFreeBlock(p, stream, size); ok {
			return id, true
		}
	}
	return a.newSegmentBlock(p>>1, p, orig, size, stream)
}

// getFreeBlock is get_free_block without expandable segments: best fit
// in the pool's free set of the stream, subject to the oversize rules. It
// removes the block from the free set when it returns true. (Alloc does the
// same when a.fast.)
func (a *Allocator) getFreeBlock(p uint16, stream int, size int64) (int32, bool) {
	pl := &a.pools[p]
	if a.hot.gc {
		pl.freeCalls++
	}
	si, known := a.streamIndex(stream)
	fs := pl.freeSet(si)
	if !known || fs == nil {
		return none, false
	}
	cand, ok := fs.TakeBest(uint64(size)>>9, a.fitLimit(size))
	if !ok {
		return none, false
	}
	if a.indexed {
		a.unindexFree(cand.ID)
	}
	return cand.ID, true
}

// fitLimit is the largest size class best fit may take for a request of
// size bytes under the oversize rules: a small request (below
// max_split_size m) never takes an oversize block (size ≥ m), an oversize
// request takes a block only if it wastes less than max_non_split_rounding
// r (size < request + r).
func (a *Allocator) fitLimit(size int64) uint64 {
	if size >= a.hot.maxSplit {
		return uint64(size+a.hot.nonSplit-1) >> 9
	}
	return a.hot.smallFit
}

// newSegmentBlock is Alloc's path when no cached block fits: garbage
// collection if configured, then a new segment, the out-of-memory ladder
// (free oversize blocks, then every wholly free segment unless a private
// pool is being allocated into) and a retry after each rung.
func (a *Allocator) newSegmentBlock(set, p uint16, orig, size int64, stream int) (int32, bool) {
	allocSize := allocationSize(size)
	if a.hot.gc {
		a.garbageCollect()
	}
	id, ok := a.allocBlock(p, stream, size, allocSize)
	if !ok && a.releaseAvailableCachedBlocks(p, stream, size) {
		id, ok = a.allocBlock(p, stream, size, allocSize)
	}
	if !ok && set == 0 {
		a.releaseCachedBlocks()
		a.retries++
		id, ok = a.allocBlock(p, stream, size, allocSize)
	}
	if !ok {
		a.ooms++
	}
	return id, ok
}

// oomError is the out-of-memory error of a request that failed.
func (a *Allocator) oomError(orig, size int64) error {
	allocSize := allocationSize(size)
	if orig > mem.MaxRequest {
		allocSize = orig
	}
	return &alloc.OOMError{
		Requested: orig, AllocSize: allocSize, Capacity: a.dev.Capacity(),
		DeviceFree: a.dev.Free(), Allocated: a.allocated, Reserved: a.reserved,
	}
}

// getFreeBlockExpandable is get_free_block with expandable segments: the
// smallest free block on this stream of at least size bytes, lowest address
// on ties, subject to the oversize rules, where a block that can grow into
// unmapped VA counts as that large. It removes the block from the free set
// when it returns true. (Alloc does the same without expandable segments.)
func (a *Allocator) getFreeBlockExpandable(p uint16, stream int, size int64) (int32, bool) {
	pl := &a.pools[p]
	if a.hot.gc {
		pl.freeCalls++
	}
	si, known := a.streamIndex(stream)
	fs := pl.freeSet(si)
	if !known || fs == nil {
		return none, false
	}
	lim := a.fitLimit(size) // the oversize rules
	pos, cand, found := fs.Find(freeKey(size, 0))
	if !found {
		return none, false
	}
	if a.cold[cand.ID].seg != none {
		// A free block that can grow into unmapped VA counts as that large
		// for best fit: walk on while the next candidate can grow less, so
		// the growing tail is used only when nothing else fits.
		first, cur := cand, cand
		fs.Ascend(cand, func(k ordset.Key) bool {
			if k == first {
				return true
			}
			if a.cold[cur.ID].seg == none || a.expandableSize(k.ID) >= a.expandableSize(cur.ID) {
				return false
			}
			cur = k
			return true
		})
		if cur != first {
			cand = cur
			pos, _, _ = fs.Find(cand)
		}
	}
	if cand.Hi > lim {
		return none, false
	}
	fs.DeleteAt(pos, cand)
	if a.indexed {
		a.unindexFree(cand.ID)
	}
	return cand.ID, true
}

// expandableSize is the block's size plus the unmapped VA right after it.
func (a *Allocator) expandableSize(id int32) int64 {
	b := &a.blocks[id]
	s := b.size
	if b.next != none && !a.isMapped(b.next) {
		s += a.blocks[b.next].size
	}
	return s
}

// allocBlock is alloc_block: a new segment from the device (or expandable
// pages). The block it returns is not in any free set.
func (a *Allocator) allocBlock(p uint16, stream int, size, allocSize int64) (int32, bool) {
	if lim := a.allowedMax(); lim >= 0 && a.reserved+allocSize > lim {
		return none, false
	}
	if a.cfg.ExpandableSegments {
		return a.tryAllocateExpandable(p, stream, size)
	}
	if !a.dev.Reserve(allocSize) {
		return none, false
	}
	addr, ok := a.dev.TryReserveVA(allocSize)
	if !ok {
		a.dev.Unreserve(allocSize) // no address range left for it: out of memory all the same
		return none, false
	}
	id := a.newBlock(record{addr: addr, size: allocSize, sidx: uint32(a.internStream(stream)), pool: p,
		mapped: true, prev: none, next: none, seg: none})
	a.addBase(addr, allocSize, a.blocks[id].sidx, p)
	a.countSegment(p, 1)
	a.reserved += allocSize
	a.peakReserved = max(a.peakReserved, a.reserved)
	a.segments++
	a.deviceAllocs++
	return id, true
}

// shouldSplit is should_split of a block of bsize bytes for a request of
// size bytes (rounded), which Alloc took from the pool of that size: the
// block is in a small pool if and only if size is at most kSmallSize
// (poolFor), so its pool is not read.
func (a *Allocator) shouldSplit(bsize, size int64) bool {
	remaining := bsize - size
	if size <= kSmallSize || a.cfg.ExpandableSegments {
		return remaining >= kMinBlockSize
	}
	return size < a.hot.maxSplit && remaining > kSmallSize
}

// splitLow is alloc_found_block's split: a new record takes the low size
// bytes of free block id, which keeps the rest and returns to its free
// set. It returns the new record's id.
//
// newBlock's reuse of a free record is written out: passing the record by
// value to newBlock built it on the stack and copied it twice, ~30
// instructions a split (callgrind).
//
// A reused record's cold part is written only where it can differ: its seg
// with expandable segments (without, every record's is none), its gcBase
// when the block enters a free set with garbage collection (Alloc's found
// block, the new record, is allocated at once); its qpos is 0 (dropBlock's
// record left every queue) and its request 0 (dropBlock's and Free's).
func (a *Allocator) splitLow(id int32, size int64) int32 {
	b := &a.blocks[id]
	addr, sidx, pool, prev := b.addr, b.sidx, a.bpool[id], b.prev
	var nid int32
	if n := len(a.freeIDs); n > 0 {
		nid = a.freeIDs[n-1]
		a.freeIDs = a.freeIDs[:n-1]
		nb := &a.blocks[nid] // every field but gen, which the record keeps
		nb.addr, nb.size, nb.prev, nb.next, nb.sidx = addr, size, prev, id, sidx
		a.bpool[nid] = pool
		a.state[nid] = stFree
		if a.cfg.ExpandableSegments {
			a.cold[nid].seg = a.cold[id].seg
		}
	} else {
		nid = a.newBlock(record{addr: addr, size: size, sidx: sidx, pool: pool, mapped: true,
			prev: prev, next: id, seg: a.cold[id].seg})
		b = &a.blocks[id] // newBlock has grown the slice
	}
	if b.prev != none {
		a.blocks[b.prev].next = nid
	}
	b.prev = nid
	b.addr += uint64(size)
	b.size -= size
	// insertFree(id), written out (a call less on every split).
	pl := &a.pools[pool]
	var fs *ordset.Classed
	if int(sidx) < len(pl.free) {
		fs = pl.free[sidx]
	}
	if fs == nil {
		fs = pl.newFreeSet(sidx)
	}
	fs.Insert(ordset.Key{Hi: uint64(b.size) >> 9, Lo: b.addr, ID: id})
	if !a.noRest {
		a.freeRest(id)
	}
	return nid
}

// freeRest is insertFree's part for when !a.noRest, for block id, which
// has just entered its free set: its gcBase with garbage collection, and
// the indexes once they are kept.
func (a *Allocator) freeRest(id int32) {
	if a.hot.gc {
		a.cold[id].gcBase = a.pools[a.bpool[id]].freeCalls
	}
	if a.indexed {
		a.indexFree(id)
	}
}

// Free is free + free_block: the block becomes free at once (no
// cross-stream uses are modelled), merges with free neighbours of its
// segment and returns to its pool's free set. Memory never goes back to the
// device here; only EmptyCache, the out-of-memory path and GC do that.
func (a *Allocator) Free(h alloc.Handle) error {
	// lookup, written out: its record is the one used below, with no
	// second bounds check, and its two failures one branch each.
	i := int(uint32(h)) - 1 // the record's id; handle 0 gives −1
	if uint(i) >= uint(len(a.blocks)) {
		return badHandle(h)
	}
	b := &a.blocks[i]
	st := a.state
	if st[i] != stLive || b.gen != uint32(h>>32) {
		return badHandle(h)
	}
	id := int32(i)
	a.mut.Mutated()
	a.allocated -= b.size
	rq := &a.req[i]
	a.requested -= *rq
	*rq = 0
	a.live--
	a.frees++
	// freeBlock, with its common case written out: no neighbour merges (a
	// neighbour merges if its state byte is the block's own, free and
	// mapped; mostly it is allocated).
	// none (−1) is past the state bytes as an unsigned index: one compare
	// both tests for it and bounds the index.
	st[i] = stFree // an allocated block is mapped
	p, n := b.prev, b.next
	mp := uint(int(p)) < uint(len(st)) && st[p] == stFree
	mn := uint(int(n)) < uint(len(st)) && st[n] == stFree
	if !mp && !mn {
		// insertFree, written out (a call less on three frees in four).
		pl := &a.pools[a.bpool[i]]
		var fs *ordset.Classed
		if int(b.sidx) < len(pl.free) {
			fs = pl.free[b.sidx]
		}
		if fs == nil {
			fs = pl.newFreeSet(b.sidx)
		}
		fs.Insert(ordset.Key{Hi: uint64(b.size) >> 9, Lo: b.addr, ID: id})
		if !a.noRest {
			a.freeRest(id)
		}
	} else {
		a.mergeFree(id, p, n, mp, mn)
	}
	if invariants.Enabled {
		a.mustCheck()
	}
	return nil
}

// badHandle is Free's error for a handle that names no live block.
//
//go:noinline
func badHandle(h alloc.Handle) error {
	return fmt.Errorf("%w: caching: handle %#x", alloc.ErrInvalidHandle, uint64(h))
}

// freeBlock merges a newly free mapped block with its neighbours and inserts
// the result into the free set.
func (a *Allocator) freeBlock(id int32) {
	// tryMerge's test, inlined: a neighbour merges if its state byte is
	// the block's own (free and mapped); mostly it is allocated.
	st := a.state[id]
	if p := a.blocks[id].prev; p != none && a.state[p] == st {
		id = a.tryMerge(id, p)
	}
	if n := a.blocks[id].next; n != none && a.state[n] == st {
		id = a.tryMerge(id, n)
	}
	a.insertFree(id)
}

// mergeFree is freeBlock for Free, which has tested the neighbours: id
// merges with its lower neighbour p if mp, then with its upper one n if mn
// (merging with p leaves id's record and its next link as they were).
//
// A free mapped neighbour lies in id's segment, so in its pool and on its
// stream: in the free set id returns to, which is found once, from id's
// record, for the neighbours' deletes and id's insert.
func (a *Allocator) mergeFree(id, p, n int32, mp, mn bool) {
	fs := a.pools[a.bpool[id]].freeSet(uint64(a.blocks[id].sidx)) // not nil: a neighbour is in it
	if mp {
		a.mergeIn(fs, id, p)
	}
	if mn {
		a.mergeIn(fs, id, n)
	}
	b := &a.blocks[id]
	fs.Insert(ordset.Key{Hi: uint64(b.size) >> 9, Lo: b.addr, ID: id})
	if !a.noRest {
		a.freeRest(id)
	}
}

// mergeIn is merge for mergeFree: dst absorbs its free mapped neighbour
// src, which is in free set fs. Its tail (the splice of the neighbour links,
// the size, the drop) is merge's, written out in both: as a shared helper it
// is over the inliner's budget, and a call on every merge of Free's path is
// what h/caching12 took out (docs/benchmarks.md, eleventh round).
func (a *Allocator) mergeIn(fs *ordset.Classed, dst, src int32) {
	d := &a.blocks[dst]
	s := &a.blocks[src]
	if !fs.Delete(ordset.Key{Hi: uint64(s.size) >> 9, Lo: s.addr, ID: src}) && invariants.Enabled {
		panic(fmt.Sprintf("caching: block %d at %#x not in its free set", src, s.addr))
	}
	if a.indexed {
		a.unindexFree(src)
	}
	if d.prev == src {
		d.addr = s.addr
		d.prev = s.prev
		if d.prev != none {
			a.blocks[d.prev].next = dst
		}
	} else {
		d.next = s.next
		if d.next != none {
			a.blocks[d.next].prev = dst
		}
	}
	d.size += s.size
	a.dropBlock(src)
}

// tryMerge is try_merge_blocks(dst, src): if src is a free neighbour with the
// same mapped state, dst absorbs it (keeping the lower address) and src's
// record is dropped. It returns dst.
func (a *Allocator) tryMerge(dst, src int32) int32 {
	if src == none {
		return dst
	}
	if a.state[src] != a.state[dst]&^stAllocated {
		return dst // allocated, or of the other mapped state: checked without loading src's record
	}
	a.merge(dst, src)
	return dst
}

// merge is tryMerge's merge, for a src its caller has tested: dst absorbs
// its neighbour src, free and of the same mapped state.
func (a *Allocator) merge(dst, src int32) {
	d := &a.blocks[dst]
	s := &a.blocks[src]
	if a.state[src]&stMapped != 0 {
		// removeFree(src), written out (a call less on every merge).
		if fs := a.pools[a.bpool[src]].freeSet(uint64(s.sidx)); (fs == nil || !fs.Delete(ordset.Key{Hi: uint64(s.size) >> 9, Lo: s.addr, ID: src})) && invariants.Enabled {
			panic(fmt.Sprintf("caching: block %d at %#x not in its free set", src, s.addr))
		}
		if a.indexed {
			a.unindexFree(src)
		}
	} else {
		a.removeUnmapped(src)
	}
	if d.prev == src {
		d.addr = s.addr
		d.prev = s.prev
		if d.prev != none {
			a.blocks[d.prev].next = dst
		}
	} else {
		d.next = s.next
		if d.next != none {
			a.blocks[d.next].prev = dst
		}
	}
	d.size += s.size
	a.dropBlock(src)
}

// EmptyCache is release_cached_blocks (torch.cuda.empty_cache()).
func (a *Allocator) EmptyCache() {
	a.mut.Mutated()
	a.releaseCachedBlocks()
	if invariants.Enabled {
		a.mustCheck()
	}
}

// Stats implements alloc.Allocator.
func (a *Allocator) Stats() alloc.Stats {
	return alloc.Stats{
		Capacity: a.dev.Capacity(), OtherUse: a.dev.OtherUse(),
		Reserved: a.reserved, Allocated: a.allocated, Requested: a.requested,
		PeakReserved: a.peakReserved, PeakAllocated: a.peakAllocated,
		Segments: a.segments, LiveBlocks: a.live,
		Allocs: a.allocs, Frees: a.frees, OOMs: a.ooms,
		DeviceAllocs: a.deviceAllocs, DeviceFrees: a.deviceFrees, Retries: a.retries,
	}
}

// newBlock stores b in a free record and returns its id. A reused record
// keeps its generation (b's is ignored).
func (a *Allocator) newBlock(b record) int32 {
	b.inUse = true
	if n := len(a.freeIDs); n > 0 {
		id := a.freeIDs[n-1]
		a.freeIDs = a.freeIDs[:n-1]
		b.gen = a.blocks[id].gen
		a.put(id, b)
		return id
	}
	id := int32(len(a.blocks))
	a.blocks = append(a.blocks, block{})
	a.cold = append(a.cold, blockCold{})
	a.req = append(a.req, 0)
	a.bpool = append(a.bpool, 0)
	a.state = append(a.state, 0)
	a.put(id, b)
	return id
}

// dropBlock puts record id on the free list. Its cold part is left as it
// is (splitLow's comment), and its request is 0 already (a dropped record
// was free).
func (a *Allocator) dropBlock(id int32) {
	a.blocks[id] = block{prev: none, next: none, gen: a.blocks[id].gen}
	a.state[id] = 0
	a.freeIDs = append(a.freeIDs, id)
}

func (a *Allocator) key(id int32) ordset.Key {
	b := &a.blocks[id]
	k := freeKey(b.size, b.addr)
	k.ID = id
	return k
}

// streamIndex returns the dense index of a stream already in use. The
// last index found is tried first: most calls repeat the previous stream,
// and the map lookup was ~5% of an alloc+free pair (callgrind).
func (a *Allocator) streamIndex(stream int) (uint64, bool) {
	if h := a.streamHint; int(h) < len(a.streams) && a.streams[h] == stream {
		return uint64(h), true
	}
	i, ok := a.streamIdx[stream]
	if ok {
		a.streamHint = i
	}
	return uint64(i), ok
}

// streamSlot is streamIndex for Alloc's free set lookup, which tries
// the hint itself: the dense index of a stream in use, or noStream (past
// every pool's free sets) for one never used, so that the caller tests
// only for a free set. Out of line, so that the hot path keeps nothing on
// the stack across its map lookup.
//
//go:noinline
func (a *Allocator) streamSlot(stream int) uint64 {
	if i, ok := a.streamIndex(stream); ok {
		return i
	}
	return noStream
}

// noStream is streamSlot's index of a stream never used: pool.freeSet
// finds no set there.
const noStream = ^uint64(0)

// maxStreams: a block records its stream index in 32 bits, more than the
// 2^31 stream numbers an op trace may use (optrace.MaxStream). It was 16
// bits, and a trace with 65,537 streams panicked.
const maxStreams = 1 << 32

// internStream returns the stream's dense index, adding it on first use.
func (a *Allocator) internStream(stream int) uint64 {
	if i, ok := a.streamIndex(stream); ok {
		return i
	}
	if len(a.streams) == maxStreams {
		panic(fmt.Sprintf("caching: more than %d streams", maxStreams))
	}
	if a.streamIdx == nil {
		a.streamIdx = map[int]uint32{}
	}
	a.streamIdx[stream] = uint32(len(a.streams))
	a.streams = append(a.streams, stream)
	return uint64(len(a.streams) - 1)
}

func (a *Allocator) insertFree(id int32) {
	b := &a.blocks[id]
	pl := &a.pools[a.bpool[id]]
	if a.hot.gc {
		a.cold[id].gcBase = pl.freeCalls
	}
	var fs *ordset.Classed
	if int(b.sidx) < len(pl.free) {
		fs = pl.free[b.sidx]
	}
	if fs == nil {
		fs = pl.newFreeSet(b.sidx) // out of line, so the common path keeps its registers
	}
	fs.Insert(ordset.Key{Hi: uint64(b.size) >> 9, Lo: b.addr, ID: id}) // a.key(id)
	if a.indexed {
		a.indexFree(id)
	}
}

func (a *Allocator) removeFree(id int32) {
	b := &a.blocks[id]
	if fs := a.pools[a.bpool[id]].freeSet(uint64(b.sidx)); (fs == nil || !fs.Delete(a.key(id))) && invariants.Enabled {
		panic(fmt.Sprintf("caching: block %d at %#x not in its free set", id, a.blocks[id].addr))
	}
	if a.indexed {
		a.unindexFree(id)
	}
}

func (a *Allocator) ukey(id int32) ordset.Key {
	b := &a.blocks[id]
	return ordset.Key{Hi: uint64(b.sidx), Lo: b.addr, ID: id}
}

func (a *Allocator) insertUnmapped(id int32) {
	a.pools[a.bpool[id]].unmapped.Insert(a.ukey(id))
}

func (a *Allocator) removeUnmapped(id int32) {
	if !a.pools[a.bpool[id]].unmapped.Delete(a.ukey(id)) && invariants.Enabled {
		panic(fmt.Sprintf("caching: block %d at %#x not in its unmapped set", id, a.blocks[id].addr))
	}
}

func (a *Allocator) mustCheck() {
	if err := a.CheckInvariants(); err != nil {
		panic(fmt.Sprintf("caching: broken invariant: %v", err))
	}
}
