// Binned: a Set split into bins by Hi, for best-fit queries.
// See package ordset for the overview.

package ordset

// Binned is an ordered set of Keys, like Set, split into bins by Hi (binOf),
// each bin a sorted slice, under a two-level bitmap of non-empty bins.
// LowerBound of k is the lower bound within k's bin or else the first key of
// the next non-empty bin: one bin computation, at most a few bitmap words,
// and a binary search of one contiguous slice that holds the keys of one Hi
// (exact bins) or a narrow range of Hi. Bins are allocated 64 at a time on
// first use and keep their capacity when they empty, so the steady state
// allocates nothing. The zero value is an empty set.
//
// A bin is a flat slice, not a Set: a bin op then touches one slice header
// and one array, which matters more than the search (bins are cold in
// cache). In the caching allocator's benchmark (10,000 live blocks, ~1,400
// free) most bins hold a few keys and the largest, the 512-byte remnants,
// ~300. A flat bin is kept in decreasing order, so taking its smallest key,
// what best fit does whenever the request's own bin has nothing large
// enough, shifts nothing. The caching allocator's best fit hands out the
// lowest addresses, so those are the ones that come back: two inserts in
// three there are a new smallest key, appended without a search (a gallop
// back from the end for the others measured slower than the binary
// search), and Delete tries the last key first; a shift of up to 8 keys is
// a loop, not a memmove call. A bin that grows past maxFlat keys moves into a
// Set, so an insert or delete shifts at most one Set chunk instead of the
// whole bin; it moves back once it holds maxFlat/2 or fewer.
//
// Invariants (Check verifies them):
//
//	bit b of used is set iff bin b is non-empty; summary bit w iff used[w] != 0
//	every key in bin b has s.binOf(key.Hi) == b
//	bin b is big iff big[b] != nil; then its flat slice is empty and big[b]
//	  holds more than maxFlat/2 keys; else its flat slice is strictly
//	  decreasing and holds at most maxFlat keys
//	n == Σ bin lengths
type Binned struct {
	occ   bitmap               // non-empty bins; first, so s is its address
	bins  [numWords]*[64][]Key // bin b's flat keys are bins[b>>6][b&63]; nil until first used
	big   [numWords]*[64]*Set  // big bins; nil until a bin of the word grows big
	spare []*Set               // emptied big-bin Sets, reused
	n     int
	lin   linear // the bin function, if not logBin
}

// maxFlat bounds a flat bin, and so the shift of one insert or delete, at
// 12 KiB (a few hundred cycles of memmove), for workloads that free many
// blocks of one size. It is well above the benchmark's largest bin: with 64,
// the bins of 512 B-6 KiB became Sets and the pair took ~6% more
// instructions and 20% more mispredicted branches (callgrind), the Set's
// two-level search being costlier than a flat one.
const maxFlat = 512

// minFlatCap is a flat bin's first capacity: most bins hold a few keys, and
// starting at 8 saves the 1-2-4 growth steps of a new bin.
const minFlatCap = 8

// BinPos is a position returned by Binned.Find, valid until the set changes.
type BinPos struct {
	bin, idx int // idx < 0: pos in the bin's Set
	pos      Pos
}

// bigSet returns bin b's Set, or nil if b is flat.
func (s *Binned) bigSet(b int) *Set {
	if c := s.big[b>>6]; c != nil {
		return c[b&63]
	}
	return nil
}

// Len is the number of keys.
func (s *Binned) Len() int { return s.n }

// bin returns bin b's flat keys; b's chunk must exist (b is non-empty, or
// was once).
func (s *Binned) bin(b int) *[]Key { return &s.bins[b>>6][b&63] }

func (s *Binned) nonEmpty(b int) bool { return s.occ.has(b) }

// next returns the first non-empty bin ≥ b, or -1.
func (s *Binned) next(b int) int { return s.occ.next(b) }

// prev returns the last non-empty bin ≤ b, or -1.
func (s *Binned) prev(b int) int { return s.occ.prev(b) }

// unmarkIfEmpty clears bin b's bits once its set is empty.
func (s *Binned) unmarkIfEmpty(b int) {
	if len(*s.bin(b)) == 0 {
		s.occ.unmark(b)
	}
}

// firstBelow returns the index of the first key of a decreasing bin that
// is less than k: bin[:i] are the keys ≥ k, so bin[i-1] is the smallest of
// them.
func firstBelow(bin []Key, k Key) int {
	lo, hi := 0, len(bin)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bin[m].Less(k) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// Insert adds k; it reports false (and changes nothing) if an equal key is
// already present.
func (s *Binned) Insert(k Key) bool {
	b := s.binOf(k.Hi)
	c := s.bins[b>>6]
	if c == nil {
		c = new([64][]Key)
		s.bins[b>>6] = c
	}
	bp := &c[b&63]
	bin := *bp
	if len(bin) == 0 && s.nonEmpty(b) {
		if !s.bigSet(b).Insert(k) {
			return false
		}
		s.n++
		return true
	}
	if n := len(bin); n == 0 || k.Less(bin[n-1]) {
		// The new smallest key of its bin: the common case of the caching
		// allocator, whose best fit hands out the lowest addresses, so they
		// are the ones that come back.
		if n == maxFlat {
			s.toBig(b, k)
			return true
		}
		if cap(bin) == 0 {
			*bp = make([]Key, 0, minFlatCap) // then append doubles up to maxFlat
		}
		*bp = append(*bp, k) // in place: only the length is stored
		s.occ.mark(b)
		s.n++
		return true
	}
	j := firstBelow(bin, k)
	if j > 0 && bin[j-1].same(k) {
		return false
	}
	if len(bin) == maxFlat {
		s.toBig(b, k)
		return true
	}
	*bp = append(*bp, Key{})
	bin = *bp
	if len(bin)-1-j <= 8 {
		for i := len(bin) - 1; i > j; i-- { // a short shift: no memmove call
			bin[i] = bin[i-1]
		}
	} else {
		copy(bin[j+1:], bin[j:])
	}
	bin[j] = k
	s.occ.mark(b)
	s.n++
	return true
}

// Delete removes the key equal to k and reports whether it was present.
func (s *Binned) Delete(k Key) bool {
	b := s.binOf(k.Hi)
	if !s.nonEmpty(b) {
		return false
	}
	bin := *s.bin(b)
	if len(bin) == 0 {
		set := s.bigSet(b)
		if !set.Delete(k) {
			return false
		}
		s.n--
		s.shrink(b, set)
		return true
	}
	j := len(bin) // the smallest key, best fit's, is the common case
	if !bin[j-1].same(k) {
		j = firstBelow(bin, k)
		if j == 0 || !bin[j-1].same(k) {
			return false
		}
	}
	s.DeleteAt(BinPos{bin: b, idx: j - 1})
	return true
}

// Find returns the position and value of the smallest key ≥ k, so a caller
// can inspect it and then DeleteAt without a second search.
func (s *Binned) Find(k Key) (BinPos, Key, bool) {
	b := s.binOf(k.Hi)
	if s.nonEmpty(b) {
		bin := *s.bin(b)
		if len(bin) == 0 {
			if p, x, ok := s.bigSet(b).Find(k); ok {
				return BinPos{bin: b, idx: -1, pos: p}, x, true
			}
		} else {
			j := len(bin) // every key of an exact log bin has Hi == k.Hi, so all are ≥ (k.Hi, 0)
			if b >= exactBins || k.Lo != 0 || s.lin.on {
				j = firstBelow(bin, k)
			}
			if j > 0 {
				return BinPos{bin: b, idx: j - 1}, bin[j-1], true
			}
		}
	}
	if b = s.next(b + 1); b < 0 {
		return BinPos{}, Key{}, false
	}
	bin := *s.bin(b)
	if len(bin) == 0 {
		return BinPos{bin: b, idx: -1}, s.bigSet(b).chunks[0][0], true
	}
	return BinPos{bin: b, idx: len(bin) - 1}, bin[len(bin)-1], true
}

// DeleteAt removes the key at p (from Find, with no change in between).
func (s *Binned) DeleteAt(p BinPos) {
	if p.idx < 0 {
		set := s.bigSet(p.bin)
		set.DeleteAt(p.pos)
		s.n--
		s.shrink(p.bin, set)
		return
	}
	bp := s.bin(p.bin)
	bin := *bp
	if last := len(bin) - 1; last-p.idx <= 8 {
		for i := p.idx; i < last; i++ { // a short shift (none for best fit's key): no memmove call
			bin[i] = bin[i+1]
		}
	} else {
		copy(bin[p.idx:], bin[p.idx+1:])
	}
	*bp = (*bp)[:len(bin)-1] // in place: only the length is stored
	s.n--
	s.unmarkIfEmpty(p.bin)
}

// LowerBound returns the smallest key ≥ k.
func (s *Binned) LowerBound(k Key) (Key, bool) {
	_, x, ok := s.Find(k)
	return x, ok
}

// Has reports whether an equal key is present.
func (s *Binned) Has(k Key) bool {
	_, x, ok := s.Find(k)
	return ok && x.same(k)
}

// Max returns the largest key.
func (s *Binned) Max() (Key, bool) {
	b := s.prev(s.nbins() - 1)
	if b < 0 {
		return Key{}, false
	}
	if bin := *s.bin(b); len(bin) > 0 {
		return bin[0], true
	}
	return s.bigSet(b).Max()
}

// Ascend calls f for every key ≥ from in increasing order until f returns
// false. f must not modify the set.
func (s *Binned) Ascend(from Key, f func(Key) bool) {
	b := s.binOf(from.Hi)
	if s.nonEmpty(b) {
		if bin := *s.bin(b); len(bin) > 0 {
			for j := firstBelow(bin, from) - 1; j >= 0; j-- {
				if !f(bin[j]) {
					return
				}
			}
		} else {
			stopped := false
			s.bigSet(b).Ascend(from, func(k Key) bool {
				stopped = !f(k)
				return !stopped
			})
			if stopped {
				return
			}
		}
	}
	for b = s.next(b + 1); b >= 0; b = s.next(b + 1) {
		if !s.ascendBin(b, f) {
			return
		}
	}
}

// All calls f for every key in increasing order until f returns false.
func (s *Binned) All(f func(Key) bool) {
	for b := s.next(0); b >= 0; b = s.next(b + 1) {
		if !s.ascendBin(b, f) {
			return
		}
	}
}

// Descend calls f for every key ≤ from in decreasing order until f returns
// false. f must not modify the set.
func (s *Binned) Descend(from Key, f func(Key) bool) {
	b := s.binOf(from.Hi)
	if s.nonEmpty(b) {
		if bin := *s.bin(b); len(bin) > 0 {
			j := firstBelow(bin, from) // first < from
			if j > 0 && bin[j-1].same(from) {
				j--
			}
			for _, k := range bin[j:] {
				if !f(k) {
					return
				}
			}
		} else {
			stopped := false
			s.bigSet(b).Descend(from, func(k Key) bool {
				stopped = !f(k)
				return !stopped
			})
			if stopped {
				return
			}
		}
	}
	for b = s.prev(b - 1); b >= 0; b = s.prev(b - 1) {
		if bin := *s.bin(b); len(bin) > 0 {
			for _, k := range bin {
				if !f(k) {
					return
				}
			}
			continue
		}
		set := s.bigSet(b)
		for i := len(set.chunks) - 1; i >= 0; i-- {
			c := set.chunks[i]
			for j := len(c) - 1; j >= 0; j-- {
				if !f(c[j]) {
					return
				}
			}
		}
	}
}

// Clone returns an independent copy.
func (s *Binned) Clone() Binned {
	c := Binned{occ: s.occ, n: s.n, lin: s.lin}
	for w, ch := range s.bins {
		if s.occ.used[w] == 0 {
			continue
		}
		nc := new([64][]Key)
		for i := range ch {
			if len(ch[i]) > 0 {
				nc[i] = append([]Key(nil), ch[i]...)
			}
		}
		c.bins[w] = nc
	}
	for w, ch := range s.big {
		if ch == nil {
			continue
		}
		nc := new([64]*Set)
		for i, set := range ch {
			if set != nil {
				x := set.Clone()
				nc[i] = &x
			}
		}
		c.big[w] = nc
	}
	return c
}

// Check verifies the invariants.
func (s *Binned) Check() error {
	if err := s.occ.check(); err != nil {
		return err
	}
	n := 0
	for b := range numWords * 64 {
		w := b >> 6
		if s.bins[w] == nil {
			if s.occ.used[w] != 0 || s.bigSet(b) != nil {
				return errorf("bin %d marked or big but not allocated", b)
			}
			continue
		}
		if b >= s.nbins() && s.nonEmpty(b) {
			return errorf("bin %d marked, the bin function has %d", b, s.nbins())
		}
		bin := *s.bin(b)
		if set := s.bigSet(b); set != nil {
			if len(bin) != 0 || set.Len() <= maxFlat/2 || !s.nonEmpty(b) {
				return errorf("big bin %d: %d flat keys, %d in its set, used bit %v", b, len(bin), set.Len(), s.nonEmpty(b))
			}
			if err := set.Check(); err != nil {
				return errorf("big bin %d: %v", b, err)
			}
			var bad error
			set.All(func(k Key) bool {
				if s.binOf(k.Hi) != b {
					bad = errorf("key %v in bin %d, belongs in %d", k, b, s.binOf(k.Hi))
				}
				return bad == nil
			})
			if bad != nil {
				return bad
			}
			n += set.Len()
			continue
		}
		if (len(bin) > 0) != s.nonEmpty(b) || len(bin) > maxFlat {
			return errorf("bin %d holds %d keys, used bit %v", b, len(bin), s.nonEmpty(b))
		}
		for j, k := range bin {
			if s.binOf(k.Hi) != b {
				return errorf("key %v in bin %d, belongs in %d", k, b, s.binOf(k.Hi))
			}
			if j > 0 && !k.Less(bin[j-1]) {
				return errorf("bin %d not sorted at %d", b, j)
			}
		}
		n += len(bin)
	}
	if n != s.n {
		return errorf("count %d, recount %d", s.n, n)
	}
	return nil
}

// ascendBin calls f for the keys of bin b in increasing order and reports
// false if f stopped the walk.
func (s *Binned) ascendBin(b int, f func(Key) bool) bool {
	if bin := *s.bin(b); len(bin) > 0 {
		for j := len(bin) - 1; j >= 0; j-- {
			if !f(bin[j]) {
				return false
			}
		}
		return true
	}
	for _, c := range s.bigSet(b).chunks {
		for _, k := range c {
			if !f(k) {
				return false
			}
		}
	}
	return true
}

// toBig moves the full flat bin b and the new key k into a Set.
func (s *Binned) toBig(b int, k Key) {
	var set *Set
	if n := len(s.spare); n > 0 {
		set = s.spare[n-1]
		s.spare = s.spare[:n-1]
	} else {
		set = new(Set)
	}
	bp := s.bin(b)
	for j := len(*bp) - 1; j >= 0; j-- {
		set.Insert((*bp)[j])
	}
	set.Insert(k)
	*bp = (*bp)[:0]
	if s.big[b>>6] == nil {
		s.big[b>>6] = new([64]*Set)
	}
	s.big[b>>6][b&63] = set
	s.n++
}

// shrink moves big bin b back into its flat slice once its set, which just
// lost a key, holds maxFlat/2 or fewer, and clears b's bits if it is empty.
func (s *Binned) shrink(b int, set *Set) {
	if set.Len() > maxFlat/2 {
		return
	}
	bp := s.bin(b)
	for i := len(set.chunks) - 1; i >= 0; i-- {
		c := set.chunks[i]
		for j := len(c) - 1; j >= 0; j-- {
			*bp = append(*bp, c[j])
		}
	}
	for set.n > 0 {
		set.deleteAt(0, 0)
	}
	s.big[b>>6][b&63] = nil
	s.spare = append(s.spare, set)
	s.unmarkIfEmpty(b)
}
