// Private pools: the pools of CUDA-graph captures and torch.cuda.MemPool.
// See package alloc for the overview.

package caching

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/ordset"
)

// PoolID names a private pool (alloc.PoolID: MempoolId_t's pair of
// integers; zero is the default pools). A snapshot records it per segment as
// segment_pool_id.
type PoolID = alloc.PoolID

var _ alloc.PoolAllocator = (*Allocator)(nil)

// MaxPrivatePools is the most private pools one allocator creates over its
// life (a pool's index into Allocator.pools is 16 bits). PyTorch sets no
// limit; a serving engine makes one or a few (vLLM and SGLang share one
// pool among all their captured graphs).
const MaxPrivatePools = 1<<15 - 1

// privateSet is PyTorch's PrivatePool: its own small and large BlockPool
// (Allocator.pools 2·set and 2·set+1, set = its index in Allocator.private
// plus one), a use count and a count of the segments it holds.
//
// Invariants (checkPrivate):
//
//	segments == the cudaMalloc segments plus the live expandable segments
//	  whose blocks are in the set's pools
//	poolSets[id] == set exactly for the sets not deleted
//	a deleted set has users == 0 and segments == 0
type privateSet struct {
	id PoolID
	// users is use_count: the captures (or MemPool contexts) still using
	// the pool. At 0 the pool is freeable: empty_cache and the
	// out-of-memory ladder release its wholly free segments, as they do the
	// default pools'.
	users int
	// segments is cudaMalloc_count, the segments it holds; a freeable pool
	// left with none is deleted by release_cached_blocks.
	segments int
	deleted  bool
}

// AllocIn is Alloc routed to private pool id, as PyTorch routes an
// allocation made while a CUDA-graph capture or a MemPool context is active
// for its stream (get_pool: captures_underway). The request is rounded and
// split as any other, and served from that pool's own small or large free
// blocks and segments only: a default-pool block never serves it, and its
// blocks never serve a request of another pool. A cudaMalloc segment it
// obtains belongs to the pool until released. Because a capture is
// underway, the out-of-memory ladder stops before its last rung (it does
// not empty every cache and retry): PyTorch skips release_cached_blocks
// while captures are underway.
//
// The zero id is Alloc. An id not seen before creates the pool with one
// user (beginAllocateToPool); an id whose pool was released (ReleasePool
// down to no users) and not yet deleted is an error, as PyTorch asserts.
func (a *Allocator) AllocIn(id PoolID, orig int64, stream int) (alloc.Block, error) {
	if id == (PoolID{}) {
		return a.Alloc(orig, stream)
	}
	set, ok := a.poolSets[id]
	switch {
	case !ok && len(a.private) >= MaxPrivatePools:
		return alloc.Block{}, fmt.Errorf("%w: caching: pool %d_%d would be private pool %d; at most %d",
			alloc.ErrBadSpec, id[0], id[1], len(a.private)+1, MaxPrivatePools)
	case !ok:
		set = a.openSet(id)
	case a.private[set-1].users == 0:
		return alloc.Block{}, fmt.Errorf("%w: caching: pool %d_%d was released (no capture uses it)", alloc.ErrBadSpec, id[0], id[1])
	}
	a.into = set
	blk, err := a.Alloc(orig, stream)
	a.into = 0
	return blk, err
}

// RetainPool is beginAllocateToPool for a pool that a new capture shares:
// it adds a user to pool id, creating the pool if there is none.
func (a *Allocator) RetainPool(id PoolID) error {
	if id == (PoolID{}) {
		return fmt.Errorf("%w: caching: the default pools have no use count", alloc.ErrBadSpec)
	}
	set, ok := a.poolSets[id]
	if !ok {
		if len(a.private) >= MaxPrivatePools {
			return fmt.Errorf("%w: caching: more than %d private pools", alloc.ErrBadSpec, MaxPrivatePools)
		}
		a.mut.Mutated()
		a.openSet(id)
		return nil
	}
	if a.private[set-1].users == 0 {
		return fmt.Errorf("%w: caching: pool %d_%d was released (no capture uses it)", alloc.ErrBadSpec, id[0], id[1])
	}
	a.mut.Mutated()
	a.private[set-1].users++
	return nil
}

// ReleasePool is releasePool (CUDAGraph::reset, a MemPool's destruction):
// one user of pool id is gone. Nothing is freed now. Once no user is left
// the pool is freeable: the next empty_cache or out-of-memory ladder
// releases its wholly free segments (its live blocks and split segments
// stay until freed), and deletes the pool once it holds no segment.
func (a *Allocator) ReleasePool(id PoolID) error {
	set, ok := a.poolSets[id]
	if !ok || id == (PoolID{}) {
		return fmt.Errorf("%w: caching: no private pool %d_%d", alloc.ErrBadSpec, id[0], id[1])
	}
	ps := &a.private[set-1]
	if ps.users == 0 {
		return fmt.Errorf("%w: caching: pool %d_%d already released", alloc.ErrBadSpec, id[0], id[1])
	}
	a.mut.Mutated()
	ps.users--
	return nil
}

// PrivatePools lists the private pools that exist (not deleted), in the
// order they were created, with the bytes each reserves (its segments,
// what memory_stats reports as reserved_bytes_by_private_pools).
func (a *Allocator) PrivatePools() []PoolUse {
	if len(a.private) == 0 {
		return nil
	}
	reserved := make([]int64, len(a.private))
	for id := range a.blocks {
		if b := a.rec(int32(id)); b.inUse && b.mapped && b.pool >= 2 {
			reserved[b.pool/2-1] += b.size
		}
	}
	var out []PoolUse
	for s, ps := range a.private {
		if !ps.deleted {
			out = append(out, PoolUse{ID: ps.id, Users: ps.users, Segments: ps.segments, Reserved: reserved[s]})
		}
	}
	return out
}

// PoolUse is one private pool as PrivatePools reports it.
type PoolUse struct {
	ID       PoolID
	Users    int   // captures still using it; 0: freeable
	Segments int   // segments it holds
	Reserved int64 // bytes of those segments (mapped pages for expandable ones)
}

// openSet returns the set of pool id, creating it with one user if there is
// none (the zero id is set 0, the default pools). The caller has checked
// MaxPrivatePools.
func (a *Allocator) openSet(id PoolID) uint16 {
	if id == (PoolID{}) {
		return 0
	}
	if set, ok := a.poolSets[id]; ok {
		return set
	}
	a.private = append(a.private, privateSet{id: id, users: 1})
	a.pools = append(a.pools, pool{}, pool{})
	set := uint16(len(a.private))
	if a.poolSets == nil {
		a.poolSets = map[PoolID]uint16{}
	}
	a.poolSets[id] = set
	return set
}

// countSegment adds d to the segment count of pool p's private pool (a
// no-op for the default pools).
func (a *Allocator) countSegment(p uint16, d int) {
	if p >= 2 {
		a.private[p/2-1].segments += d
	}
}

// releasable: pool p's wholly free segments go back to the device on
// empty_cache and the out-of-memory ladder (the default pools, and private
// pools no capture uses).
func (a *Allocator) releasable(p uint16) bool {
	return p < 2 || a.private[p/2-1].users == 0
}

// releasePrivatePools is the private-pool part of release_cached_blocks:
// each freeable pool (no users) gives back its wholly free segments, small
// pool first as PyTorch does, and is deleted once it holds none. Pools
// still in use keep their cache: their segments hold a captured graph's
// addresses.
func (a *Allocator) releasePrivatePools() {
	for s := range a.private {
		ps := &a.private[s]
		if ps.deleted || ps.users > 0 {
			continue
		}
		set := uint16(s + 1)
		a.releasePool(2*set + smallPool)
		a.releasePool(2*set + largePool)
		if ps = &a.private[s]; ps.segments == 0 {
			ps.deleted = true
			delete(a.poolSets, ps.id)
		}
	}
}

// checkPrivate verifies the private sets' invariants.
func (a *Allocator) checkPrivate() error {
	if len(a.pools) != 2+2*len(a.private) {
		return fmt.Errorf("%d pools for %d private pools", len(a.pools), len(a.private))
	}
	segs := make([]int, len(a.private))
	for id := range a.blocks {
		b := a.rec(int32(id))
		if b.inUse && b.pool >= 2 && b.seg == none && b.prev == none {
			segs[b.pool/2-1]++
		}
	}
	for _, e := range a.exp {
		if e.live && e.pool >= 2 {
			segs[e.pool/2-1]++
		}
	}
	live := 0
	for s, ps := range a.private {
		switch set, ok := a.poolSets[ps.id]; {
		case ps.segments != segs[s]:
			return fmt.Errorf("pool %d_%d counts %d segments, recount %d", ps.id[0], ps.id[1], ps.segments, segs[s])
		case ps.deleted && (ps.users != 0 || ps.segments != 0):
			return fmt.Errorf("pool %d_%d deleted with %d users and %d segments", ps.id[0], ps.id[1], ps.users, ps.segments)
		case !ps.deleted && (!ok || int(set) != s+1):
			return fmt.Errorf("pool %d_%d (set %d) indexed as set %d (present: %v)", ps.id[0], ps.id[1], s+1, set, ok)
		case !ps.deleted:
			live++
		}
	}
	if live != len(a.poolSets) {
		return fmt.Errorf("%d private pools by id, %d live", len(a.poolSets), live)
	}
	return nil
}

// PrivateCachedFree is the free memory cached in private pools: reserved,
// yet no default-pool request can use it, and the out-of-memory ladder
// does not release it while a capture uses the pool. PyTorch's
// out-of-memory message counts these same free blocks as "allocated in
// private pools (e.g., CUDA Graphs)". O(free blocks of the private pools).
func (a *Allocator) PrivateCachedFree() int64 {
	var n int64
	for p := 2; p < len(a.pools); p++ {
		a.pools[p].allFree(func(k ordset.Key) bool {
			n += a.blocks[k.ID].size
			return true
		})
	}
	return n
}
