// Returning memory to the device: the out-of-memory ladder, empty_cache and
// garbage collection.
// See package alloc for the overview.

package caching

import "github.com/gpufrag/gpufrag/alloc/internal/ordset"

// releaseBlock is release_block: cudaFree a wholly free cudaMalloc segment.
func (a *Allocator) releaseBlock(id int32) {
	b := a.rec(id)
	a.removeFree(id)
	delete(a.bases, b.addr)
	a.dev.Release(b.size)
	a.countSegment(b.pool, -1)
	a.reserved -= b.size
	a.segments--
	a.deviceFrees++
	a.dropBlock(id)
}

// releaseAvailableCachedBlocks is release_available_cached_blocks: with a
// finite max_split_size, free the smallest cached oversize block on this
// stream that covers max(size, M); failing that, free oversize blocks from
// the largest down until that much is released. Expandable blocks are
// skipped (newer PyTorch; the older code could assert on them).
func (a *Allocator) releaseAvailableCachedBlocks(p uint16, stream int, size int64) bool {
	if a.cfg.MaxSplitSize <= 0 {
		return false
	}
	m := a.cfg.maxSplit()
	target := max(size, m)
	sk, known := a.streamIndex(stream)
	fs := a.pools[p].freeSet(sk)
	if !known || fs == nil {
		return false
	}
	if first, found := fs.LowerBound(freeKey(target, 0)); found {
		if a.cold[first.ID].seg != none || a.blocks[first.ID].isSplit() {
			return false
		}
		a.releaseBlock(first.ID)
		return true
	}
	// No single block is large enough: walk down from the largest block of
	// this stream below the key.
	var victims []int32
	var released int64
	fs.Descend(freeKey(target, 0), func(k ordset.Key) bool {
		if released >= target || keySize(k) < m {
			return false
		}
		b := a.rec(k.ID)
		if b.seg == none && !b.isSplit() {
			victims = append(victims, k.ID)
			released += b.size
		}
		return true
	})
	for _, id := range victims {
		a.releaseBlock(id)
	}
	return released >= target
}

// releaseCachedBlocks is release_cached_blocks (also empty_cache): cudaFree
// every wholly free segment of both default pools (large first, as PyTorch
// does) and unmap the whole free pages of expandable segments, then the same
// for the private pools no capture uses any more (releasePrivatePools).
// Split segments stay.
// PyTorch walks every free block for them; the pool's whole and unmappable
// queues hold exactly those that act, so the cost follows what is released.
// (The order of releases within a pool is not observable: each changes only
// counters and its own blocks.)
func (a *Allocator) releaseCachedBlocks() {
	if !a.queued {
		a.buildQueues()
	}
	a.releasePool(largePool)
	a.releasePool(smallPool)
	a.releasePrivatePools()
}

// releasePool is release_blocks for one pool: cudaFree its wholly free
// segments and unmap the whole free pages of its expandable ones.
func (a *Allocator) releasePool(p uint16) {
	pl := &a.pools[p]
	release, unmap := pl.whole.list(), pl.unmappable.list()
	for _, id := range release {
		a.releaseBlock(id)
	}
	for _, id := range unmap {
		id = a.unmapBlock(id)
		if b := a.rec(int32(id)); !b.mapped && !b.isSplit() {
			a.releaseExpandableSegment(id)
		}
	}
}

// garbageCollect is garbage_collect_cached_blocks: once reserved memory is
// above threshold × the allowed maximum, free unsplit large-pool blocks
// whose age (get_free_block calls since they were cached) is at least the
// mean, pass after pass, until enough is reclaimed or a pass frees nothing.
func (a *Allocator) garbageCollect() {
	lim := a.allowedMax()
	threshold := int64(a.cfg.GCThreshold * float64(lim))
	if a.reserved <= threshold {
		return
	}
	target := a.reserved - threshold
	if !a.queued {
		a.buildQueues()
	}
	// The candidates are the large pool's whole segments (pool.whole),
	// oldest first, with their total age from the sum the queue keeps: the
	// same integers PyTorch's walk of every free block sums (exactly, below
	// 2^53), without the walk, which ran at every allocation that missed
	// the cache once the threshold was crossed.
	pl := &a.pools[largePool]
	count := pl.whole.n
	totalAge := float64(int64(count)*pl.freeCalls - pl.wholeBase)
	var reclaimed int64
	freed := true
	for reclaimed < target && freed && count > 0 {
		threshold := totalAge / float64(count)
		freed = false
		var victims []int32
		for _, id := range pl.whole.ids {
			if id == none {
				continue
			}
			age := float64(pl.freeCalls - a.cold[id].gcBase)
			if age < threshold {
				break // younger from here on
			}
			victims = append(victims, id)
			totalAge -= age
			count--
			reclaimed += a.blocks[id].size
		}
		for _, id := range victims {
			freed = true
			a.releaseBlock(id)
		}
	}
}
