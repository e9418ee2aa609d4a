// Package extent is an ordered set of free extents [addr, addr+size) inside
// one address space, with best fit and coalescing in O(log n). The arena and
// async allocators keep their free memory in it; it knows nothing about
// devices, pages or streams.
//
// A Set keeps two indexes over the same extents: one ordered by address,
// which finds the neighbours to merge with and the extent covering an
// address, and one ordered by (size, address), which answers best fit —
// the smallest extent that is large enough, the lowest address among equal
// sizes — with one lookup.
//
// Each index is binned (index.go): the address index into 4096 buckets of
// the range given to Init, the size index into 16 classes per power of two,
// with a two-level bitmap of non-empty bins. A bin is a small B-tree of
// 128-bit keys written for this package (btree.go) rather than
// github.com/google/btree: keys are compared inline instead of through a less
// function, nodes are recycled without a lock, and search results are slots
// that the caller may rewrite in place when an extent grows or shrinks
// without passing a neighbour, or remove without a second descent. So a
// lookup is a bin computation, at most two bitmap steps and, usually, one
// leaf; every bound stays O(log n) because a bin is a balanced tree however
// many extents land in it. Once the trees have reached their working size
// nothing is allocated. The cost of an allocator's free+alloc pair is in the
// benchmarks of packages arena and async.
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
	"math/bits"
	"slices"
	"strings"
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
// nodes); use Clone. It is not safe for concurrent use.
type Set struct {
	byAddr index // keys (addr, size), binned by address
	bySize index // keys (size, addr), binned by size class
	total  int64 // Σ sizes; +Insert, -Take
}

// Init empties the set and tunes its address index for extents inside
// [base, base+size): the range is cut into addrBins buckets. Extents outside
// the range still work (they fall into the first or last bucket). A zero Set
// needs no Init; it buckets the whole 64-bit space, which suits sets over
// small addresses (or few extents) as well.
func (s *Set) Init(base uint64, size int64) {
	shift := uint(64 - bits.Len64(addrBins-1)) // whole 64-bit space
	if size > 0 {
		shift = uint(max(0, bits.Len64(uint64(size-1))-bits.Len64(addrBins-1)))
	}
	s.byAddr.init(false, base, shift)
	s.bySize.init(true, 0, 0)
	s.total = 0
}

func (s *Set) lazyInit() {
	if s.byAddr.nbins == 0 {
		s.Init(0, 0)
	}
}

// ErrBroken is wrapped by CheckInvariants for any violated invariant.
var ErrBroken = errors.New("extent: broken set")

func addrKey(addr uint64, size int64) key { return key{addr, uint64(size)} }
func sizeKey(addr uint64, size int64) key { return key{uint64(size), addr} }
func fromAddr(k key) Extent               { return Extent{Addr: k.hi, Size: int64(k.lo)} }

// Len is the number of extents.
func (s *Set) Len() int { return s.byAddr.length }

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
	s.lazyInit()
	pred, succ := s.byAddr.seek(key{addr, 0})
	var p, n Extent // the neighbours in address order, if any
	mergeL, mergeR := false, false
	if pred.ok() {
		p = fromAddr(pred.get())
		if p.End() > addr {
			panic(fmt.Sprintf("extent: insert %v overlaps %v", Extent{addr, size}, p))
		}
		mergeL = p.End() == addr
	}
	if succ.ok() {
		n = fromAddr(succ.get())
		if n.Addr < end {
			panic(fmt.Sprintf("extent: insert %v overlaps %v", Extent{addr, size}, n))
		}
		mergeR = n.Addr == end
	}
	// In-place rewrites first: slots die at the next insert or delete.
	switch {
	case mergeL && mergeR:
		merged := p.Size + size + n.Size
		pred.set(addrKey(p.Addr, merged))
		s.byAddr.delete(addrKey(n.Addr, n.Size))
		s.bySize.delete(sizeKey(n.Addr, n.Size))
		s.bySize.rekey(sizeKey(p.Addr, p.Size), sizeKey(p.Addr, merged))
	case mergeL:
		pred.set(addrKey(p.Addr, p.Size+size))
		s.bySize.rekey(sizeKey(p.Addr, p.Size), sizeKey(p.Addr, p.Size+size))
	case mergeR:
		// The successor now starts at addr; nothing lies between the
		// predecessor's end and addr, so the address order is unchanged.
		s.byAddr.replace(succ, addrKey(n.Addr, n.Size), addrKey(addr, size+n.Size))
		s.bySize.rekey(sizeKey(n.Addr, n.Size), sizeKey(addr, size+n.Size))
	default:
		s.byAddr.insertBetween(pred, succ, addrKey(addr, size))
		s.bySize.insert(sizeKey(addr, size))
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
	sl := s.byAddr.lowerSlot(key{addr, math.MaxUint64})
	if !sl.ok() {
		return false
	}
	e := fromAddr(sl.get())
	end := addr + uint64(size)
	if end > e.End() {
		return false // also covers addr >= e.End()
	}
	left := int64(addr - e.Addr)
	right := int64(e.End() - end)
	switch {
	case left > 0:
		sl.set(addrKey(e.Addr, left))
		if right > 0 {
			s.byAddr.insert(addrKey(end, right))
		}
	case right > 0:
		// Carving from the low end keeps the extent between the same
		// neighbours, so the key is rewritten in place.
		s.byAddr.replace(sl, addrKey(e.Addr, e.Size), addrKey(end, right))
	default:
		s.byAddr.delete(addrKey(e.Addr, e.Size))
	}
	switch old := sizeKey(e.Addr, e.Size); {
	case left > 0 && right > 0:
		s.bySize.rekey(old, sizeKey(e.Addr, left))
		s.bySize.insert(sizeKey(end, right))
	case left > 0:
		s.bySize.rekey(old, sizeKey(e.Addr, left))
	case right > 0:
		s.bySize.rekey(old, sizeKey(end, right))
	default:
		s.bySize.delete(old)
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
	k, ok := s.bySize.ceil(key{uint64(size), 0})
	return Extent{Addr: k.lo, Size: int64(k.hi)}, ok
}

// TakeBestFit is BestFit followed by Take of size bytes from the low end of
// the extent found, in one pass: the slots found by the search are reused
// for the removal, which is what an allocation does on every call. It
// returns the address taken.
func (s *Set) TakeBestFit(size int64) (uint64, bool) {
	if size <= 0 {
		return 0, false
	}
	ss, sk := s.bySize.ceilSlot(key{uint64(size), 0})
	if !ss.ok() {
		return 0, false
	}
	e := Extent{Addr: sk.lo, Size: int64(sk.hi)}
	ak := addrKey(e.Addr, e.Size)
	as := s.byAddr.findSlot(ak)
	if rest := e.Size - size; rest == 0 {
		s.byAddr.deleteAt(as, ak)
		s.bySize.deleteAt(ss, sk)
	} else {
		end := e.Addr + uint64(size)
		s.byAddr.replace(as, ak, addrKey(end, rest))
		s.bySize.shrinkAt(ss, sk, sizeKey(end, rest))
	}
	s.total -= size
	return e.Addr, true
}

// Find returns the extent covering addr.
func (s *Set) Find(addr uint64) (Extent, bool) {
	sl := s.byAddr.lowerSlot(key{addr, math.MaxUint64})
	if !sl.ok() {
		return Extent{}, false
	}
	e := fromAddr(sl.get())
	return e, addr < e.End()
}

// Contains reports whether [addr, addr+size) lies inside one extent.
func (s *Set) Contains(addr uint64, size int64) bool {
	e, ok := s.Find(addr)
	return ok && size > 0 && addr+uint64(size) >= addr && addr+uint64(size) <= e.End()
}

// Next returns the first extent that starts at or after addr.
func (s *Set) Next(addr uint64) (Extent, bool) {
	k, ok := s.byAddr.ceil(key{addr, 0})
	return fromAddr(k), ok
}

// Prev returns the last extent that starts before addr.
func (s *Set) Prev(addr uint64) (Extent, bool) {
	sl := s.byAddr.lowerSlot(key{addr, 0})
	if !sl.ok() {
		return Extent{}, false
	}
	return fromAddr(sl.get()), true
}

// First and Last return the extents at the lowest and highest addresses.
func (s *Set) First() (Extent, bool) {
	k, ok := s.byAddr.min()
	return fromAddr(k), ok
}

// Last returns the extent at the highest address.
func (s *Set) Last() (Extent, bool) {
	k, ok := s.byAddr.max()
	return fromAddr(k), ok
}

// Largest returns the largest extent, the one at the lowest address among
// equals (the extent BestFit would pick for that size).
func (s *Set) Largest() (Extent, bool) {
	k, ok := s.bySize.max()
	if !ok {
		return Extent{}, false
	}
	return s.BestFit(int64(k.hi))
}

// All yields the extents in increasing address order. The set must not be
// changed during the iteration.
func (s *Set) All() iter.Seq[Extent] {
	return func(yield func(Extent) bool) {
		s.byAddr.ascend(func(k key) bool { return yield(fromAddr(k)) })
	}
}

// Backward yields the extents in decreasing address order. The set must not
// be changed during the iteration.
func (s *Set) Backward() iter.Seq[Extent] {
	return func(yield func(Extent) bool) {
		s.byAddr.descend(func(k key) bool { return yield(fromAddr(k)) })
	}
}

// Clear removes every extent, keeping the trees' nodes for reuse.
func (s *Set) Clear() {
	if s.byAddr.nbins != 0 {
		s.byAddr.clear()
		s.bySize.clear()
	}
	s.total = 0
}

// Clone returns an independent deep copy.
func (s *Set) Clone() Set {
	return Set{byAddr: s.byAddr.clone(), bySize: s.bySize.clone(), total: s.total}
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
	if s.byAddr.nbins == 0 {
		if s.byAddr.length != 0 || s.bySize.length != 0 || s.total != 0 {
			return fmt.Errorf("%w: uninitialised set holds extents", ErrBroken)
		}
		return nil
	}
	if err := s.byAddr.check(); err != nil {
		return fmt.Errorf("%w: address index: %w", ErrBroken, err)
	}
	if err := s.bySize.check(); err != nil {
		return fmt.Errorf("%w: size index: %w", ErrBroken, err)
	}
	if s.byAddr.length != s.bySize.length {
		return fmt.Errorf("%w: %d extents by address, %d by size", ErrBroken, s.byAddr.length, s.bySize.length)
	}
	var (
		total int64
		prev  Extent
		first = true
		err   error
	)
	s.byAddr.ascend(func(k key) bool {
		e := fromAddr(k)
		switch {
		case e.Size <= 0 || e.End() < e.Addr:
			err = fmt.Errorf("%w: extent at %#x has size %d", ErrBroken, e.Addr, e.Size)
		case !first && prev.End() >= e.Addr:
			err = fmt.Errorf("%w: %v and %v overlap or touch", ErrBroken, prev, e)
		case !s.bySize.has(sizeKey(e.Addr, e.Size)):
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

// has reports whether k is in the index.
func (ix *index) has(k key) bool {
	got, ok := ix.ceil(k)
	return ok && got == k
}
