// Binned index: small B-trees under a bitmap of bins.
// See package extent for the overview.

package extent

import (
	"fmt"
	"math/bits"
)

// Bin counts. An index has at most 64 words of bitmap under one summary
// word, so finding the next or previous non-empty bin takes at most two
// TrailingZeros/LeadingZeros steps.
const (
	// addrBins address buckets spread a device-sized range finely enough
	// that a bucket holds a handful of extents (one leaf node) in the arena
	// benchmark: its ~1,600 free extents at 10,000 live blocks fall into
	// ~150 of the 32 MiB buckets of its 72 GiB pool, ~10 each. 4096 is also
	// the most one summary word can cover.
	addrBins = 64 * 64
	// sizeBins covers every size class of an int64 (sizeClass < 976).
	sizeBins = 64 * subBins
)

// subBins is the number of size classes per power of two. 16 classes keep a
// class within 1/16 (6%) of its size, so each class holds few extents, and
// 64 powers × 16 = 1024 classes cover every int64.
const subBins = 16

// sizeClass maps a size (as uint64) to its bin. It is monotone: a larger size
// never gets a smaller class, which is what lets BestFit finish at the first
// non-empty class at or above the request's.
func sizeClass(size uint64) int {
	if size < subBins {
		return int(size)
	}
	e := bits.Len64(size) - 1 // 2^e <= size < 2^(e+1), e >= 4
	m := int(size>>(e-4)) & (subBins - 1)
	return (e-3)*subBins + m
}

// index is an ordered set of keys split into bins by the high half of the
// key, each bin a small B-tree. The bin function is monotone in the high
// half, so the bins in order, each walked in order, give every key in order.
// It is how the Set keeps its O(log n) bounds while most operations touch a
// single small node: a lookup is one bin computation, at most two bitmap
// steps and a descent of a tree that usually has one level.
//
// Bins are allocated 64 at a time (a chunk per bitmap word) on first use, so
// a set with few extents, and its clones, stay small.
//
// Invariants (checked by check):
//
//	bit b of used is set iff bin b is non-empty; summary bit w iff used[w] != 0
//	every key in bin b has bin(key.hi) == b
//	length == Σ bin lengths
type index struct {
	chunks  [64]*[64]tree // bin b is chunks[b>>6][b&63]; a chunk is nil until first used
	used    [64]uint64    // non-empty bins; set on first insert, cleared on last delete
	summary uint64        // non-zero words of used
	length  int           // number of keys; +insert, -delete
	pool    pool          // nodes shared by all bins

	// The bin function, fixed at init: size classes, or address buckets of
	// 2^shift bytes from base, clamped to the first and last bin.
	bySize bool
	base   uint64
	shift  uint
	nbins  int // addrBins or sizeBins; 0 before init
}

// init sets the bin function of an empty index.
func (ix *index) init(bySize bool, base uint64, shift uint) {
	n := addrBins
	if bySize {
		n = sizeBins
	}
	*ix = index{bySize: bySize, base: base, shift: shift, nbins: n}
}

func (ix *index) bin(hi uint64) int {
	if ix.bySize {
		return sizeClass(hi)
	}
	if hi < ix.base {
		return 0
	}
	return int(min((hi-ix.base)>>ix.shift, uint64(ix.nbins-1)))
}

// get returns bin b, or nil when its chunk was never allocated.
func (ix *index) get(b int) *tree {
	if c := ix.chunks[b>>6]; c != nil {
		return &c[b&63]
	}
	return nil
}

// make returns bin b, allocating its chunk on first use.
func (ix *index) make(b int) *tree {
	c := ix.chunks[b>>6]
	if c == nil {
		c = new([64]tree)
		ix.chunks[b>>6] = c
	}
	return &c[b&63]
}

func (ix *index) mark(b int) {
	ix.used[b>>6] |= 1 << (b & 63)
	ix.summary |= 1 << (b >> 6)
}

func (ix *index) unmark(b int) {
	w := b >> 6
	ix.used[w] &^= 1 << (b & 63)
	if ix.used[w] == 0 {
		ix.summary &^= 1 << w
	}
}

// next returns the first non-empty bin >= b, or -1.
func (ix *index) next(b int) int {
	if b >= ix.nbins {
		return -1
	}
	w := b >> 6
	if m := ix.used[w] >> (b & 63); m != 0 {
		return b + bits.TrailingZeros64(m)
	}
	s := ix.summary >> (w + 1) // a shift of 64 gives 0
	if s == 0 {
		return -1
	}
	w += 1 + bits.TrailingZeros64(s)
	return w<<6 + bits.TrailingZeros64(ix.used[w])
}

// prev returns the last non-empty bin <= b, or -1.
func (ix *index) prev(b int) int {
	if b < 0 {
		return -1
	}
	w := b >> 6
	if m := ix.used[w] << (63 - b&63); m != 0 {
		return b - bits.LeadingZeros64(m)
	}
	s := ix.summary & (1<<w - 1)
	if s == 0 {
		return -1
	}
	w = 63 - bits.LeadingZeros64(s)
	return w<<6 + 63 - bits.LeadingZeros64(ix.used[w])
}

func (ix *index) insert(k key) {
	b := ix.bin(k.hi)
	t := ix.make(b)
	if t.length == 0 {
		ix.mark(b)
	}
	t.insert(k, &ix.pool)
	ix.length++
}

func (ix *index) delete(k key) bool {
	b := ix.bin(k.hi)
	t := ix.get(b)
	if t == nil || !t.delete(k, &ix.pool) {
		return false
	}
	if t.length == 0 {
		ix.unmark(b)
	}
	ix.length--
	return true
}

// replace changes the key in slot s from old to k, where k takes old's place
// in the order. The rewrite is in place when both fall in the same bin.
func (ix *index) replace(s slot, old, k key) {
	if ix.bin(old.hi) == ix.bin(k.hi) {
		s.set(k)
		return
	}
	ix.delete(old)
	ix.insert(k)
}

// rekey replaces old, which must be present, by k: in place when both fall
// in the same bin and k keeps old's place in its leaf, else by a delete and
// an insert.
func (ix *index) rekey(old, k key) {
	if b := ix.bin(old.hi); b == ix.bin(k.hi) && ix.get(b).rekeyInLeaf(old, k) {
		return
	}
	ix.delete(old)
	ix.insert(k)
}

// ceilSlot returns the slot of the smallest key >= k, and the key.
func (ix *index) ceilSlot(k key) (slot, key) {
	if ix.length == 0 {
		return slot{}, key{}
	}
	b := ix.bin(k.hi)
	if t := ix.get(b); t != nil {
		if s := t.ceilSlot(k); s.ok() {
			return s, s.get()
		}
	}
	if b = ix.next(b + 1); b < 0 {
		return slot{}, key{}
	}
	s := ix.get(b).minSlot()
	return s, s.get()
}

// findSlot returns the slot of k, which must be present.
func (ix *index) findSlot(k key) slot {
	return ix.get(ix.bin(k.hi)).findSlot(k)
}

// deleteAt removes k, found at slot s.
func (ix *index) deleteAt(s slot, k key) {
	b := ix.bin(k.hi)
	t := ix.get(b)
	t.deleteAt(s, k, &ix.pool)
	if t.length == 0 {
		ix.unmark(b)
	}
	ix.length--
}

// shrinkAt replaces old, found at slot s, by a smaller key k: in place when
// k falls in the same bin and still follows the key before s in its leaf,
// else by a delete and an insert. (k < old, so the key after s is no
// constraint.)
func (ix *index) shrinkAt(s slot, old, k key) {
	if b := ix.bin(old.hi); b == ix.bin(k.hi) && s.x.leaf() {
		if s.i > 0 && s.x.key(s.i-1).less(k) || s.i == 0 && s.x == ix.get(b).root {
			s.set(k)
			return
		}
	}
	ix.rekey(old, k)
}

// insertBetween inserts k, whose neighbours in the order are the keys in
// slots pred and succ (as seek returned them, either may be zero). When one
// of them is in a leaf with room in k's own bin, k goes right next to it
// without a descent: the leaf keys on either side of that spot, or the
// separator above the leaf, are exactly pred and succ.
func (ix *index) insertBetween(pred, succ slot, k key) {
	b := ix.bin(k.hi)
	var s slot
	switch {
	case succ.ok() && succ.x.leaf() && succ.x.n < maxKeys && ix.bin(succ.get().hi) == b:
		s = succ
	case pred.ok() && pred.x.leaf() && pred.x.n < maxKeys && ix.bin(pred.get().hi) == b:
		s = slot{pred.x, pred.i + 1}
	default:
		ix.insert(k)
		return
	}
	s.x.insertAt(s.i, k, nil)
	ix.get(b).length++
	ix.length++
}

// ceil returns the smallest key >= k.
func (ix *index) ceil(k key) (key, bool) {
	if ix.length == 0 {
		return key{}, false
	}
	b := ix.bin(k.hi)
	if t := ix.get(b); t != nil {
		if got, ok := t.ceil(k); ok {
			return got, true
		}
	}
	if b = ix.next(b + 1); b < 0 {
		return key{}, false
	}
	return ix.get(b).min()
}

// lowerSlot returns the slot of the largest key < k.
func (ix *index) lowerSlot(k key) slot {
	if ix.length == 0 {
		return slot{}
	}
	b := ix.bin(k.hi)
	if t := ix.get(b); t != nil {
		if s := t.lowerSlot(k); s.ok() {
			return s
		}
	}
	if b = ix.prev(b - 1); b < 0 {
		return slot{}
	}
	return ix.get(b).maxSlot()
}

// seek returns the slots of the largest key < k and the smallest key >= k.
func (ix *index) seek(k key) (pred, succ slot) {
	if ix.length == 0 {
		return slot{}, slot{}
	}
	b := ix.bin(k.hi)
	if t := ix.get(b); t != nil {
		pred, succ = t.seek(k)
	}
	if !pred.ok() {
		if p := ix.prev(b - 1); p >= 0 {
			pred = ix.get(p).maxSlot()
		}
	}
	if !succ.ok() {
		if n := ix.next(b + 1); n >= 0 {
			succ = ix.get(n).minSlot()
		}
	}
	return pred, succ
}

func (ix *index) min() (key, bool) {
	if b := ix.next(0); b >= 0 {
		return ix.get(b).min()
	}
	return key{}, false
}

func (ix *index) max() (key, bool) {
	if b := ix.prev(ix.nbins - 1); b >= 0 {
		return ix.get(b).max()
	}
	return key{}, false
}

func (ix *index) ascend(f func(key) bool) {
	for b := ix.next(0); b >= 0; b = ix.next(b + 1) {
		if !ix.get(b).root.ascend(f) {
			return
		}
	}
}

func (ix *index) descend(f func(key) bool) {
	for b := ix.prev(ix.nbins - 1); b >= 0; b = ix.prev(b - 1) {
		if !ix.get(b).root.descend(f) {
			return
		}
	}
}

// clear empties the index, keeping its nodes for reuse.
func (ix *index) clear() {
	for b := ix.next(0); b >= 0; b = ix.next(b + 1) {
		ix.get(b).clear(&ix.pool)
	}
	ix.used, ix.summary, ix.length = [64]uint64{}, 0, 0
}

// clone returns a deep copy holding only the non-empty bins; its pool starts
// empty.
func (ix *index) clone() index {
	c := index{used: ix.used, summary: ix.summary, length: ix.length,
		bySize: ix.bySize, base: ix.base, shift: ix.shift, nbins: ix.nbins}
	for b := ix.next(0); b >= 0; b = ix.next(b + 1) {
		*c.make(b) = ix.get(b).clone()
	}
	return c
}

func (ix *index) check() error {
	n := 0
	for b := 0; b < len(ix.used)*64; b++ {
		used := ix.used[b>>6]>>(b&63)&1 == 1
		t := ix.get(b)
		length := 0
		if t != nil {
			if err := t.check(); err != nil {
				return fmt.Errorf("bin %d: %w", b, err)
			}
			length = t.length
		}
		if used != (length > 0) || used && b >= ix.nbins {
			return fmt.Errorf("%w: bin %d of %d has %d keys, used bit %v", errTree, b, ix.nbins, length, used)
		}
		var bad error
		if length > 0 {
			t.root.ascend(func(k key) bool {
				if got := ix.bin(k.hi); got != b {
					bad = fmt.Errorf("%w: key %v in bin %d, belongs in %d", errTree, k, b, got)
				}
				return bad == nil
			})
		}
		if bad != nil {
			return bad
		}
		n += length
	}
	for w, u := range ix.used {
		if (u != 0) != (ix.summary>>w&1 == 1) {
			return fmt.Errorf("%w: summary bit %d disagrees with word %#x", errTree, w, u)
		}
	}
	if n != ix.length {
		return fmt.Errorf("%w: bins hold %d keys, length %d", errTree, n, ix.length)
	}
	return nil
}
