// The indexes kept beside the free sets: whole segments and unmappable
// expandable blocks (what empty_cache, the out-of-memory ladder and garbage
// collection act on), and the largest free block over every stream.
// See package alloc for the overview.

package caching

import (
	"sort"

	"github.com/gpufrag/gpufrag/alloc/internal/ordset"
)

// indexFree queues a block that has just entered its free set in its
// pool's whole or unmappable queue if it belongs there (once the queues are
// kept), and marks its set changed for LargestFreeBlock (once that is
// built). A split cudaMalloc block, the common case, costs two compares.
func (a *Allocator) indexFree(id int32) {
	b := &a.blocks[id]
	if a.largest != nil {
		a.largest.touch(a.bpool[id], b.sidx)
	}
	if !a.queued {
		return
	}
	if a.cold[id].seg == none {
		if b.prev == none && b.next == none {
			pl := &a.pools[a.bpool[id]]
			pl.whole.add(a, id)
			pl.wholeBase += a.cold[id].gcBase
		}
	} else if a.hasWholePage(id) {
		a.pools[a.bpool[id]].unmappable.add(a, id)
	}
}

// unindexFree undoes indexFree for a block that has just left its free set.
func (a *Allocator) unindexFree(id int32) {
	if a.largest != nil {
		a.largest.touch(a.bpool[id], a.blocks[id].sidx)
	}
	c := &a.cold[id]
	if c.qpos == 0 {
		return
	}
	pl := &a.pools[a.bpool[id]]
	if c.seg == none {
		pl.whole.remove(a, id)
		pl.wholeBase -= c.gcBase
	} else {
		pl.unmappable.remove(a, id)
	}
}

// buildQueues starts keeping the pools' whole and unmappable queues: one
// walk of the free blocks, the whole ones queued by gcBase (afterwards each
// enters at the current freeCalls, the largest yet, so the queue stays in
// that order).
func (a *Allocator) buildQueues() {
	a.queued, a.indexed, a.fast, a.noRest = true, true, false, false
	for p := range a.pools {
		pl := &a.pools[p]
		var whole []int32
		pl.allFree(func(k ordset.Key) bool {
			if a.cold[k.ID].seg == none {
				if !a.blocks[k.ID].isSplit() {
					whole = append(whole, k.ID)
				}
			} else if a.hasWholePage(k.ID) {
				pl.unmappable.add(a, k.ID)
			}
			return true
		})
		sort.SliceStable(whole, func(i, j int) bool { return a.cold[whole[i]].gcBase < a.cold[whole[j]].gcBase })
		for _, id := range whole {
			pl.whole.add(a, id)
			pl.wholeBase += a.cold[id].gcBase
		}
	}
}

// idQueue is a set of block ids in the order they were added, each block
// holding its position (block.qpos, plus 1): add appends, remove leaves a
// hole (none), and the holes are squeezed out once they are the majority,
// so both are O(1) amortized and the order is kept.
type idQueue struct {
	ids []int32
	n   int // ids that are not holes
}

func (q *idQueue) add(a *Allocator, id int32) {
	q.ids = append(q.ids, id)
	a.cold[id].qpos = int32(len(q.ids))
	q.n++
}

func (q *idQueue) remove(a *Allocator, id int32) {
	b := &a.cold[id]
	q.ids[b.qpos-1] = none
	b.qpos = 0
	q.n--
	if len(q.ids) > 64 && q.n < len(q.ids)/2 {
		k := 0
		for _, id := range q.ids {
			if id != none {
				q.ids[k] = id
				a.cold[id].qpos = int32(k + 1)
				k++
			}
		}
		q.ids = q.ids[:k]
	}
}

// list returns the queued ids, in order.
func (q *idQueue) list() []int32 {
	out := make([]int32, 0, q.n)
	for _, id := range q.ids {
		if id != none {
			out = append(out, id)
		}
	}
	return out
}

func (q *idQueue) clone() idQueue { return idQueue{ids: append([]int32(nil), q.ids...), n: q.n} }

// wholePages is the range of whole pages strictly inside block id of an
// expandable segment; empty (u0 >= u1) when there is none.
func (a *Allocator) wholePages(id int32) (u0, u1 uint64) {
	b := &a.blocks[id]
	seg := &a.exp[a.cold[id].seg]
	off0, off1 := int64(b.addr-seg.base), int64(b.end()-seg.base)
	u0 = seg.base + uint64((off0+seg.pageSize-1)/seg.pageSize*seg.pageSize)
	u1 = seg.base + uint64(off1/seg.pageSize*seg.pageSize)
	return u0, u1
}

func (a *Allocator) hasWholePage(id int32) bool {
	u0, u1 := a.wholePages(id)
	return u0 < u1
}

// maxIndex answers LargestFreeBlock without visiting every stream's free
// sets: a max tree over the sets, leaf stride·stream index + pool holding
// the largest key size of that set (stride: the number of pools, default
// and private, when the tree was built; a new private pool rebuilds it). Only the sets changed since the last query
// are looked at again (indexFree and unindexFree mark them), so a replay that
// asks at every oom entry of a trace over 45,000 streams pays O(log streams)
// per changed set, not O(streams) per question. It is built by the first
// LargestFreeBlock; allocators never asked keep it nil and pay one nil check
// per free-set change.
type maxIndex struct {
	stride int     // pools per stream: len(Allocator.pools) at build time
	leaves int     // a power of two
	tree   []int64 // tree[1] the root; leaf i at tree[leaves+i]
	dirty  []int32 // leaves changed since the last query
	marked []bool  // by leaf: in dirty
}

// touch marks the free set of pool p and stream index sidx changed. A
// stream beyond the tree is left to the next query, which rebuilds it.
func (ix *maxIndex) touch(p uint16, sidx uint32) {
	if int(p) >= ix.stride {
		return // a pool newer than the tree: the next query rebuilds it
	}
	leaf := int(sidx)*ix.stride + int(p)
	if leaf < len(ix.marked) && !ix.marked[leaf] {
		ix.marked[leaf] = true
		ix.dirty = append(ix.dirty, int32(leaf))
	}
}

// setLargest returns the largest key size of pool p's free set for stream
// index si, 0 if empty.
func (a *Allocator) setLargest(p int, si uint64) int64 {
	fs := a.pools[p].freeSet(si)
	if fs == nil {
		return 0
	}
	k, ok := fs.Max()
	if !ok {
		return 0
	}
	return keySize(k)
}

// largestFree brings the index up to date and returns the largest free block.
func (a *Allocator) largestFree() int64 {
	ix := a.largest
	stride := len(a.pools)
	if ix == nil || ix.stride != stride || ix.leaves < stride*len(a.streams) {
		n := 2
		for n < stride*len(a.streams) {
			n *= 2
		}
		ix = &maxIndex{stride: stride, leaves: n, tree: make([]int64, 2*n), marked: make([]bool, n)}
		for leaf := 0; leaf < stride*len(a.streams); leaf++ {
			ix.tree[n+leaf] = a.setLargest(leaf%stride, uint64(leaf/stride))
		}
		for i := n - 1; i >= 1; i-- {
			ix.tree[i] = max(ix.tree[2*i], ix.tree[2*i+1])
		}
		a.largest, a.indexed, a.fast, a.noRest = ix, true, false, false
		return ix.tree[1]
	}
	for _, leaf := range ix.dirty {
		ix.marked[leaf] = false
		i := ix.leaves + int(leaf)
		ix.tree[i] = a.setLargest(int(leaf)%stride, uint64(int(leaf)/stride))
		for i /= 2; i >= 1; i /= 2 {
			ix.tree[i] = max(ix.tree[2*i], ix.tree[2*i+1])
		}
	}
	ix.dirty = ix.dirty[:0]
	return ix.tree[1]
}
