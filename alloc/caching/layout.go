// Layout, MaxAllocatable, Clone and the self-checks.
// See package alloc for the overview.

package caching

import (
	"fmt"
	"maps"
	"sort"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/ordset"
	"github.com/gpufrag/gpufrag/mem"
)

var poolNames = [2]string{"small", "large"}

// poolName names pool p in a Layout and in messages: "small" or "large" for
// the default pools, "pool A_B small" (or large) for private pool (A, B).
func (a *Allocator) poolName(p uint16) string {
	if p < 2 {
		return poolNames[p]
	}
	id := a.private[p/2-1].id
	return fmt.Sprintf("pool %d_%d %s", id[0], id[1], poolNames[p&1])
}

// Layout implements alloc.Allocator. Each cudaMalloc segment is a Segment;
// each maximal mapped run of an expandable segment is a Segment with
// Expandable set, as PyTorch's snapshot reports them. Unmapped VA is never
// reported.
func (a *Allocator) Layout() mem.Layout {
	l := mem.Layout{
		Capacity: a.dev.Capacity(), OtherUse: a.dev.OtherUse(), DeviceFree: a.dev.Free(),
		MaxAllocatable: a.MaxAllocatable(),
	}
	for id := range a.blocks {
		b := a.rec(int32(id))
		if !b.inUse || !b.mapped || (b.prev != none && a.isMapped(b.prev)) {
			continue // not the head of a mapped run
		}
		s := mem.Segment{Addr: b.addr, Stream: a.streams[b.sidx], Pool: a.poolName(b.pool), Expandable: b.seg != none}
		for c := int32(id); c != none && a.isMapped(c); c = a.blocks[c].next {
			x := a.rec(c)
			st := mem.Free
			if x.allocated {
				st = mem.Active
			}
			s.Blocks = append(s.Blocks, mem.Block{Addr: x.addr, Size: x.size, Requested: x.requested, State: st})
			s.Size += x.size
		}
		l.Segments = append(l.Segments, s)
	}
	l.Sort()
	return l
}

// MaxAllocatable implements alloc.Allocator: the largest request on stream 0
// that succeeds now. Candidates are (1) the largest cached free block of
// each pool, as large as that pool accepts and rounding allows, and (2) a new
// segment (or mapping) from device memory plus everything the out-of-memory
// ladder would release; each candidate is confirmed on a clone, largest
// first, so the answer is never wrong. For cudaMalloc segments the
// candidates are exhaustive, so the answer is exact; with expandable
// segments the mapping candidate is estimated per free/unmapped run and the
// answer is the largest confirmed one.
func (a *Allocator) MaxAllocatable() int64 {
	var cands []int64
	// (1) Cached blocks of the default pools on stream 0 (a private pool's
	// blocks serve only allocations routed to it).
	for p := range 2 {
		var largest int64
		if s0, ok := a.streamIndex(0); ok {
			if fs := a.pools[p].freeSet(s0); fs != nil {
				if k, ok := fs.Max(); ok {
					largest = keySize(k)
				}
			}
		}
		if largest == 0 {
			continue
		}
		hi := largest
		if isSmallPool(uint16(p)) {
			hi = min(hi, kSmallSize)
		}
		s := a.maxRequestWithin(hi, func(r int64) bool { return r <= largest })
		if s > 0 && isSmallPool(uint16(p)) == isSmallPool(poolFor(a.cfg.roundSize(s))) {
			cands = append(cands, s)
		}
	}
	// (2) Device memory after the ladder releases what it can.
	avail := a.dev.Free()
	var releasable int64
	for p := range a.pools {
		if !a.releasable(uint16(p)) {
			continue
		}
		a.pools[p].allFree(func(k ordset.Key) bool {
			b := a.rec(k.ID)
			if b.seg == none && !b.isSplit() {
				releasable += b.size
			} else if b.seg != none {
				seg := a.exp[b.seg]
				lo := (int64(b.addr-seg.base) + seg.pageSize - 1) / seg.pageSize
				hi := int64(b.end()-seg.base) / seg.pageSize
				if hi > lo {
					releasable += (hi - lo) * seg.pageSize
				}
			}
			return true
		})
	}
	avail += releasable
	if lim := a.allowedMax(); lim >= 0 {
		avail = min(avail, lim-(a.reserved-releasable))
	}
	if avail > 0 {
		if !a.cfg.ExpandableSegments {
			cands = append(cands, a.maxRequestWithin(avail, func(r int64) bool { return allocationSize(r) <= avail }))
		} else {
			// A fresh range maps whole pages; existing runs on stream 0 can
			// add their free slivers.
			for _, p := range []uint16{smallPool, largePool} {
				page := a.pageSize(p)
				pages := avail / page * page
				hi := pages
				if p == smallPool {
					hi = min(hi, kSmallSize)
				}
				cands = append(cands, a.maxRequestWithin(hi, func(r int64) bool { return r <= hi }))
				for _, run := range a.expandableRuns(p, pages) {
					cands = append(cands, a.maxRequestWithin(run, func(r int64) bool { return r <= run }))
				}
			}
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i] > cands[j] })
	for i, s := range cands {
		if s <= 0 || (i > 0 && s == cands[i-1]) {
			continue
		}
		if _, err := a.Clone().Alloc(s, 0); err == nil {
			return s
		}
	}
	return 0
}

// maxRequestWithin is the largest request r ≤ hi whose rounded size
// satisfies fits (fits must be monotone: true up to some size, then false).
func (a *Allocator) maxRequestWithin(hi int64, fits func(rounded int64) bool) int64 {
	lo := int64(0)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(a.cfg.roundSize(mid)) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// expandableRuns estimates, for stream 0's expandable segments of pool p,
// the bytes a request could use from each run of free and unmapped blocks,
// mapping at most pages bytes of new pages.
func (a *Allocator) expandableRuns(p uint16, pages int64) []int64 {
	var out []int64
	for id := range a.blocks {
		b := a.rec(int32(id))
		if !b.inUse || b.seg == none || b.pool != p || a.streams[b.sidx] != 0 || b.allocated || a.allocatable(b.prev) {
			continue // not the start of a free/unmapped run
		}
		var free, unmapped int64
		for c := int32(id); a.allocatable(c); c = a.blocks[c].next {
			if a.isMapped(c) {
				free += a.blocks[c].size
			} else {
				unmapped += a.blocks[c].size
			}
		}
		out = append(out, free+min(unmapped, pages))
	}
	return out
}

// Clone implements alloc.Allocator.
func (a *Allocator) Clone() alloc.Allocator {
	c := &Allocator{
		cfg: a.cfg, hot: a.hot, dev: a.dev.Clone(),
		blocks:  append([]block(nil), a.blocks...),
		cold:    append([]blockCold(nil), a.cold...),
		req:     append([]int64(nil), a.req...),
		bpool:   append([]uint16(nil), a.bpool...),
		state:   append([]uint8(nil), a.state...),
		freeIDs: append([]int32(nil), a.freeIDs...),
		exp:     append([]expSegment(nil), a.exp...),
		pools:   make([]pool, len(a.pools)), private: append([]privateSet(nil), a.private...), poolSets: maps.Clone(a.poolSets),
		streams: append([]int(nil), a.streams...), streamIdx: maps.Clone(a.streamIdx), bases: maps.Clone(a.bases),
		live: a.live, segments: a.segments,
		reserved: a.reserved, allocated: a.allocated, requested: a.requested,
		peakReserved: a.peakReserved, peakAllocated: a.peakAllocated,
		allocs: a.allocs, frees: a.frees, ooms: a.ooms,
		deviceAllocs: a.deviceAllocs, deviceFrees: a.deviceFrees, retries: a.retries,
		mut: a.mut, queued: a.queued, indexed: a.queued, // largest is not cloned
		fast: !a.cfg.ExpandableSegments && !a.hot.gc && !a.queued, noRest: !a.hot.gc && !a.queued,
	}
	for p := range a.pools {
		pl := &a.pools[p]
		c.pools[p] = pool{free: make([]*ordset.Classed, len(pl.free)), unmapped: pl.unmapped.Clone(),
			whole: pl.whole.clone(), wholeBase: pl.wholeBase, unmappable: pl.unmappable.clone(), freeCalls: pl.freeCalls}
		for si, fs := range a.pools[p].free {
			if fs != nil {
				cs := fs.Clone()
				c.pools[p].free[si] = &cs
			}
		}
	}
	return c
}

// CheckInvariants recounts the allocator's state and reports the first
// broken invariant. It is O(blocks) and runs after every operation under
// the invariants build tag.
func (a *Allocator) CheckInvariants() error {
	var reserved, allocated, requested int64
	segments, live, inFree, inUnmapped := 0, 0, 0, 0
	if n := len(a.blocks); len(a.state) != n || len(a.cold) != n || len(a.req) != n || len(a.bpool) != n {
		return fmt.Errorf("%d state bytes, %d cold parts, %d requests and %d pools for %d block records",
			len(a.state), len(a.cold), len(a.req), len(a.bpool), n)
	}
	if a.indexed != (a.queued || a.largest != nil) {
		return fmt.Errorf("indexed %v, queued %v, largest index %v", a.indexed, a.queued, a.largest != nil)
	}
	if a.noRest != (!a.hot.gc && !a.indexed) || a.fast != (a.noRest && !a.cfg.ExpandableSegments) {
		return fmt.Errorf("fast %v, noRest %v, expandable segments %v, garbage collection %v, indexed %v",
			a.fast, a.noRest, a.cfg.ExpandableSegments, a.hot.gc, a.indexed)
	}
	for id := range a.blocks {
		b := a.rec(int32(id))
		if !b.inUse {
			// What splitLow does not rewrite when it reuses the record
			// (its comment).
			switch {
			case a.state[id] != 0:
				return fmt.Errorf("record %d not in use: state byte %#x", id, a.state[id])
			case b.requested != 0 || b.qpos != 0:
				return fmt.Errorf("record %d not in use: request %d, queue position %d", id, b.requested, b.qpos)
			case !a.cfg.ExpandableSegments && b.seg != none:
				return fmt.Errorf("record %d not in use: segment %d without expandable segments", id, b.seg)
			}
			continue
		}
		if !b.mapped && b.allocated {
			return fmt.Errorf("block %d at %#x: state byte %#x, allocated but unmapped", id, b.addr, a.state[id])
		}
		if !b.allocated && b.requested != 0 {
			return fmt.Errorf("block %d at %#x: free with a request of %d", id, b.addr, b.requested)
		}
		if !a.cfg.ExpandableSegments && b.seg != none {
			return fmt.Errorf("block %d at %#x: segment %d without expandable segments", id, b.addr, b.seg)
		}
		if b.prev != none && (a.blocks[b.prev].next != int32(id) || a.blocks[b.prev].end() != b.addr) {
			return fmt.Errorf("block %d at %#x: bad prev link", id, b.addr)
		}
		if b.next != none && (a.blocks[b.next].prev != int32(id) || b.end() != a.blocks[b.next].addr) {
			return fmt.Errorf("block %d at %#x: bad next link", id, b.addr)
		}
		if int(b.sidx) >= len(a.streams) {
			return fmt.Errorf("block %d at %#x: stream index %d names no stream", id, b.addr, b.sidx)
		}
		if b.size <= 0 || b.size%kMinBlockSize != 0 {
			return fmt.Errorf("block %d at %#x: size %d not a positive multiple of 512", id, b.addr, b.size)
		}
		if b.mapped {
			reserved += b.size
			if b.prev == none || !a.isMapped(b.prev) {
				segments++
			}
		} else if b.seg == none || b.allocated {
			return fmt.Errorf("block %d at %#x: unmapped but not a free expandable block", id, b.addr)
		}
		switch {
		case b.allocated:
			allocated += b.size
			requested += b.requested
			live++
			if got, ok := a.lookup(handleOf(int32(id), b.gen)); !ok || got != int32(id) {
				return fmt.Errorf("block %d at %#x: allocated but its handle does not resolve to it", id, b.addr)
			}
		case b.mapped:
			inFree++
			if fs := a.pools[b.pool].freeSet(uint64(b.sidx)); fs == nil || !fs.Has(a.key(int32(id))) {
				return fmt.Errorf("block %d at %#x: free but not in its free set", id, b.addr)
			}
			for _, n := range []int32{b.prev, b.next} {
				if n != none && !a.isAllocated(n) && a.isMapped(n) {
					return fmt.Errorf("block %d at %#x: free neighbour %d was not merged", id, b.addr, n)
				}
			}
		default:
			inUnmapped++
			if !a.pools[b.pool].unmapped.Has(a.ukey(int32(id))) {
				return fmt.Errorf("block %d at %#x: unmapped but not in its unmapped set", id, b.addr)
			}
		}
	}
	if err := a.checkFreeSets(); err != nil {
		return err
	}
	if err := a.checkBases(); err != nil {
		return err
	}
	if err := a.checkIndexes(); err != nil {
		return err
	}
	nFree, nUnmapped := 0, 0
	for p := range a.pools {
		nFree += a.pools[p].freeLen()
		nUnmapped += a.pools[p].unmapped.Len()
	}
	if err := a.checkPrivate(); err != nil {
		return err
	}
	switch {
	case reserved != a.reserved || reserved != a.dev.Used():
		return fmt.Errorf("reserved %d, recount %d, device used %d", a.reserved, reserved, a.dev.Used())
	case allocated != a.allocated || requested != a.requested:
		return fmt.Errorf("allocated/requested %d/%d, recount %d/%d", a.allocated, a.requested, allocated, requested)
	case segments != a.segments:
		return fmt.Errorf("segments %d, recount %d", a.segments, segments)
	case live != a.live:
		return fmt.Errorf("live blocks %d, recount %d", a.live, live)
	case inFree != nFree || inUnmapped != nUnmapped:
		return fmt.Errorf("free sets hold %d/%d blocks, recount %d/%d", nFree, nUnmapped, inFree, inUnmapped)
	}
	return nil
}

// checkIndexes checks the pools' whole and unmappable queues against the
// free sets, and LargestFreeBlock's index, once built, against a recount.
func (a *Allocator) checkIndexes() error {
	queued := 0
	for p := range a.pools {
		pl := &a.pools[p]
		var base int64
		for _, c := range []struct {
			name string
			q    *idQueue
			in   func(id int32) bool
		}{
			{"whole", &pl.whole, func(id int32) bool { return a.queued && a.cold[id].seg == none && !a.blocks[id].isSplit() }},
			{"unmappable", &pl.unmappable, func(id int32) bool { return a.queued && a.cold[id].seg != none && a.hasWholePage(id) }},
		} {
			n := 0
			last := int64(-1)
			for i, id := range c.q.ids {
				if id == none {
					continue
				}
				n++
				b := a.rec(int32(id))
				switch {
				case !b.inUse || b.allocated || !b.mapped || b.pool != uint16(p) || !c.in(id):
					return fmt.Errorf("%s pool %s queue: block %d at %#x does not belong there", a.poolName(uint16(p)), c.name, id, b.addr)
				case int(b.qpos) != i+1:
					return fmt.Errorf("%s pool %s queue: block %d at position %d says %d", a.poolName(uint16(p)), c.name, id, i, b.qpos-1)
				case c.name == "whole" && b.gcBase < last:
					return fmt.Errorf("%s pool whole queue: block %d at %#x entered at %d, after one of %d", a.poolName(uint16(p)), id, b.addr, b.gcBase, last)
				}
				if c.name == "whole" {
					last = b.gcBase
					base += b.gcBase
				}
			}
			if n != c.q.n {
				return fmt.Errorf("%s pool %s queue holds %d blocks, counts %d", a.poolName(uint16(p)), c.name, n, c.q.n)
			}
			queued += n
			// Every free block that belongs is queued (with the count
			// above, the queue holds exactly those).
			var missing error
			pl.allFree(func(k ordset.Key) bool {
				if b := a.rec(k.ID); c.in(k.ID) && b.qpos == 0 {
					missing = fmt.Errorf("%s pool %s queue lacks free block %d at %#x", a.poolName(uint16(p)), c.name, k.ID, b.addr)
				}
				return missing == nil
			})
			if missing != nil {
				return missing
			}
		}
		if base != pl.wholeBase {
			return fmt.Errorf("%s pool: whole queue sums gcBase to %d, recount %d", a.poolName(uint16(p)), pl.wholeBase, base)
		}
	}
	for id := range a.blocks {
		if a.cold[id].qpos != 0 {
			queued--
		}
	}
	if queued != 0 {
		return fmt.Errorf("%d block records claim a queue position they do not hold", -queued)
	}
	if ix := a.largest; ix != nil {
		for leaf := range ix.marked {
			p, si := leaf%ix.stride, uint64(leaf/ix.stride)
			if !ix.marked[leaf] && leaf < ix.stride*len(a.streams) && ix.tree[ix.leaves+leaf] != a.setLargest(p, si) {
				return fmt.Errorf("largest-free index: leaf %d holds %d, its free set's largest is %d",
					leaf, ix.tree[ix.leaves+leaf], a.setLargest(p, si))
			}
		}
	}
	return nil
}

// checkBases checks that Allocator.bases, once built, holds exactly the
// cudaMalloc segments, each under its base address with its size, stream
// and pool.
func (a *Allocator) checkBases() error {
	if a.bases == nil {
		return nil
	}
	n := 0
	for id := range a.blocks {
		b := a.rec(int32(id))
		if !b.inUse || b.seg != none || b.prev != none {
			continue
		}
		n++
		size := b.size
		for c := b.next; c != none; c = a.blocks[c].next {
			size += a.blocks[c].size
		}
		if sb, ok := a.bases[b.addr]; !ok || sb != (segBase{size: size, sidx: b.sidx, pool: b.pool}) {
			return fmt.Errorf("segment at %#x (%d bytes): base index has %+v (present: %v)", b.addr, size, sb, ok)
		}
	}
	if n != len(a.bases) {
		return fmt.Errorf("base index holds %d segments, the blocks make %d", len(a.bases), n)
	}
	return nil
}

// checkFreeSets checks each free set's structure and that every key names a
// free mapped block of that pool and stream under the block's own key. With
// the counts compared in CheckInvariants, the sets hold exactly the free
// mapped blocks.
func (a *Allocator) checkFreeSets() error {
	for p := range a.pools {
		for si, fs := range a.pools[p].free {
			if fs == nil {
				continue
			}
			if err := fs.Check(); err != nil {
				return fmt.Errorf("%s pool, stream index %d: %w", a.poolName(uint16(p)), si, err)
			}
			var bad error
			fs.All(func(k ordset.Key) bool {
				if k.ID < 0 || int(k.ID) >= len(a.blocks) {
					bad = fmt.Errorf("%s pool free set: key %v names no block", a.poolName(uint16(p)), k)
					return false
				}
				b := a.rec(k.ID)
				if !b.inUse || b.allocated || !b.mapped || b.pool != uint16(p) || int(b.sidx) != si || a.key(k.ID) != k {
					bad = fmt.Errorf("%s pool free set: key %v does not match block %d at %#x", a.poolName(uint16(p)), k, k.ID, b.addr)
				}
				return bad == nil
			})
			if bad != nil {
				return bad
			}
		}
	}
	return nil
}

var _ alloc.FreeSummarizer = (*Allocator)(nil)

// FreeSummary implements alloc.FreeSummarizer: the largest free block and
// the free bytes of the blocks Layout shows (every mapped block record in
// use; unmapped VA of expandable segments is not a block of any segment),
// in one pass over the records and without allocating.
func (a *Allocator) FreeSummary() (largest, cachedFree int64) {
	for id, st := range a.state {
		if st != stFree {
			continue
		}
		b := &a.blocks[id]
		cachedFree += b.size
		largest = max(largest, b.size)
	}
	return largest, cachedFree
}
