// Classed: the caching allocator's free set, a bin per size class.
// See package ordset for the overview.

package ordset

// Classed is an ordered set of Keys, like Set, for keys whose Hi is a size
// class (the caching allocator's size/512): every class below numBins (sizes
// below 2.8 MiB, nearly every free block of the allocator) has a flat bin of
// its own that holds only the (Lo, ID) of its keys, 16 bytes, in decreasing
// order of Lo, under the two-level bitmap of Binned; the other keys, and
// every key of a class whose bin once grew past classFlat, are in a Binned
// (rest). Best fit, Find(size class, 0), is then a bitmap step and the last
// entry of one bin, and taking it shortens the bin by one: no search, no
// shift, no bin function, no 24-byte keys to move. An insert of a new lowest
// Lo (two in three in the caching benchmark) appends; the others search the
// bin and shift the entries after it, 16 bytes each.
//
// A class whose flat bin would grow past classFlat moves into rest for good
// (spilled): its bitmap bit then stays set and its flat bin stays empty, so
// every operation on it goes to rest, which bounds its shifts (Binned's big
// bins). The zero value is an empty set.
//
// Invariants (Check verifies them):
//
//	bit c of occ is set iff class c's flat bin is non-empty or c is spilled
//	a flat bin is strictly decreasing in Lo and holds at most classFlat entries
//	a spilled class has an empty flat bin
//	rest holds no key of a class below numBins that is not spilled
//	n == Σ flat bin lengths
type Classed struct {
	occ   bitmap                  // classes with a flat bin or spilled
	bins  [numWords]*[64]classBin // class c's flat bin is bins[c>>6][c&63]; nil until first used
	rest  *Binned                 // classes ≥ numBins and spilled classes; nil until needed
	n     int                     // keys in flat bins
	spill int                     // number of spilled classes
}

// classFlat bounds a flat bin, as maxFlat bounds Binned's; a variable so
// that the tests can spill bins with few keys.
var classFlat = maxFlat

// classKey is a key of a flat bin, whose Hi is the bin's class.
type classKey struct {
	lo uint64
	id int32
}

// classBin is a flat bin's header: its keys, and a copy of the lowest Lo
// (keys[len(keys)-1].lo while keys is not empty) beside them, so that an
// insert of a new lowest Lo, the common insert, decides from the header
// alone. Without the copy it loaded the header and then the last entry, a
// second cache miss that waited for the first; the entry's line is then
// only written (the append), and a write does not hold up what follows.
// 32 bytes, two headers a cache line (a 24-byte slice header straddled two
// lines one time in four).
type classBin struct {
	keys []classKey
	low  uint64
}

// ClassPos is a position returned by Classed.Find, valid until the set
// changes: an entry of a flat bin, or (class < 0) a key of rest.
type ClassPos struct{ class, idx int32 }

// Len is the number of keys.
func (s *Classed) Len() int {
	if s.rest != nil {
		return s.n + s.rest.Len()
	}
	return s.n
}

// firstBelowLo returns the index of the first entry of a decreasing bin
// whose Lo is less than lo: bin[:i] have Lo ≥ lo.
func firstBelowLo(bin []classKey, lo uint64) int {
	// The answer is in [base, base+n]; each step halves n without a
	// branch on the data: the compare becomes a mask (b2i compiles to a
	// SETcc), since the compiler keeps "if ... { base += half }" a branch,
	// and that branch mispredicted half the time (callgrind: 2.5 of the
	// 7.4 mispredictions of a caching alloc+free pair).
	n := len(bin)
	if n == 0 {
		return 0
	}
	base := 0
	for n > 1 {
		half := n >> 1
		base += half & -b2i(bin[base+half].lo >= lo)
		n -= half
	}
	return base + b2i(bin[base].lo >= lo)
}

// b2i is 1 for true, 0 for false, without a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *Classed) restSet() *Binned {
	if s.rest == nil {
		s.rest = new(Binned)
	}
	return s.rest
}

// Insert adds k; it reports false (and changes nothing) if an equal key is
// already present.
func (s *Classed) Insert(k Key) bool {
	c := k.Hi
	if c >= numBins {
		return s.restSet().Insert(k)
	}
	ch := s.bins[c>>6]
	if ch == nil {
		ch = new([64]classBin)
		s.bins[c>>6] = ch
	}
	bp := &ch[c&63]
	bin := bp.keys
	n := len(bin)
	if n == 0 {
		if s.occ.has(int(c)) { // spilled
			return s.rest.Insert(k)
		}
		if cap(bin) == 0 {
			bp.keys = make([]classKey, 0, minFlatCap)
		}
		bp.keys = append(bp.keys, classKey{k.Lo, k.ID})
		bp.low = k.Lo
		s.occ.mark(int(c))
		s.n++
		return true
	}
	if k.Lo < bp.low { // the new lowest: the common case
		if n == classFlat {
			s.spillBin(int(c), k)
			return true
		}
		bp.keys = append(bin, classKey{k.Lo, k.ID}) // in place: only the length is stored
		bp.low = k.Lo
		s.n++
		return true
	}
	j := firstBelowLo(bin, k.Lo)
	if j > 0 && bin[j-1].lo == k.Lo {
		return false
	}
	if n == classFlat {
		s.spillBin(int(c), k)
		return true
	}
	bin = append(bin, classKey{})
	if n-j <= 8 {
		for i := n; i > j; i-- { // a short shift: no memmove call
			bin[i] = bin[i-1]
		}
	} else {
		copy(bin[j+1:], bin[j:])
	}
	bin[j] = classKey{k.Lo, k.ID} // j < n: not the lowest, so low stays
	bp.keys = bin
	s.n++
	return true
}

// spillBin moves the full flat bin c and the new key k into rest for good.
func (s *Classed) spillBin(c int, k Key) {
	r := s.restSet()
	bp := &s.bins[c>>6][c&63]
	for _, e := range bp.keys {
		r.Insert(Key{Hi: uint64(c), Lo: e.lo, ID: e.id})
	}
	r.Insert(k)
	s.n -= len(bp.keys)
	*bp = classBin{}
	s.spill++
}

// Delete removes the key equal to k and reports whether it was present.
func (s *Classed) Delete(k Key) bool {
	c := k.Hi
	if c >= numBins {
		return s.rest != nil && s.rest.Delete(k)
	}
	if !s.occ.has(int(c)) {
		return false
	}
	bp := &s.bins[c>>6][c&63]
	bin := bp.keys
	if len(bin) == 0 { // spilled
		return s.rest.Delete(k)
	}
	j := len(bin) // the lowest Lo, best fit's, is the common case
	if bp.low != k.Lo {
		j = firstBelowLo(bin, k.Lo)
		if j == 0 || bin[j-1].lo != k.Lo {
			return false
		}
	}
	s.DeleteAt(ClassPos{int32(c), int32(j - 1)}, k)
	return true
}

// Find returns the position and value of the smallest key ≥ k, so a caller
// can inspect it and then DeleteAt without a second search.
func (s *Classed) Find(k Key) (ClassPos, Key, bool) {
	if c := k.Hi; c < numBins {
		b := int(c)
		if k.Lo == 0 && s.occ.has(b) { // best fit's query, and its class has keys
			if bin := s.bins[b>>6][b&63].keys; len(bin) > 0 {
				e := bin[len(bin)-1]
				return ClassPos{int32(b), int32(len(bin) - 1)}, Key{Hi: c, Lo: e.lo, ID: e.id}, true
			}
		}
		for b = s.occ.next(b); b >= 0; b = s.occ.next(b + 1) {
			bin := s.bins[b>>6][b&63].keys
			if len(bin) == 0 { // spilled: its keys are in rest
				from := Key{Hi: uint64(b)}
				if uint64(b) == c {
					from = k
				}
				if x, ok := s.rest.LowerBound(from); ok && x.Hi == uint64(b) {
					return ClassPos{-1, 0}, x, true
				}
				continue
			}
			j := len(bin) // every entry is ≥ (c, 0)
			if uint64(b) == c && k.Lo != 0 {
				if j = firstBelowLo(bin, k.Lo); j == 0 {
					continue
				}
			}
			e := bin[j-1]
			return ClassPos{int32(b), int32(j - 1)}, Key{Hi: uint64(b), Lo: e.lo, ID: e.id}, true
		}
		k = Key{Hi: numBins}
	}
	if s.rest == nil {
		return ClassPos{}, Key{}, false
	}
	x, ok := s.rest.LowerBound(k)
	return ClassPos{-1, 0}, x, ok
}

// TakeFirst removes and returns the smallest key ≥ k if its Hi is at most
// limit (best fit under the caching allocator's oversize rules); otherwise
// it changes nothing and reports false. Find and DeleteAt in one call, and
// for best fit's query, a bitmap step and the last entry of a flat bin.
func (s *Classed) TakeFirst(k Key, limit uint64) (Key, bool) {
	if k.Hi < numBins && k.Lo == 0 {
		if b := s.occ.next(int(k.Hi)); b >= 0 {
			bp := &s.bins[b>>6][b&63]
			if n := len(bp.keys); n > 0 { // else spilled: Find below
				if uint64(b) > limit {
					return Key{}, false
				}
				e := bp.keys[n-1]
				bp.keys = bp.keys[:n-1] // in place: only the length is stored
				s.n--
				if n == 1 {
					s.occ.unmark(b)
				} else {
					bp.low = bp.keys[n-2].lo
				}
				return Key{Hi: uint64(b), Lo: e.lo, ID: e.id}, true
			}
		}
	}
	p, x, ok := s.Find(k)
	if !ok || x.Hi > limit {
		return Key{}, false
	}
	s.DeleteAt(p, x)
	return x, true
}

// DeleteAt removes the key k at p (from Find, with no change in between).
func (s *Classed) DeleteAt(p ClassPos, k Key) {
	if p.class < 0 {
		s.rest.Delete(k)
		return
	}
	c := uint(p.class)
	bp := &s.bins[c>>6][c&63]
	bin := bp.keys
	last := len(bin) - 1
	if i := int(p.idx); i != last {
		if last-i <= 8 {
			for ; i < last; i++ { // a short shift: no memmove call
				bin[i] = bin[i+1]
			}
		} else {
			copy(bin[i:], bin[i+1:])
		}
	}
	bp.keys = bin[:last] // in place: only the length is stored
	s.n--
	if last == 0 {
		s.occ.unmark(int(c))
	} else {
		bp.low = bin[last-1].lo // after the shift, the lowest that is left
	}
}

// LowerBound returns the smallest key ≥ k.
func (s *Classed) LowerBound(k Key) (Key, bool) {
	_, x, ok := s.Find(k)
	return x, ok
}

// Has reports whether an equal key is present.
func (s *Classed) Has(k Key) bool {
	x, ok := s.LowerBound(k)
	return ok && x.same(k)
}

// Max returns the largest key.
func (s *Classed) Max() (Key, bool) {
	var x Key
	ok := false
	s.Descend(Key{Hi: ^uint64(0), Lo: ^uint64(0)}, func(k Key) bool { x, ok = k, true; return false })
	return x, ok
}

// Ascend calls f for every key ≥ from in increasing order until f returns
// false. f must not modify the set.
func (s *Classed) Ascend(from Key, f func(Key) bool) {
	if c := from.Hi; c < numBins {
		for b := s.occ.next(int(c)); b >= 0; b = s.occ.next(b + 1) {
			bin := s.bins[b>>6][b&63].keys
			if len(bin) == 0 { // spilled
				start := Key{Hi: uint64(b)}
				if uint64(b) == c {
					start = from
				}
				if walkWhile(s.rest.Ascend, start, func(hi uint64) bool { return hi == uint64(b) }, f) {
					return
				}
				continue
			}
			j := len(bin) - 1
			if uint64(b) == c {
				j = firstBelowLo(bin, from.Lo) - 1
			}
			for ; j >= 0; j-- {
				if !f(Key{Hi: uint64(b), Lo: bin[j].lo, ID: bin[j].id}) {
					return
				}
			}
		}
		from = Key{Hi: numBins}
	}
	if s.rest != nil {
		s.rest.Ascend(from, f)
	}
}

// walkWhile calls f through walk (rest's Ascend or Descend) from from, for
// as long as the keys' Hi satisfy in, and reports whether f stopped it.
func walkWhile(walk func(Key, func(Key) bool), from Key, in func(uint64) bool, f func(Key) bool) bool {
	stopped := false
	walk(from, func(k Key) bool {
		if !in(k.Hi) {
			return false
		}
		stopped = !f(k)
		return !stopped
	})
	return stopped
}

// All calls f for every key in increasing order until f returns false.
func (s *Classed) All(f func(Key) bool) { s.Ascend(Key{}, f) }

// Descend calls f for every key ≤ from in decreasing order until f returns
// false. f must not modify the set.
func (s *Classed) Descend(from Key, f func(Key) bool) {
	b := int(min(from.Hi, numBins-1))
	if from.Hi >= numBins {
		if s.rest != nil && walkWhile(s.rest.Descend, from, func(hi uint64) bool { return hi >= numBins }, f) {
			return
		}
		from = Key{Hi: numBins - 1, Lo: ^uint64(0)}
	}
	for b = s.occ.prev(b); b >= 0; b = s.occ.prev(b - 1) {
		end := Key{Hi: uint64(b), Lo: ^uint64(0)}
		if uint64(b) == from.Hi {
			end = from
		}
		bin := s.bins[b>>6][b&63].keys
		if len(bin) == 0 { // spilled
			if walkWhile(s.rest.Descend, end, func(hi uint64) bool { return hi == uint64(b) }, f) {
				return
			}
			continue
		}
		j := 0
		if end.Lo != ^uint64(0) {
			j = firstBelowLo(bin, end.Lo) // bin[:j] ≥ end.Lo
			if j > 0 && bin[j-1].lo == end.Lo {
				j--
			}
		}
		for ; j < len(bin); j++ {
			if !f(Key{Hi: uint64(b), Lo: bin[j].lo, ID: bin[j].id}) {
				return
			}
		}
	}
}

// Clone returns an independent copy.
func (s *Classed) Clone() Classed {
	c := Classed{occ: s.occ, n: s.n, spill: s.spill}
	for w, ch := range s.bins {
		if ch == nil || s.occ.used[w] == 0 {
			continue
		}
		nc := new([64]classBin)
		for i := range ch {
			if len(ch[i].keys) > 0 {
				nc[i] = classBin{keys: append([]classKey(nil), ch[i].keys...), low: ch[i].low}
			}
		}
		c.bins[w] = nc
	}
	if s.rest != nil {
		r := s.rest.Clone()
		c.rest = &r
	}
	return c
}

// Check verifies the invariants.
func (s *Classed) Check() error {
	if err := s.occ.check(); err != nil {
		return err
	}
	n, spilled := 0, 0
	for c := range numWords * 64 {
		var bin []classKey
		if ch := s.bins[c>>6]; ch != nil {
			bin = ch[c&63].keys
			if len(bin) > 0 && ch[c&63].low != bin[len(bin)-1].lo {
				return errorf("class %d: low %#x, lowest key %#x", c, ch[c&63].low, bin[len(bin)-1].lo)
			}
		}
		if c >= numBins && (len(bin) > 0 || s.occ.has(c)) {
			return errorf("class %d past the flat bins is used", c)
		}
		if len(bin) > classFlat {
			return errorf("class %d holds %d keys", c, len(bin))
		}
		for j := 1; j < len(bin); j++ {
			if bin[j].lo >= bin[j-1].lo {
				return errorf("class %d not sorted at %d", c, j)
			}
		}
		if len(bin) == 0 && s.occ.has(c) {
			spilled++
		}
		n += len(bin)
	}
	if n != s.n || spilled != s.spill {
		return errorf("count %d, recount %d; spilled %d, recount %d", s.n, n, s.spill, spilled)
	}
	if s.rest == nil {
		return nil
	}
	if err := s.rest.Check(); err != nil {
		return err
	}
	var bad error
	s.rest.All(func(k Key) bool {
		if k.Hi < numBins && (!s.occ.has(int(k.Hi)) || s.bins[k.Hi>>6] == nil || len(s.bins[k.Hi>>6][k.Hi&63].keys) != 0) {
			bad = errorf("key %v in rest, its class is not spilled", k)
		}
		return bad == nil
	})
	return bad
}
