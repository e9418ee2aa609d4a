// Block records and the per-pool free sets.
// See package alloc for the overview.

package caching

import (
	"slices"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/ordset"
)

// none marks a missing prev/next link or segment.
const none int32 = -1

// block is PyTorch's Block: a piece of a segment, linked to its neighbours.
// Blocks live in Allocator.blocks and are named by index, so links cost no
// pointers and the steady state allocates nothing.
type block struct {
	addr      uint64
	size      int64
	requested int64  // caller's request while allocated; 0 when free
	gcBase    int64  // pool.freeCalls when the block last entered the free set
	prev      int32  // lower-address neighbour in the same segment, or none
	next      int32  // higher-address neighbour in the same segment, or none
	seg       int32  // index into Allocator.exp for expandable blocks, else none
	sidx      uint32 // dense index of stream (Allocator.streams)
	qpos      int32  // 1 + position in its pool's whole or unmappable queue; 0 in neither
	gen       uint32 // allocations made in this record: the handle's check (handleOf); kept when the record is reused
	pool      uint16 // index into Allocator.pools: 2·set + (0 small, 1 large); set 0 is the default pools
	allocated bool
	mapped    bool // false only for unmapped VA of an expandable segment
	inUse     bool // the slot holds a block (false: on the slot free list)
}

func (b *block) end() uint64 { return b.addr + uint64(b.size) }

// A handle names its block record directly: the generation of the record
// in the high 32 bits, the record's id + 1 in the low 32 (0 is never a
// handle). There is no handle table: Free finds the record in one load
// and checks that it is allocated under the same generation, so a stale
// handle, whose record was freed, merged away, reused or allocated again
// since, does not resolve (until one record's 32-bit generation wraps after
// 4e9 allocations, as with slot.Table). The record of a live allocation
// never moves while it is live (Relocate swaps records to keep it).
func handleOf(id int32, gen uint32) alloc.Handle {
	return alloc.Handle(uint64(gen)<<32 | uint64(uint32(id)+1))
}

// lookup returns the record of a live handle.
func (a *Allocator) lookup(h alloc.Handle) (int32, bool) {
	i := uint32(h) // id + 1
	if i == 0 || int(i) > len(a.blocks) {
		return none, false
	}
	b := &a.blocks[i-1]
	if !b.allocated || b.gen != uint32(h>>32) {
		return none, false
	}
	return int32(i - 1), true
}

// Allocator.state holds each record's allocated and mapped bits, one byte a
// block, so tryMerge can see that a neighbour is allocated (the common case)
// without loading its record: with 10,000 live blocks the records span
// ~700 KiB and each neighbour's record is a cache miss, while the state
// bytes fit in L1/L2. Every write of allocated or mapped updates it.
const (
	stAllocated uint8 = 1 << iota
	stMapped
)

func stateOf(b *block) uint8 {
	var s uint8
	if b.allocated {
		s |= stAllocated
	}
	if b.mapped {
		s |= stMapped
	}
	return s
}

func (b *block) isSplit() bool { return b.prev != none || b.next != none }

const (
	smallPool uint16 = iota
	largePool
)

// isSmallPool: pools alternate small, large (set s has 2s and 2s+1).
func isSmallPool(p uint16) bool { return p&1 == 0 }

// Free mapped blocks are ordered as BlockComparatorSize orders them: by
// stream, then size, then address, so Find(size, 0) in the stream's set is
// best fit. Each stream has its own free set (pool.free, by dense stream
// index), whose key is size/512 in Hi and the address in Lo, so the binned
// set gives every size below 2 MiB a bin of its own. Unmapped expandable
// VA is ordered by stream, then address (BlockComparatorAddress): Hi is the
// stream index, Lo the address. Streams are numbered in order of first use;
// the order between streams is never observable (every query is per
// stream, and whole-pool walks release the same set in any order).
func freeKey(size int64, addr uint64) ordset.Key {
	return ordset.Key{Hi: uint64(size) >> 9, Lo: addr}
}

func keySize(k ordset.Key) int64 { return int64(k.Hi) << 9 }

// pool is PyTorch's BlockPool.
//
// Invariants:
//
//	free[s] holds exactly the free, mapped blocks of this pool on stream
//	  index s, each under its key (size, addr) with its id
//	unmapped holds exactly the unmapped (expandable) blocks of this pool
//	whole holds exactly the free blocks of free[*] that are a whole
//	  cudaMalloc segment (no neighbour, not expandable), in the order they
//	  entered it, so by gcBase; wholeBase == Σ their gcBase
//	unmappable holds exactly the free blocks of free[*] in expandable
//	  segments with a whole page inside
//	a block is in at most one of them, at qpos − 1
//	freeCalls only grows
//
// whole and unmappable are what empty_cache, the out-of-memory ladder and
// garbage collection act on. PyTorch finds them by walking every free block,
// and so did the model: a replay whose allocations fail one after another
// (a what-if on a full device) or that empties the cache often walked every
// free block each time, quadratic in the trace. They are built when first
// needed (Allocator.queued) and kept from then on as blocks enter and leave
// the free sets (index.go): a few compares for a split block, an append or
// a store for one that is a whole segment or has a whole page to give back.
// While they are empty and not kept, a free-set change costs one compare.
type pool struct {
	free       []*ordset.Classed // by dense stream index: keys (size, addr); nil until the stream's first free block in the pool (a set is ~1.5 KiB, plus 1.5 KiB for each 64 size classes it has used)
	unmapped   ordset.Set        // keys (stream, addr)
	whole      idQueue           // oldest first
	wholeBase  int64             // Σ gcBase over whole
	unmappable idQueue
	freeCalls  int64 // get_free_blocks_call_count (only counted when GC is on)
}

// freeSet returns stream index si's free set, or nil if it never had one.
func (pl *pool) freeSet(si uint64) *ordset.Classed {
	if si >= uint64(len(pl.free)) {
		return nil
	}
	return pl.free[si]
}

// newFreeSet makes stream index si's free set, the first time the stream
// has a free block in the pool. Not inlined: inlined, its slice growth made
// insertFree save and reload its registers around the common path (callgrind).
//
//go:noinline
func (pl *pool) newFreeSet(si uint32) *ordset.Classed {
	if int(si) >= len(pl.free) {
		pl.free = slices.Grow(pl.free, int(si)+1-len(pl.free))[:si+1]
	}
	fs := new(ordset.Classed)
	pl.free[si] = fs
	return fs
}

// allFree calls f for every free block of the pool, stream by stream, each
// in (size, address) order, until f returns false. f must not modify the
// sets.
func (pl *pool) allFree(f func(ordset.Key) bool) {
	stopped := false
	for _, fs := range pl.free {
		if fs == nil {
			continue
		}
		fs.All(func(k ordset.Key) bool {
			stopped = !f(k)
			return !stopped
		})
		if stopped {
			return
		}
	}
}

// freeLen is the number of free blocks of the pool.
func (pl *pool) freeLen() int {
	n := 0
	for _, fs := range pl.free {
		if fs != nil {
			n += fs.Len()
		}
	}
	return n
}

// expSegment is one expandable segment: a virtual range whose pages are
// mapped on demand (PyTorch's ExpandableSegment).
type expSegment struct {
	base     uint64
	size     int64 // VA length: a whole number of pages
	pageSize int64 // 2 MiB (small pool) or 20 MiB (large pool)
	stream   int
	pool     uint16
	live     bool // false once released
}
