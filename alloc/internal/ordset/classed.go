// Classed: the caching allocator's free set, a bin per size class.
// See package ordset for the overview.

package ordset

import "math/bits"

// Classed is an ordered set of Keys, like Set, for keys whose Hi is a size
// class (the caching allocator's size/512): every class below numBins (sizes
// below 2.8 MiB, nearly every free block of the allocator) has a flat bin of
// its own that holds only the (Lo, ID) of its keys, under the two-level
// bitmap of Binned; the other keys, and every key of a class whose bin once
// grew past classFlat, are in a Binned (rest). Best fit, Find(size class, 0),
// is then a bitmap step and the lowest key of one bin, and taking it
// shortens the bin by one: no search, no bin function, no 24-byte keys to
// move.
//
// A flat bin is in two parts. Its lowest key, the one best fit takes and
// the one an insert of a new lowest Lo compares with, is in the bin's top,
// 16 bytes with the bin's length, four to a cache line; its other keys are
// in more, 16 bytes each, in decreasing order of Lo, so the next lowest is
// at the end. Best fit's take, an insert into an empty bin or of a new
// lowest Lo (between them nearly every operation of the caching benchmark,
// where half the takes empty a one-key bin) then decide and return from the
// top alone; the write to more that a take from a longer bin or an insert
// of a new lowest makes waits for no other load, so its cache misses
// overlap the caller's. Before, a bin was one slice, and every operation
// loaded its header and then, from the pointer in it, its last entry: two
// cache misses, the second waiting for the first. Other inserts search more
// and shift the entries after the place, as before.
//
// A class whose flat bin would grow past classFlat moves into rest for good
// (spilled): its bitmap bit then stays set and its flat bin stays empty, so
// every operation on it goes to rest, which bounds its shifts (Binned's big
// bins). The zero value is an empty set.
//
// A bin whose more reaches classBucket keys keeps its lowest few there
// (its front) and moves the others into buckets by address
// (classbuckets.go), so that an insert or delete above the front shifts a
// bucket of a few keys, not the bin; takes and new lowest keys still work
// on the top and the front alone.
//
// Invariants (Check verifies them):
//
//	bit c of occ is set iff class c's flat bin is non-empty or c is spilled
//	a flat bin holds at most classFlat keys: top.n of them, top's one,
//	  more's and its buckets' (if any) top.n − 1, all of Lo above top's;
//	  more strictly decreasing
//	a bin with buckets has a non-empty more and non-empty buckets, every
//	  key of the buckets above every key of more
//	an empty flat bin (top.n == 0) has an empty more and no buckets
//	a spilled class has an empty flat bin
//	rest holds no key of a class below numBins that is not spilled
//	n == Σ top.n
type Classed struct {
	occ   bitmap                // classes with a flat bin or spilled
	bins  [numWords]*classChunk // class c's flat bin is in bins[c>>6], at c&63; nil until first used
	rest  *Binned               // classes ≥ numBins and spilled classes; nil until needed
	n     int                   // keys in flat bins
	spill int                   // number of spilled classes
}

// classFlat bounds a flat bin, as maxFlat bounds Binned's; a variable so
// that the tests can spill bins with few keys.
var classFlat = maxFlat

// classKey is a key of a flat bin, whose Hi is the bin's class.
type classKey struct {
	lo uint64
	id int32
}

// classTop is a flat bin's lowest key and its number of keys (0: empty).
type classTop struct {
	lo uint64
	id int32
	n  int32
}

// classChunk holds the flat bins of 64 classes: their tops together, and
// apart, their other keys. The caching allocator with many streams has
// mostly bins of one key (a stream's free set holds little more than the
// rest of its segment), so more is made when a bin of the chunk first gets a
// second key: a chunk is then 1 KiB, not 2.5.
type classChunk struct {
	top  [64]classTop
	more *[64][]classKey // nil until a bin of the chunk has had two keys
	// big holds the buckets of the bins that have them (classbuckets.go):
	// bin i's keys besides its top are then more[i], the lowest few (its
	// front, never empty), and big[i], every key above the front. nil
	// until a bin of the chunk first has buckets.
	big *[64]*bucketBin
}

// bucketed returns bin i's buckets, nil if it has none.
func (ch *classChunk) bucketed(i int) *bucketBin {
	if ch.big == nil {
		return nil
	}
	return ch.big[i]
}

// frontKeep is the number of keys a front keeps when spillFront moves the
// rest into the buckets, and the number refill brings back.
const frontKeep = 8

// spillFront moves the upper keys of bin i's more, which has reached
// classBucket keys, into its buckets (made if it has none), keeping the
// lowest frontKeep (or, for the tests' small classBucket, fewer).
//
//go:noinline
func (ch *classChunk) spillFront(i int) {
	m := ch.more[i]
	keep := min(frontKeep, max(1, len(m)/4))
	up := m[:len(m)-keep] // every key above the kept ones, decreasing
	if ch.big == nil {
		ch.big = new([64]*bucketBin)
	}
	if bb := ch.big[i]; bb == nil {
		bb = new(bucketBin)
		bb.bucketize(up)
		ch.big[i] = bb
	} else {
		for _, e := range up { // each below every key of the buckets, and below the last
			bb.pushLowest(e)
		}
	}
	n := copy(m, m[len(m)-keep:])
	ch.more[i] = m[:n]
}

// refill moves the lowest keys of bin i's buckets into its empty more,
// and drops the buckets once they are empty.
//
//go:noinline
func (ch *classChunk) refill(i int) {
	bb := ch.big[i]
	n := min(frontKeep, int(bb.n))
	m := ch.more[i][:0]
	if cap(m) < n {
		m = make([]classKey, 0, minFlatCap)
	}
	m = m[:n]
	for j := n - 1; j >= 0; j-- {
		m[j] = bb.pop()
	}
	ch.more[i] = m
	if bb.n == 0 {
		ch.big[i] = nil
	}
}

// others returns bin i's keys besides its top.
func (ch *classChunk) others(i int) []classKey {
	if ch.more == nil {
		return nil
	}
	return ch.more[i]
}

// othersSlot returns where bin i's keys besides its top are kept, making
// the chunk's more if it has none.
func (ch *classChunk) othersSlot(i int) *[]classKey {
	if ch.more == nil {
		ch.more = new([64][]classKey)
	}
	return &ch.more[i]
}

// at returns entry j of bin i in decreasing order of Lo: more[j], or the
// top for j == top.n − 1.
func (ch *classChunk) at(i, j int) classKey {
	if m := ch.others(i); j < len(m) {
		return m[j]
	}
	return classKey{ch.top[i].lo, ch.top[i].id}
}

// below is firstBelowLo over flat bin i (more, then the top): the number
// of its keys whose Lo is ≥ lo.
func (ch *classChunk) below(i int, lo uint64) int {
	if t := ch.top[i]; lo <= t.lo {
		return len(ch.others(i)) + 1 // every key: the top is the lowest
	}
	return firstBelowLo(ch.others(i), lo)
}

// ClassPos is a position returned by Classed.Find, valid until the set
// changes: an entry of a bin's top and more (idx in decreasing order of
// Lo, so the top, the lowest key, is the last, at len(more)), entry idx of
// bucket bk − 1 of its buckets (bk > 0), or (class < 0) a key of rest.
type ClassPos struct{ class, idx, bk int32 }

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
//
// Insert is the common cases with no call on their path: a key into an
// empty flat bin, and a key into a flat bin's more (its front, if the bin
// has buckets) when more has room below classBucket: a new lowest, or one
// above the top by an insertion sort's step in more; and, with one call, a
// key above the front of a bin with buckets (bucketBin.insert).
// insertSlow is every case, called for the others.
//
// With every case in one body the calls of the rare ones (allocation,
// spills, rest) made the compiler save the key's three words and the
// chunk on the stack at entry, on every insert (callgrind).
func (s *Classed) Insert(k Key) bool {
	if c := k.Hi; c < numBins {
		if ch := s.bins[c>>6]; ch != nil {
			t := &ch.top[c&63]
			if n := t.n; n == 0 {
				if !s.occ.has(int(c)) { // else spilled
					*t = classTop{k.Lo, k.ID, 1}
					s.occ.mark(int(c))
					s.n++
					return true
				}
			} else if k.Lo < t.lo && int(n) != classFlat && ch.more != nil {
				mp := &ch.more[c&63]
				if m := len(*mp); m < cap(*mp) && m+1 < classBucket {
					*mp = (*mp)[:m+1] // in place: only the length is stored
					(*mp)[m] = classKey{t.lo, t.id}
					*t = classTop{k.Lo, k.ID, n + 1}
					s.n++
					return true
				}
			} else if k.Lo > t.lo && int(n) != classFlat && ch.more != nil {
				mp := &ch.more[c&63]
				if ch.big != nil {
					if bb := ch.big[c&63]; bb != nil && k.Lo > (*mp)[0].lo {
						// Above the front of a bin with buckets: into
						// them (insertSlow's case, a call less).
						if !bb.insert(classKey{k.Lo, k.ID}) {
							return false
						}
						t.n = n + 1
						s.n++
						return true
					}
				}
				// Above the top, and not above the front of a bin with
				// buckets: into more, a short decreasing run, if it has
				// room.
				if m := len(*mp); m < cap(*mp) && m+1 < classBucket {
					// An insertion sort's step from the low end: the
					// entries below k.Lo, the last ones, move up one as
					// they are passed, with no search first. The search
					// cost more than the shift it led to (callgrind: ~3
					// halvings for ~2.6 entries moved an insert here).
					bin := (*mp)[:m+1]
					x := m
					for ; x > 0 && bin[x-1].lo < k.Lo; x-- {
						bin[x] = bin[x-1]
					}
					if x > 0 && bin[x-1].lo == k.Lo { // present: move them back
						copy(bin[x:], bin[x+1:])
						return false
					}
					bin[x] = classKey{k.Lo, k.ID}
					*mp = bin // in place: only the length is stored
					t.n = n + 1
					s.n++
					return true
				}
			}
		}
	}
	return s.insertSlow(k)
}

// insertSlow is Insert, every case.
//
//go:noinline
func (s *Classed) insertSlow(k Key) bool {
	c := k.Hi
	if c >= numBins {
		return s.restSet().Insert(k)
	}
	ch := s.bins[c>>6]
	if ch == nil {
		ch = new(classChunk)
		s.bins[c>>6] = ch
	}
	i := c & 63
	t := &ch.top[i]
	n := t.n
	if n == 0 {
		if s.occ.has(int(c)) { // spilled
			return s.rest.Insert(k)
		}
		*t = classTop{k.Lo, k.ID, 1}
		s.occ.mark(int(c))
		s.n++
		return true
	}
	if k.Lo < t.lo { // the new lowest: the common case
		if int(n) == classFlat {
			s.spillBin(int(c), k)
			return true
		}
		mp := ch.othersSlot(int(i))
		if cap(*mp) == 0 {
			*mp = make([]classKey, 0, minFlatCap)
		}
		*mp = append(*mp, classKey{t.lo, t.id}) // in place but for growth: only the length is stored
		if len(*mp) >= classBucket {
			ch.spillFront(int(i))
		}
		*t = classTop{k.Lo, k.ID, n + 1}
		s.n++
		return true
	}
	if k.Lo == t.lo {
		return false
	}
	mp := ch.othersSlot(int(i))
	bin := *mp
	if ch.big != nil && ch.big[i] != nil && k.Lo > bin[0].lo { // above the front: into the buckets
		bb := ch.big[i]
		if int(n) == classFlat {
			if _, _, dup := bb.find(k.Lo); dup {
				return false
			}
			s.spillBin(int(c), k)
			return true
		}
		if !bb.insert(classKey{k.Lo, k.ID}) {
			return false
		}
		t.n = n + 1
		s.n++
		return true
	}
	j := firstBelowLo(bin, k.Lo)
	if j > 0 && bin[j-1].lo == k.Lo {
		return false
	}
	if int(n) == classFlat {
		s.spillBin(int(c), k)
		return true
	}
	m := len(bin)
	bin = append(bin, classKey{})
	if m-j <= 8 {
		for i := m; i > j; i-- { // a short shift: no memmove call
			bin[i] = bin[i-1]
		}
	} else {
		copy(bin[j+1:], bin[j:])
	}
	bin[j] = classKey{k.Lo, k.ID}
	*mp = bin
	t.n = n + 1
	s.n++
	if len(bin) >= classBucket {
		ch.spillFront(int(i))
	}
	return true
}

// spillBin moves the full flat bin c and the new key k into rest for good.
func (s *Classed) spillBin(c int, k Key) {
	r := s.restSet()
	ch := s.bins[c>>6]
	i := c & 63
	others := ch.others(i)
	if bb := ch.bucketed(i); bb != nil {
		others = bb.keys(nil)
		others = append(others, ch.others(i)...)
		ch.big[i] = nil
	}
	for _, e := range others {
		r.Insert(Key{Hi: uint64(c), Lo: e.lo, ID: e.id})
	}
	t := ch.top[i]
	r.Insert(Key{Hi: uint64(c), Lo: t.lo, ID: t.id})
	r.Insert(k)
	s.n -= int(t.n)
	ch.top[i] = classTop{}
	if ch.more != nil {
		ch.more[i] = nil
	}
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
	ch := s.bins[c>>6]
	i := int(c & 63)
	t := &ch.top[i]
	if t.n == 0 { // spilled
		return s.rest.Delete(k)
	}
	j := 0 // the top (idx −1): the lowest Lo, best fit's, is the common case
	if t.lo == k.Lo {
		// DeleteAt's top case, written out (a call less).
		s.n--
		if n := t.n; n == 1 {
			*t = classTop{}
			s.occ.unmark(int(c))
		} else if ch.popTop(i, n) {
			ch.refill(i)
		}
		return true
	}
	if ch.more != nil && (ch.big == nil || ch.big[i] == nil) {
		// A key of more in a bin without buckets: DeleteAt's flat case,
		// written out (a call less).
		mp := &ch.more[i]
		bin := *mp
		j = firstBelowLo(bin, k.Lo)
		if j == 0 || bin[j-1].lo != k.Lo {
			return false
		}
		last := len(bin) - 1
		for x := j - 1; x < last; x++ {
			bin[x] = bin[x+1]
		}
		*mp = (*mp)[:last] // in place: only the length is stored
		t.n--
		s.n--
		return true
	}
	{
		bin := ch.others(i)
		if ch.big != nil && ch.big[i] != nil && k.Lo > bin[0].lo { // above the front
			bb := ch.big[i]
			bk, p, ok := bb.find(k.Lo)
			if !ok {
				return false
			}
			// DeleteAt's bucket case, written out (a call less).
			t.n--
			s.n--
			bb.deleteAt(bk, p)
			if bb.n == 0 {
				ch.big[i] = nil
			}
			return true
		}
		j = firstBelowLo(bin, k.Lo)
		if j == 0 || bin[j-1].lo != k.Lo {
			return false
		}
	}
	s.DeleteAt(ClassPos{int32(c), int32(j - 1), 0}, k)
	return true
}

// Find returns the position and value of the smallest key ≥ k, so a caller
// can inspect it and then DeleteAt without a second search.
func (s *Classed) Find(k Key) (ClassPos, Key, bool) {
	if c := k.Hi; c < numBins {
		b := int(c)
		if k.Lo == 0 && s.occ.has(b) { // best fit's query, and its class has keys
			if t := s.bins[b>>6].top[b&63]; t.n > 0 {
				return ClassPos{int32(b), -1, 0}, Key{Hi: c, Lo: t.lo, ID: t.id}, true
			}
		}
		for b = s.occ.next(b); b >= 0; b = s.occ.next(b + 1) {
			ch := s.bins[b>>6]
			n := int(ch.top[b&63].n)
			if n == 0 { // spilled: its keys are in rest
				from := Key{Hi: uint64(b)}
				if uint64(b) == c {
					from = k
				}
				if x, ok := s.rest.LowerBound(from); ok && x.Hi == uint64(b) {
					return ClassPos{-1, 0, 0}, x, true
				}
				continue
			}
			nf := len(ch.others(b&63)) + 1 // the top and more
			j := nf                        // every entry is ≥ (c, 0)
			if uint64(b) == c && k.Lo != 0 {
				if j = ch.below(b&63, k.Lo); j == 0 { // none in the top and more: the buckets hold the rest
					if bb := ch.bucketed(b & 63); bb != nil {
						if bk, p, ok := bb.atLeast(k.Lo); ok {
							e := bb.b[bk][p]
							return ClassPos{int32(b), int32(p), int32(bk + 1)}, Key{Hi: uint64(b), Lo: e.lo, ID: e.id}, true
						}
					}
					continue
				}
			}
			pos := int32(j - 1)
			if j == nf {
				pos = -1 // the top
			}
			e := ch.at(b&63, j-1)
			return ClassPos{int32(b), pos, 0}, Key{Hi: uint64(b), Lo: e.lo, ID: e.id}, true
		}
		k = Key{Hi: numBins}
	}
	if s.rest == nil {
		return ClassPos{}, Key{}, false
	}
	x, ok := s.rest.LowerBound(k)
	return ClassPos{-1, 0, 0}, x, ok
}

// TakeFirst removes and returns the smallest key ≥ k if its Hi is at most
// limit (best fit under the caching allocator's oversize rules); otherwise
// it changes nothing and reports false. Find and DeleteAt in one call, and
// for best fit's query (k.Lo == 0), TakeBest.
func (s *Classed) TakeFirst(k Key, limit uint64) (Key, bool) {
	if k.Lo == 0 {
		return s.TakeBest(k.Hi, limit)
	}
	return s.takeFind(k, limit)
}

// TakeBest is TakeFirst(Key{Hi: c}, limit), best fit's query: it removes
// and returns the lowest key of the lowest class ≥ c if that class is at
// most limit. When class c's bitmap word has a class ≥ c with a flat bin,
// that is a bitmap step and the bin's top; the rest (the next words, a
// spilled class, c ≥ numBins) is takeBestSlow, not inlined, so that its
// calls make TakeBest keep nothing on the stack.
func (s *Classed) TakeBest(c, limit uint64) (Key, bool) {
	if c < numBins {
		// s.occ.next(c), its first step (the word of c, where the class
		// mostly is) written out.
		b := int(c)
		if x := s.occ.used[b>>6] >> (b & 63); x != 0 {
			b += bits.TrailingZeros64(x)
			ch := s.bins[b>>6]
			t := &ch.top[b&63]
			if n := t.n; n > 0 { // else spilled
				if uint64(b) > limit {
					return Key{}, false
				}
				x := Key{Hi: uint64(b), Lo: t.lo, ID: t.id}
				s.n--
				if n == 1 {
					*t = classTop{}
					s.occ.unmark(b)
				} else if ch.popTop(b&63, n) {
					ch.refill(b & 63)
				}
				return x, true
			}
		}
	}
	return s.takeBestSlow(c, limit)
}

// takeBestSlow is TakeBest past the first bitmap word.
//
//go:noinline
func (s *Classed) takeBestSlow(c, limit uint64) (Key, bool) {
	if c < numBins {
		if b := s.occ.next(int(c)); b >= 0 {
			ch := s.bins[b>>6]
			t := &ch.top[b&63]
			if n := t.n; n > 0 { // else spilled: takeFind
				if uint64(b) > limit {
					return Key{}, false
				}
				x := Key{Hi: uint64(b), Lo: t.lo, ID: t.id}
				s.n--
				if n == 1 {
					*t = classTop{}
					s.occ.unmark(b)
				} else if ch.popTop(b&63, n) {
					ch.refill(b & 63)
				}
				return x, true
			}
		}
	}
	return s.takeFind(Key{Hi: c}, limit)
}

// takeFind is TakeFirst by Find and DeleteAt.
func (s *Classed) takeFind(k Key, limit uint64) (Key, bool) {
	p, x, ok := s.Find(k)
	if !ok || x.Hi > limit {
		return Key{}, false
	}
	s.DeleteAt(p, x)
	return x, true
}

// popTop replaces the top of bin i, of n ≥ 2 keys, by the lowest of more.
// It reports whether that emptied more while the bin's buckets hold keys,
// when the caller must refill it (not called here, so that popTop is
// inlined).
func (ch *classChunk) popTop(i int, n int32) (refill bool) {
	mp := &ch.more[i]
	m := len(*mp)
	e := (*mp)[m-1]
	*mp = (*mp)[:m-1] // in place: only the length is stored
	ch.top[i] = classTop{e.lo, e.id, n - 1}
	// more is empty (m == 1) and the buckets are not (n − m − 1 keys), in
	// one compare (one branch where "m == 1 && n > 2" would be two).
	return m == min(int(n)-m-1, 1)
}

// DeleteAt removes the key k at p (from Find, with no change in between).
func (s *Classed) DeleteAt(p ClassPos, k Key) {
	if p.class < 0 {
		s.rest.Delete(k)
		return
	}
	c := int(p.class)
	ch := s.bins[c>>6]
	i := c & 63
	t := &ch.top[i]
	n := t.n
	s.n--
	if p.idx < 0 { // the top
		if n == 1 {
			*t = classTop{}
			s.occ.unmark(c)
		} else if ch.popTop(i, n) {
			ch.refill(i)
		}
		return
	}
	t.n = n - 1
	if p.bk > 0 {
		bb := ch.big[i]
		bb.deleteAt(int(p.bk-1), int(p.idx))
		if bb.n == 0 {
			ch.big[i] = nil
		}
		return
	}
	bin := ch.more[i]
	last := len(bin) - 1
	if j := int(p.idx); j != last {
		if last-j <= 8 {
			for ; j < last; j++ { // a short shift: no memmove call
				bin[j] = bin[j+1]
			}
		} else {
			copy(bin[j:], bin[j+1:])
		}
	}
	ch.more[i] = bin[:last] // in place: only the length is stored
	if last == 0 && ch.big != nil && ch.big[i] != nil {
		ch.refill(i)
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
			ch := s.bins[b>>6]
			n := int(ch.top[b&63].n)
			if n == 0 { // spilled
				start := Key{Hi: uint64(b)}
				if uint64(b) == c {
					start = from
				}
				if walkWhile(s.rest.Ascend, start, func(hi uint64) bool { return hi == uint64(b) }, f) {
					return
				}
				continue
			}
			n = len(ch.others(b&63)) + 1 // the top and more; then the buckets
			j := n - 1
			lo := uint64(0)
			if uint64(b) == c {
				lo = from.Lo
				j = ch.below(b&63, lo) - 1
			}
			if j == n-1 { // the top first, then more from its end
				if t := ch.top[b&63]; !f(Key{Hi: uint64(b), Lo: t.lo, ID: t.id}) {
					return
				}
				j--
			}
			for more := ch.others(b & 63); j >= 0; j-- {
				if !f(Key{Hi: uint64(b), Lo: more[j].lo, ID: more[j].id}) {
					return
				}
			}
			if bb := ch.bucketed(b & 63); bb != nil {
				if bk, p, ok := bb.atLeast(lo); ok && bb.ascend(bk, p, func(e classKey) bool {
					return f(Key{Hi: uint64(b), Lo: e.lo, ID: e.id})
				}) {
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
		ch := s.bins[b>>6]
		n := int(ch.top[b&63].n)
		if n == 0 { // spilled
			if walkWhile(s.rest.Descend, end, func(hi uint64) bool { return hi == uint64(b) }, f) {
				return
			}
			continue
		}
		if bb := ch.bucketed(b & 63); bb != nil { // the buckets first: above the top and more
			if bb.descend(end.Lo, func(e classKey) bool { return f(Key{Hi: uint64(b), Lo: e.lo, ID: e.id}) }) {
				return
			}
		}
		n = len(ch.others(b&63)) + 1
		j := 0
		if end.Lo != ^uint64(0) {
			j = ch.below(b&63, end.Lo) // entries [0, j) have Lo ≥ end.Lo
			if j > 0 && ch.at(b&63, j-1).lo == end.Lo {
				j--
			}
		}
		for more := ch.others(b & 63); j < n-1; j++ {
			if !f(Key{Hi: uint64(b), Lo: more[j].lo, ID: more[j].id}) {
				return
			}
		}
		if j == n-1 { // the top, the lowest, last
			if t := ch.top[b&63]; !f(Key{Hi: uint64(b), Lo: t.lo, ID: t.id}) {
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
		nc := &classChunk{top: ch.top}
		if ch.big != nil {
			nc.big = new([64]*bucketBin)
			for i, bb := range ch.big {
				if bb != nil {
					nc.big[i] = bb.clone()
				}
			}
		}
		if ch.more != nil {
			nc.more = new([64][]classKey)
			for i := range ch.more {
				if len(ch.more[i]) > 0 {
					nc.more[i] = append([]classKey(nil), ch.more[i]...)
				}
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
		var t classTop
		var more []classKey
		var bb *bucketBin
		if ch := s.bins[c>>6]; ch != nil {
			t, more, bb = ch.top[c&63], ch.others(c&63), ch.bucketed(c&63)
		}
		if bb != nil {
			if t.n == 0 || len(more) == 0 || bb.n == 0 || int(bb.n)+len(more) != int(t.n)-1 {
				return errorf("class %d: %d keys, %d in buckets, %d in more", c, t.n, bb.n, len(more))
			}
			if err := bb.check(more[0].lo); err != nil {
				return errorf("class %d: %v", c, err)
			}
			more = append(bb.keys(nil), more...)
		}
		if c >= numBins && (t.n > 0 || s.occ.has(c)) {
			return errorf("class %d past the flat bins is used", c)
		}
		if int(t.n) > classFlat {
			return errorf("class %d holds %d keys", c, t.n)
		}
		if (t.n == 0 && len(more) > 0) || (t.n > 0 && len(more) != int(t.n)-1) {
			return errorf("class %d: %d keys, %d besides the top", c, t.n, len(more))
		}
		for j := range more {
			if (j > 0 && more[j].lo >= more[j-1].lo) || more[j].lo <= t.lo {
				return errorf("class %d not sorted at %d", c, j)
			}
		}
		if t.n == 0 && s.occ.has(c) {
			spilled++
		}
		if t.n > 0 && !s.occ.has(c) {
			return errorf("class %d has keys and no bit", c)
		}
		n += int(t.n)
	}
	if n != s.n || spilled != s.spill {
		return errorf("count %d, recount %d; spilled %d, recount %d", s.n, n, spilled, s.spill)
	}
	if s.rest == nil {
		return nil
	}
	if err := s.rest.Check(); err != nil {
		return err
	}
	var bad error
	s.rest.All(func(k Key) bool {
		if k.Hi < numBins && (!s.occ.has(int(k.Hi)) || s.bins[k.Hi>>6] == nil || s.bins[k.Hi>>6].top[k.Hi&63].n != 0) {
			bad = errorf("key %v in rest, its class is not spilled", k)
		}
		return bad == nil
	})
	return bad
}
