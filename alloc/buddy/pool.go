// The buddy system proper: free blocks by order over the offsets of one
// pool, split on take, merged with their buddy on put. It knows nothing of
// devices, handles or statistics (buddy.go).
// See package alloc for the overview.

package buddy

import (
	"fmt"
	"math/bits"

	"github.com/gpufrag/gpufrag/alloc/internal/ordset"
)

// pool is a binary buddy system over the offsets [0, size). A block of
// order k is min << k bytes at an offset that is a multiple of its size; its
// buddy is the block of the same order at offset ^ (min << k), and the two
// halves of a split are buddies. size is a multiple of min but need not be
// a power of two: the pool starts as its top-level blocks, one per set bit
// of size/min, largest first at offset 0 (12 units: 8 at 0, then 4 at 8).
// A top-level block's buddy position lies past the end of the pool, so
// top-level blocks never merge with each other (see put).
//
// Free blocks are one ordered set keyed (order, offset): best fit, the
// smallest order at or above the request and the lowest offset within it,
// is one lower-bound query, and a buddy's freedom one lookup.
//
// Invariants (check):
//
//	every free block is aligned to its size and lies inside the pool
//	free blocks and the blocks taken (the caller's) tile [0, size)
//	no free block's buddy is free (free space is fully merged)
//	freeBytes == Σ free block sizes
type pool struct {
	min       int64      // smallest block, a power of two; fixed
	shift     uint       // log2(min); fixed
	size      int64      // pool bytes, a multiple of min; fixed
	top       int        // order of the largest top-level block; fixed
	free      ordset.Set // Key{Hi: order, Lo: offset} of every free block
	freeBytes int64      // Σ free block sizes; -take, +put
}

// init makes p a pool of size bytes (a positive multiple of min, a power of
// two) with every top-level block free.
func (p *pool) init(size, min int64) {
	*p = pool{min: min, shift: log2(min), size: size}
	units := uint64(size >> p.shift)
	p.top = bits.Len64(units) - 1
	var off uint64
	for k := p.top; k >= 0; k-- {
		if units>>k&1 != 0 {
			p.free.Insert(ordset.Key{Hi: uint64(k), Lo: off})
			off += uint64(min) << k
		}
	}
	p.freeBytes = size
}

// blockSize is the size of a block of order k.
func (p *pool) blockSize(k int) int64 { return p.min << k }

// orderFor returns the smallest order whose block holds n bytes (n > 0),
// or false when n exceeds the largest block the pool can ever have.
func (p *pool) orderFor(n int64) (int, bool) {
	if n > p.blockSize(p.top) {
		return 0, false
	}
	units := uint64((n + p.min - 1) >> p.shift) // n ≤ 2^50: no overflow
	return bits.Len64(units - 1), true
}

// take removes a free block of order k and returns its offset: the lowest
// offset among the free blocks of the smallest order ≥ k, split in halves
// down to order k, the high half of each split staying free. It reports
// false, changing nothing, when no free block is large enough.
func (p *pool) take(k int) (uint64, bool) {
	pos, key, ok := p.free.Find(ordset.Key{Hi: uint64(k)})
	if !ok {
		return 0, false
	}
	p.free.DeleteAt(pos)
	off := key.Lo
	for j := int(key.Hi); j > k; j-- {
		p.free.Insert(ordset.Key{Hi: uint64(j - 1), Lo: off + uint64(p.blockSize(j-1))})
	}
	p.freeBytes -= p.blockSize(k)
	return off, true
}

// put returns the block of order k at off (one take returned) and merges
// it with its buddy, and the result with its buddy, while the buddy is
// free. It returns the order and offset of the free block it ends as.
func (p *pool) put(off uint64, k int) (uint64, int) {
	p.freeBytes += p.blockSize(k)
	for ; k < p.top; k++ {
		// The buddy of a top-level block ends past the pool (its offset has
		// bit k clear and less than its size of pool follows it), so the
		// bound stops a merge there; inside a top-level block every buddy
		// is in the pool. At order top every block is top-level.
		bs := uint64(p.blockSize(k))
		bud := off ^ bs
		if bud+bs > uint64(p.size) || !p.free.Delete(ordset.Key{Hi: uint64(k), Lo: bud}) {
			break
		}
		off = min(off, bud)
	}
	p.free.Insert(ordset.Key{Hi: uint64(k), Lo: off})
	return off, k
}

// largest returns the order of the largest free block, or false when no
// block is free.
func (p *pool) largest() (int, bool) {
	key, ok := p.free.Max()
	return int(key.Hi), ok
}

// each calls f for every free block in (order, offset) order.
func (p *pool) each(f func(off uint64, k int)) {
	p.free.All(func(key ordset.Key) bool { f(key.Lo, int(key.Hi)); return true })
}

// clone returns an independent copy.
func (p *pool) clone() pool {
	c := *p
	c.free = p.free.Clone()
	return c
}

// check verifies the invariants that do not need the taken blocks: every
// free block aligned, inside the pool and not beside a free buddy, and
// freeBytes their sum. The tiling is checked by the allocator, which knows
// the taken blocks (CheckInvariants).
func (p *pool) check() error {
	if err := p.free.Check(); err != nil {
		return err
	}
	var sum int64
	var bad error
	p.each(func(off uint64, k int) {
		if bad != nil {
			return
		}
		bs := uint64(p.blockSize(k))
		bud := off ^ bs
		switch {
		case k > p.top || off%bs != 0 || off+bs > uint64(p.size):
			bad = fmt.Errorf("free block of order %d at offset %d is not an aligned block of the %d-byte pool", k, off, p.size)
		case bud+bs <= uint64(p.size) && p.free.Has(ordset.Key{Hi: uint64(k), Lo: bud}):
			bad = fmt.Errorf("free blocks of order %d at offsets %d and %d are buddies and were not merged", k, min(off, bud), max(off, bud))
		}
		sum += int64(bs)
	})
	if bad != nil {
		return bad
	}
	if sum != p.freeBytes {
		return fmt.Errorf("free blocks sum to %d bytes, counter says %d", sum, p.freeBytes)
	}
	return nil
}
