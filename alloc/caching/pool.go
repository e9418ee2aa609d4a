// Block records and the per-pool free sets.
// See package alloc for the overview.

package caching

import (
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
	requested int64 // caller's request while allocated; 0 when free
	stream    int
	gcBase    int64 // pool.freeCalls when the block last entered the free set
	handle    alloc.Handle
	prev      int32  // lower-address neighbour in the same segment, or none
	next      int32  // higher-address neighbour in the same segment, or none
	seg       int32  // index into Allocator.exp for expandable blocks, else none
	sidx      uint16 // dense index of stream (Allocator.streams)
	pool      uint8  // smallPool or largePool
	allocated bool
	mapped    bool // false only for unmapped VA of an expandable segment
	inUse     bool // the slot holds a block (false: on the slot free list)
}

func (b *block) end() uint64 { return b.addr + uint64(b.size) }

func (b *block) isSplit() bool { return b.prev != none || b.next != none }

const (
	smallPool uint8 = iota
	largePool
)

// Free mapped blocks are ordered as BlockComparatorSize orders them: by
// stream, then size, then address, so Find(stream, size, 0) is best fit.
// The key packs the stream's dense index (16 bits) and size/512 (48 bits,
// sizes up to 128 PiB) into Hi and the address into Lo. Unmapped
// expandable VA is ordered by stream, then address (BlockComparatorAddress):
// Hi is the stream index, Lo the address. Streams are numbered in order of
// first use; the order between streams is never observable (every query is
// per stream, and whole-pool walks release the same set in any order).
const sizeBits = 48

func freeKeyOf(stream uint64, size int64, addr uint64) ordset.Key {
	return ordset.Key{Hi: stream<<sizeBits | uint64(size)>>9, Lo: addr}
}

func keySize(k ordset.Key) int64 { return int64(k.Hi&(1<<sizeBits-1)) << 9 }

func keyStream(k ordset.Key) uint64 { return k.Hi >> sizeBits }

// pool is PyTorch's BlockPool.
//
// Invariants:
//
//	free holds exactly the free, mapped blocks of this pool
//	unmapped holds exactly the unmapped (expandable) blocks of this pool
//	freeCalls only grows
type pool struct {
	free      ordset.Set // keys (stream, size, addr)
	unmapped  ordset.Set // keys (stream, addr, 0)
	freeCalls int64      // get_free_blocks_call_count (only counted when GC is on)
}

// expSegment is one expandable segment: a virtual range whose pages are
// mapped on demand (PyTorch's ExpandableSegment).
type expSegment struct {
	base     uint64
	size     int64 // VA length: a whole number of pages
	pageSize int64 // 2 MiB (small pool) or 20 MiB (large pool)
	stream   int
	pool     uint8
	live     bool // false once released
}
