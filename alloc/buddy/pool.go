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

// pool is a binary buddy system over the offsets [0, size), counted in
// units of min bytes (min need not be a power of two: a unit can be one
// token's KV, so that blocks are powers of two of tokens). A block of order
// k is 2^k units at a unit offset that is a multiple of 2^k; its buddy is
// the block of the same order at unit offset ^ 2^k, and the two halves of a
// split are buddies. size is a multiple of min but need not be a power of
// two of it: the pool starts as its top-level blocks, one per set bit of
// size/min, largest first at offset 0 (12 units: 8 at 0, then 4 at 8).
// A top-level block's buddy position lies past the end of the pool, so
// top-level blocks never merge with each other (see put).
//
// Free blocks are one ordered set keyed (order, unit offset): best fit, the
// smallest order at or above the request and the lowest offset within it,
// is one lower-bound query, and a buddy's freedom one lookup.
//
// Invariants (check):
//
//	every free block is aligned to its size (in units) and lies inside the pool
//	free blocks and the blocks taken (the caller's) tile [0, size)
//	no free block's buddy is free (free space is fully merged)
//	freeBytes == Σ free block sizes
type pool struct {
	min       int64      // smallest block, the unit of offsets; fixed
	units     uint64     // size ÷ min; fixed
	size      int64      // pool bytes, a multiple of min; fixed
	top       int        // order of the largest top-level block; fixed
	free      ordset.Set // Key{Hi: order, Lo: unit offset} of every free block
	freeBytes int64      // Σ free block sizes; -take, +put
}

// init makes p a pool of size bytes (a positive multiple of min) with every
// top-level block free.
func (p *pool) init(size, min int64) {
	*p = pool{min: min, units: uint64(size / min), size: size}
	p.top = bits.Len64(p.units) - 1
	var u uint64
	for k := p.top; k >= 0; k-- {
		if p.units>>k&1 != 0 {
			p.free.Insert(ordset.Key{Hi: uint64(k), Lo: u})
			u += 1 << k
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
	units := uint64((n + p.min - 1) / p.min) // n ≤ 2^50: no overflow
	return bits.Len64(units - 1), true
}

// take removes a free block of order k and returns its byte offset: the lowest
// offset among the free blocks of the smallest order ≥ k, split in halves
// down to order k, the high half of each split staying free. It reports
// false, changing nothing, when no free block is large enough.
func (p *pool) take(k int) (uint64, bool) {
	pos, key, ok := p.free.Find(ordset.Key{Hi: uint64(k)})
	if !ok {
		return 0, false
	}
	p.free.DeleteAt(pos)
	u := key.Lo
	for j := int(key.Hi); j > k; j-- {
		p.free.Insert(ordset.Key{Hi: uint64(j - 1), Lo: u + 1<<(j-1)})
	}
	p.freeBytes -= p.blockSize(k)
	return u * uint64(p.min), true
}

// put returns the block of order k at byte offset off (one take returned)
// and merges it with its buddy, and the result with its buddy, while the
// buddy is free. It returns the byte offset and order of the free block it
// ends as.
func (p *pool) put(off uint64, k int) (uint64, int) {
	p.freeBytes += p.blockSize(k)
	u := off / uint64(p.min)
	for ; k < p.top; k++ {
		// The buddy of a top-level block ends past the pool (its offset has
		// bit k clear and less than its size of pool follows it), so the
		// bound stops a merge there; inside a top-level block every buddy
		// is in the pool. At order top every block is top-level.
		bud := u ^ 1<<k
		if bud+1<<k > p.units || !p.free.Delete(ordset.Key{Hi: uint64(k), Lo: bud}) {
			break
		}
		u = min(u, bud)
	}
	p.free.Insert(ordset.Key{Hi: uint64(k), Lo: u})
	return u * uint64(p.min), k
}

// largest returns the order of the largest free block, or false when no
// block is free.
func (p *pool) largest() (int, bool) {
	key, ok := p.free.Max()
	return int(key.Hi), ok
}

// each calls f for every free block (its byte offset and order) in (order,
// offset) order.
func (p *pool) each(f func(off uint64, k int)) {
	p.free.All(func(key ordset.Key) bool { f(key.Lo*uint64(p.min), int(key.Hi)); return true })
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
	p.free.All(func(key ordset.Key) bool {
		k, u := int(key.Hi), key.Lo
		if k > p.top {
			bad = fmt.Errorf("free block of order %d above the pool's top order %d", k, p.top)
			return false
		}
		n := uint64(1) << k
		bud := u ^ n
		switch {
		case u%n != 0 || u+n > p.units:
			bad = fmt.Errorf("free block of order %d at offset %d is not an aligned block of the %d-byte pool", k, u*uint64(p.min), p.size)
		case bud+n <= p.units && p.free.Has(ordset.Key{Hi: uint64(k), Lo: bud}):
			bad = fmt.Errorf("free blocks of order %d at offsets %d and %d are buddies and were not merged",
				k, min(u, bud)*uint64(p.min), max(u, bud)*uint64(p.min))
		}
		sum += p.blockSize(k)
		return bad == nil
	})
	if bad != nil {
		return bad
	}
	if sum != p.freeBytes {
		return fmt.Errorf("free blocks sum to %d bytes, counter says %d", sum, p.freeBytes)
	}
	return nil
}
