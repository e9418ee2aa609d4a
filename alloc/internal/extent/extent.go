// Package extent is an ordered set of free extents [addr, addr+size) inside
// one address space, with best fit and coalescing that touch one bin of
// each of two binned indexes (see below). The arena and
// async allocators keep their free memory in it; it knows nothing about
// devices, pages or streams.
//
// A Set keeps two indexes over the same extents: one ordered by address,
// which finds the neighbours to merge with and the extent covering an
// address, and one ordered by (size, address), which answers best fit —
// the smallest extent that is large enough, the lowest address among equal
// sizes — with one lookup.
//
// Each index is an ordset.Binned, the binned ordered set that the caching
// allocator's free sets use too: keys split into bins, each bin a short
// sorted slice (a chunked Set once it holds more than a few hundred keys),
// under a two-level bitmap of non-empty bins. The address index is binned
// linearly, into 4096 buckets of the range given to Init; the size index
// log-linearly (an exact bin below 4 KiB, 32 bins per power of two above).
// Search results are positions that the caller may rewrite in place when an
// extent grows or shrinks without passing a neighbour, or remove without a
// second search. So a lookup is a bin computation, at most a few bitmap
// steps and, usually, a binary search of a handful of keys. However many
// extents crowd into one bin, an operation costs a binary search and a
// shift of at most 512 keys (a flat bin) or 64 (a chunk of a Set), plus, when
// a Set's chunk splits or merges, a shift of its chunk maxima (n/64 for n
// keys). Once the bins have reached their working size nothing is
// allocated. The cost of an allocator's free+alloc pair is in the benchmarks
// of packages arena and async; docs/architecture.md says why these indexes
// replaced the per-bin B-trees this package had.
//
// Invariants (checked by CheckInvariants):
//
//	no two extents overlap or touch: a.End() < b.Addr for consecutive a, b
//	every extent has Size > 0 and does not wrap past 2^64
//	byAddr and bySize hold exactly the same extents
//	total == Σ sizes
package extent

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/alloc/internal/ordset"
)

// Extent is a range of free addresses [Addr, Addr+Size).
type Extent struct {
	Addr uint64
	Size int64
}

// End is the first address past the extent.
func (e Extent) End() uint64 { return e.Addr + uint64(e.Size) }

func (e Extent) String() string { return fmt.Sprintf("[%#x,%#x)", e.Addr, e.End()) }

// Set is an ordered set of disjoint, non-adjacent extents. The zero value is
// an empty set ready to use. A Set must not be copied (the copy would share
// bins); use Clone. It is not safe for concurrent use.
type Set struct {
	byAddr ordset.Binned // keys (addr, size), binned by address
	bySize ordset.Binned // keys (size, addr), binned by size
	total  int64         // Σ sizes; +Insert, -Take
}

// Init empties the set and tunes its address index for extents inside
// [base, base+size): the range is cut into 4096 buckets. Extents outside
// the range still work (they fall into the first or last bucket). A zero Set
// needs no Init; its address index is binned like the size index,
// log-linearly, which suits sets over small addresses (or few extents).
func (s *Set) Init(base uint64, size int64) {
	s.byAddr.InitLinear(base, uint64(max(0, size))) // 0: the whole space above base
	s.bySize.Clear()
	s.total = 0
}

// ErrBroken is wrapped by CheckInvariants for any violated invariant.
var ErrBroken = errors.New("extent: broken set")

// Len is the number of extents.
func (s *Set) Len() int { return s.byAddr.Len() }

// Total is the number of free bytes, Σ sizes.
func (s *Set) Total() int64 { return s.total }

// Insert adds [addr, addr+size) and merges it with the extents that end at
// addr or start at addr+size, so the set stays coalesced. The range must be
// positive, must not wrap, and must not overlap an extent of the set: that
// would be a double free in the caller, and Insert panics.
func (s *Set) Insert(addr uint64, size int64) {
	end := addr + uint64(size)
	if size <= 0 || end < addr {
		panic(fmt.Sprintf("extent: insert of %d bytes at %#x", size, addr))
	}
	pred, predOK, succ, succOK := s.byAddr.Seek(key{Hi: addr})
	var p, n Extent // the neighbours in address order, if any
	mergeL, mergeR := false, false
	if predOK {
		p = fromAddr(s.byAddr.At(pred))
		if p.End() > addr {
			panic(fmt.Sprintf("extent: insert %v overlaps %v", Extent{addr, size}, p))
		}
		mergeL = p.End() == addr
	}
	if succOK {
		n = fromAddr(s.byAddr.At(succ))
		if n.Addr < end {
			panic(fmt.Sprintf("extent: insert %v overlaps %v", Extent{addr, size}, n))
		}
		mergeR = n.Addr == end
	}
	// In-place rewrites first: positions die at the next insert or delete.
	// A rewrite that keeps the address keeps the bin and, addresses being
	// unique, the order.
	switch {
	case mergeL && mergeR:
		merged := p.Size + size + n.Size
		s.byAddr.SetAt(pred, addrKey(p.Addr, merged))
		s.byAddr.Delete(addrKey(n.Addr, n.Size))
		s.bySize.Delete(sizeKey(n.Addr, n.Size))
		rekey(&s.bySize, sizeKey(p.Addr, p.Size), sizeKey(p.Addr, merged))
	case mergeL:
		s.byAddr.SetAt(pred, addrKey(p.Addr, p.Size+size))
		rekey(&s.bySize, sizeKey(p.Addr, p.Size), sizeKey(p.Addr, p.Size+size))
	case mergeR:
		// The successor now starts at addr; nothing lies between the
		// predecessor's end and addr, so the address order is unchanged.
		replace(&s.byAddr, succ, addrKey(n.Addr, n.Size), addrKey(addr, size+n.Size))
		rekey(&s.bySize, sizeKey(n.Addr, n.Size), sizeKey(addr, size+n.Size))
	default:
		insert(&s.byAddr, addrKey(addr, size))
		insert(&s.bySize, sizeKey(addr, size))
	}
	s.total += size
}

// Take removes [addr, addr+size) from the extent that covers it, leaving the
// pieces on either side free. It reports false, changing nothing, when the
// range is not inside one extent (or size <= 0).
func (s *Set) Take(addr uint64, size int64) bool {
	if size <= 0 || addr+uint64(size) < addr {
		return false
	}
	p, k, ok := s.byAddr.Below(key{Hi: addr, Lo: math.MaxUint64})
	if !ok {
		return false
	}
	e := fromAddr(k)
	end := addr + uint64(size)
	if end > e.End() {
		return false // also covers addr >= e.End()
	}
	left := int64(addr - e.Addr)
	right := int64(e.End() - end)
	switch {
	case left > 0:
		s.byAddr.SetAt(p, addrKey(e.Addr, left))
		if right > 0 {
			insert(&s.byAddr, addrKey(end, right))
		}
	case right > 0:
		// Carving from the low end keeps the extent between the same
		// neighbours, so the key is rewritten in place.
		replace(&s.byAddr, p, addrKey(e.Addr, e.Size), addrKey(end, right))
	default:
		s.byAddr.DeleteAt(p)
	}
	switch old := sizeKey(e.Addr, e.Size); {
	case left > 0 && right > 0:
		rekey(&s.bySize, old, sizeKey(e.Addr, left))
		insert(&s.bySize, sizeKey(end, right))
	case left > 0:
		rekey(&s.bySize, old, sizeKey(e.Addr, left))
	case right > 0:
		rekey(&s.bySize, old, sizeKey(end, right))
	default:
		s.bySize.Delete(old)
	}
	s.total -= size
	return true
}

// BestFit returns the smallest extent of at least size bytes, the one at the
// lowest address among equals.
func (s *Set) BestFit(size int64) (Extent, bool) {
	if size <= 0 {
		size = 1
	}
	k, ok := s.bySize.LowerBound(key{Hi: uint64(size)})
	return fromSize(k), ok
}

// TakeBestFit is BestFit followed by Take of size bytes from the low end of
// the extent found, in one pass: the positions found by the searches are
// reused for the removal, which is what an allocation does on every call.
// It returns the address taken.
func (s *Set) TakeBestFit(size int64) (uint64, bool) {
	if size <= 0 {
		return 0, false
	}
	sp, sk, ok := s.bySize.Find(key{Hi: uint64(size)})
	if !ok {
		return 0, false
	}
	e := fromSize(sk)
	ak := addrKey(e.Addr, e.Size)
	ap, _, _ := s.byAddr.Find(ak) // present: the indexes hold the same extents
	if rest := e.Size - size; rest == 0 {
		s.byAddr.DeleteAt(ap)
		s.bySize.DeleteAt(sp)
	} else {
		end := e.Addr + uint64(size)
		replace(&s.byAddr, ap, ak, addrKey(end, rest))
		rekeyAt(&s.bySize, sp, sk, sizeKey(end, rest))
	}
	s.total -= size
	return e.Addr, true
}

// Find returns the extent covering addr.
func (s *Set) Find(addr uint64) (Extent, bool) {
	_, k, ok := s.byAddr.Below(key{Hi: addr, Lo: math.MaxUint64})
	if !ok {
		return Extent{}, false
	}
	e := fromAddr(k)
	return e, addr < e.End()
}

// Contains reports whether [addr, addr+size) lies inside one extent.
func (s *Set) Contains(addr uint64, size int64) bool {
	e, ok := s.Find(addr)
	return ok && size > 0 && addr+uint64(size) >= addr && addr+uint64(size) <= e.End()
}

// Next returns the first extent that starts at or after addr.
func (s *Set) Next(addr uint64) (Extent, bool) {
	k, ok := s.byAddr.LowerBound(key{Hi: addr})
	return fromAddr(k), ok
}

// Prev returns the last extent that starts before addr.
func (s *Set) Prev(addr uint64) (Extent, bool) {
	_, k, ok := s.byAddr.Below(key{Hi: addr})
	return fromAddr(k), ok
}

// First and Last return the extents at the lowest and highest addresses.
func (s *Set) First() (Extent, bool) {
	k, ok := s.byAddr.LowerBound(key{})
	return fromAddr(k), ok
}

// Last returns the extent at the highest address.
func (s *Set) Last() (Extent, bool) {
	k, ok := s.byAddr.Max()
	return fromAddr(k), ok
}

// Largest returns the largest extent, the one at the lowest address among
// equals (the extent BestFit would pick for that size).
func (s *Set) Largest() (Extent, bool) {
	k, ok := s.bySize.Max()
	if !ok {
		return Extent{}, false
	}
	return s.BestFit(int64(k.Hi))
}

// All yields the extents in increasing address order. The set must not be
// changed during the iteration.
func (s *Set) All() iter.Seq[Extent] {
	return func(yield func(Extent) bool) {
		s.byAddr.All(func(k key) bool { return yield(fromAddr(k)) })
	}
}

// Backward yields the extents in decreasing address order. The set must not
// be changed during the iteration.
func (s *Set) Backward() iter.Seq[Extent] {
	return func(yield func(Extent) bool) {
		s.byAddr.Descend(key{Hi: math.MaxUint64, Lo: math.MaxUint64}, func(k key) bool { return yield(fromAddr(k)) })
	}
}

// Clear removes every extent, keeping the bins' storage for reuse and the
// address index's tuning (Init).
func (s *Set) Clear() {
	s.byAddr.Clear()
	s.bySize.Clear()
	s.total = 0
}

// Clone returns an independent deep copy.
func (s *Set) Clone() Set {
	return Set{byAddr: s.byAddr.Clone(), bySize: s.bySize.Clone(), total: s.total}
}

// Equal reports whether two sets hold the same extents. It costs O(n) time
// and memory.
func (s *Set) Equal(o *Set) bool {
	if s.Len() != o.Len() || s.total != o.total {
		return false
	}
	return slices.Equal(slices.Collect(s.All()), slices.Collect(o.All()))
}

// String lists the extents in address order, for tests and error messages.
func (s *Set) String() string {
	var sb strings.Builder
	sb.WriteByte('{')
	for e := range s.All() {
		if sb.Len() > 1 {
			sb.WriteByte(' ')
		}
		sb.WriteString(e.String())
	}
	sb.WriteByte('}')
	return sb.String()
}

// CheckInvariants verifies the set's invariants and returns the first
// violation, wrapping ErrBroken. It costs O(n).
func (s *Set) CheckInvariants() error {
	if err := s.byAddr.Check(); err != nil {
		return fmt.Errorf("%w: address index: %w", ErrBroken, err)
	}
	if err := s.bySize.Check(); err != nil {
		return fmt.Errorf("%w: size index: %w", ErrBroken, err)
	}
	if s.byAddr.Len() != s.bySize.Len() {
		return fmt.Errorf("%w: %d extents by address, %d by size", ErrBroken, s.byAddr.Len(), s.bySize.Len())
	}
	var (
		total int64
		prev  Extent
		first = true
		err   error
	)
	s.byAddr.All(func(k key) bool {
		e := fromAddr(k)
		switch {
		case e.Size <= 0 || e.End() < e.Addr:
			err = fmt.Errorf("%w: extent at %#x has size %d", ErrBroken, e.Addr, e.Size)
		case !first && prev.End() >= e.Addr:
			err = fmt.Errorf("%w: %v and %v overlap or touch", ErrBroken, prev, e)
		case !s.bySize.Has(sizeKey(e.Addr, e.Size)):
			err = fmt.Errorf("%w: %v is missing from the size index", ErrBroken, e)
		}
		total += e.Size
		prev, first = e, false
		return err == nil
	})
	if err != nil {
		return err
	}
	if total != s.total {
		return fmt.Errorf("%w: extents sum to %d, total says %d", ErrBroken, total, s.total)
	}
	return nil
}
