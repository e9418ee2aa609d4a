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

// block is the hot part of PyTorch's Block: a piece of a segment, linked
// to its neighbours. Records live in Allocator.blocks and are named by
// index, so links cost no pointers and the steady state allocates nothing.
//
// A record is split by how often a free+alloc pair touches its parts: the
// fields Alloc's hit, Free, merge and splitLow read are the 32 bytes here
// (two records a cache line); the request is in Allocator.req, the pool in
// Allocator.bpool, the allocated, mapped and in-use bits in Allocator.state,
// and what only the other paths read (gcBase, seg, qpos) in Allocator.cold,
// all by the same id. With ~11,400 records in the target benchmark's steady
// state, 64-byte records alone spanned ~730 KiB, and the pair's working set
// did not fit in a 1 MiB L2 (callgrind's cache simulation: 0.54 misses of a
// 1 MiB cache a pair, 0.01 of a 2 MiB one). record is the whole of one,
// gathered (Allocator.rec) for the paths that are not hot, and what
// newBlock scatters.
type block struct {
	addr uint64
	size int64
	prev int32  // lower-address neighbour in the same segment, or none
	next int32  // higher-address neighbour in the same segment, or none
	gen  uint32 // allocations made in this record: the handle's check (handleOf); kept when the record is reused
	sidx uint32 // dense index of stream (Allocator.streams)
}

// blockCold is the part of a record the free+alloc pair does not touch
// (without garbage collection or expandable segments): Allocator.cold.
// A dropped record keeps its cold part (dropBlock does not write it) with
// gcBase and qpos as they were when it left the free set (gcBase stale,
// qpos 0); every path that makes a record in use writes its seg, and its
// gcBase when it enters a free set with garbage collection on.
type blockCold struct {
	gcBase int64 // pool.freeCalls when the block last entered the free set; written only with garbage collection (freeCalls is 0 without)
	seg    int32 // index into Allocator.exp for expandable blocks, else none
	qpos   int32 // 1 + position in its pool's whole or unmappable queue; 0 in neither
}

// record is one block record whole: the value newBlock stores and rec
// returns.
type record struct {
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

func (b *record) end() uint64 { return b.addr + uint64(b.size) }

// rec gathers record id.
func (a *Allocator) rec(id int32) record {
	b, c, st := &a.blocks[id], &a.cold[id], a.state[id]
	return record{addr: b.addr, size: b.size, requested: a.req[id], gcBase: c.gcBase, prev: b.prev, next: b.next,
		seg: c.seg, sidx: b.sidx, qpos: c.qpos, gen: b.gen, pool: a.bpool[id],
		allocated: st&stAllocated != 0, mapped: st&stMapped != 0, inUse: st&stInUse != 0}
}

// put scatters r into record id, generation included.
func (a *Allocator) put(id int32, r record) {
	a.blocks[id] = block{addr: r.addr, size: r.size, prev: r.prev, next: r.next, gen: r.gen, sidx: r.sidx}
	a.cold[id] = blockCold{gcBase: r.gcBase, seg: r.seg, qpos: r.qpos}
	a.req[id] = r.requested
	a.bpool[id] = r.pool
	a.state[id] = stateOf(&r)
}

// isAllocated, isMapped and inUse read a record's state bits.
func (a *Allocator) isAllocated(id int32) bool { return a.state[id]&stAllocated != 0 }
func (a *Allocator) isMapped(id int32) bool    { return a.state[id]&stMapped != 0 }
func (a *Allocator) inUse(id int32) bool       { return a.state[id]&stInUse != 0 }

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
	if a.state[i-1]&stAllocated == 0 || a.blocks[i-1].gen != uint32(h>>32) {
		return none, false
	}
	return int32(i - 1), true
}

// Allocator.state holds each record's allocated, mapped and in-use bits,
// one byte a block, so tryMerge can see that a neighbour is allocated (the
// common case) without loading its record: with 10,000 live blocks the
// records span ~360 KiB and each neighbour's record is a cache miss, while
// the state bytes fit in L1/L2. They are the only copy of these bits.
const (
	stAllocated uint8 = 1 << iota
	stMapped
	stInUse
	// stFree is the state of a free mapped block; stLive that of an
	// allocated one (always mapped).
	stFree = stInUse | stMapped
	stLive = stFree | stAllocated
)

func stateOf(b *record) uint8 {
	var s uint8
	if b.inUse {
		s |= stInUse
	}
	if b.allocated {
		s |= stAllocated
	}
	if b.mapped {
		s |= stMapped
	}
	return s
}

func (b *block) isSplit() bool  { return b.prev != none || b.next != none }
func (b *record) isSplit() bool { return b.prev != none || b.next != none }

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
