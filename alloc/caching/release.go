// Returning memory to the device: the out-of-memory ladder, empty_cache and
// garbage collection.
// See package alloc for the overview.

package caching

import "github.com/gpufrag/gpufrag/alloc/internal/ordset"

// releaseBlock is release_block: cudaFree a wholly free cudaMalloc segment.
func (a *Allocator) releaseBlock(id int32) {
	b := &a.blocks[id]
	a.removeFree(id)
	a.dev.Release(b.size)
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
func (a *Allocator) releaseAvailableCachedBlocks(p uint8, stream int, size int64) bool {
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
		if a.blocks[first.ID].seg != none || a.blocks[first.ID].isSplit() {
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
		b := &a.blocks[k.ID]
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
// every wholly free segment of both pools (large first, as PyTorch does) and
// unmap the whole free pages of expandable segments. Split segments stay.
func (a *Allocator) releaseCachedBlocks() {
	for _, p := range []uint8{largePool, smallPool} {
		var release, unmap []int32
		a.pools[p].allFree(func(k ordset.Key) bool {
			b := &a.blocks[k.ID]
			if b.seg != none {
				unmap = append(unmap, k.ID)
			} else if !b.isSplit() {
				release = append(release, k.ID)
			}
			return true
		})
		for _, id := range release {
			a.releaseBlock(id)
		}
		for _, id := range unmap {
			id = a.unmapBlock(id)
			if b := &a.blocks[id]; !b.mapped && !b.isSplit() {
				a.releaseExpandableSegment(id)
			}
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
	pl := &a.pools[largePool]
	var totalAge float64
	count := 0
	pl.allFree(func(k ordset.Key) bool {
		if b := &a.blocks[k.ID]; !b.isSplit() && b.seg == none {
			totalAge += float64(pl.freeCalls - b.gcBase)
			count++
		}
		return true
	})
	var reclaimed int64
	freed := true
	for reclaimed < target && freed && count > 0 {
		threshold := totalAge / float64(count)
		freed = false
		var victims []int32
		pl.allFree(func(k ordset.Key) bool {
			b := &a.blocks[k.ID]
			if age := float64(pl.freeCalls - b.gcBase); !b.isSplit() && b.seg == none && age >= threshold {
				victims = append(victims, k.ID)
				totalAge -= age
				count--
				reclaimed += b.size
			}
			return true
		})
		for _, id := range victims {
			freed = true
			a.releaseBlock(id)
		}
	}
}
