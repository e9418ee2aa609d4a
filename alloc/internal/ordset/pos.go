// Positions: in-place reads and rewrites through the positions that Find,
// Below and Seek return, for callers that keep two orders of the same items
// (extent's address and size indexes) and change a key without moving it.
// See package ordset for the overview.

package ordset

// At returns the key at p (from Find, Below or Seek, with no change since).
func (s *Binned) At(p BinPos) Key {
	if p.idx < 0 {
		return s.bigSet(p.bin).at(p.pos)
	}
	return (*s.bin(p.bin))[p.idx]
}

// SetAt overwrites the key at p with k, which must fall in the same bin
// (binOf) and keep its place in the order: strictly between the keys before
// and after p. Replace checks both; SetAt is for callers that know, such as
// one that changes only Lo where no two keys share a Hi.
func (s *Binned) SetAt(p BinPos, k Key) {
	if p.idx < 0 {
		s.bigSet(p.bin).setAt(p.pos, k)
		return
	}
	(*s.bin(p.bin))[p.idx] = k
}

// SameBin reports whether keys with these Hi values share a bin, so that a
// rewrite from one to the other through SetAt is possible.
func (s *Binned) SameBin(hi1, hi2 uint64) bool { return s.binOf(hi1) == s.binOf(hi2) }

// Replace overwrites the key at p with k when k falls in the same bin and
// keeps its place among its neighbours there, and reports whether it did;
// otherwise the set is unchanged (the caller deletes and inserts).
func (s *Binned) Replace(p BinPos, k Key) bool {
	if s.binOf(k.Hi) != p.bin {
		return false
	}
	if p.idx < 0 {
		return s.bigSet(p.bin).replaceAt(p.pos, k)
	}
	bin := *s.bin(p.bin) // decreasing
	if (p.idx > 0 && !k.Less(bin[p.idx-1])) || (p.idx+1 < len(bin) && !bin[p.idx+1].Less(k)) {
		return false
	}
	bin[p.idx] = k
	return true
}

// Below returns the position and value of the largest key < k.
func (s *Binned) Below(k Key) (BinPos, Key, bool) {
	b := s.binOf(k.Hi)
	if s.nonEmpty(b) {
		if bin := *s.bin(b); len(bin) > 0 {
			if j := firstBelow(bin, k); j < len(bin) {
				return BinPos{bin: b, idx: j}, bin[j], true
			}
		} else if p, x, ok := s.bigSet(b).below(k); ok {
			return BinPos{bin: b, idx: -1, pos: p}, x, true
		}
	}
	return s.lastBefore(b)
}

// Seek returns the positions of the largest key < k (pred) and of the
// smallest key ≥ k (succ), with whether each exists: Below and Find in one
// search of k's bin.
func (s *Binned) Seek(k Key) (pred BinPos, predOK bool, succ BinPos, succOK bool) {
	b := s.binOf(k.Hi)
	if s.nonEmpty(b) {
		if bin := *s.bin(b); len(bin) > 0 {
			j := firstBelow(bin, k)
			pred, predOK = BinPos{bin: b, idx: j}, j < len(bin)
			succ, succOK = BinPos{bin: b, idx: j - 1}, j > 0
		} else {
			set := s.bigSet(b)
			var p Pos
			p, _, predOK = set.below(k)
			pred = BinPos{bin: b, idx: -1, pos: p}
			p, _, succOK = set.Find(k)
			succ = BinPos{bin: b, idx: -1, pos: p}
		}
	}
	if !predOK {
		pred, _, predOK = s.lastBefore(b)
	}
	if !succOK {
		succ, _, succOK = s.firstAfter(b)
	}
	return pred, predOK, succ, succOK
}

// lastBefore returns the largest key of the bins before b.
func (s *Binned) lastBefore(b int) (BinPos, Key, bool) {
	if b = s.prev(b - 1); b < 0 {
		return BinPos{}, Key{}, false
	}
	if bin := *s.bin(b); len(bin) > 0 {
		return BinPos{bin: b, idx: 0}, bin[0], true
	}
	p, x := s.bigSet(b).last()
	return BinPos{bin: b, idx: -1, pos: p}, x, true
}

// firstAfter returns the smallest key of the bins after b.
func (s *Binned) firstAfter(b int) (BinPos, Key, bool) {
	if b = s.next(b + 1); b < 0 {
		return BinPos{}, Key{}, false
	}
	if bin := *s.bin(b); len(bin) > 0 {
		return BinPos{bin: b, idx: len(bin) - 1}, bin[len(bin)-1], true
	}
	return BinPos{bin: b, idx: -1}, s.bigSet(b).chunks[0][0], true
}

// Clear removes every key, keeping the bins' storage for reuse, and keeps
// the bin function.
func (s *Binned) Clear() {
	for b := s.next(0); b >= 0; b = s.next(b + 1) {
		bp := s.bin(b)
		*bp = (*bp)[:0]
		if set := s.bigSet(b); set != nil {
			set.clear()
			s.big[b>>6][b&63] = nil
			s.spare = append(s.spare, set)
		}
	}
	s.occ = bitmap{}
	s.n = 0
}

// at returns the key at p.
func (s *Set) at(p Pos) Key { return s.chunks[p.chunk][p.idx] }

// setAt overwrites the key at p with k, which keeps its place in the order.
func (s *Set) setAt(p Pos, k Key) {
	c := s.chunks[p.chunk]
	c[p.idx] = k
	if p.idx == len(c)-1 {
		s.maxes[p.chunk] = k
	}
}

// replaceAt is setAt when k keeps its place (strictly between the keys
// before and after p); it reports whether it did.
func (s *Set) replaceAt(p Pos, k Key) bool {
	c := s.chunks[p.chunk]
	switch {
	case p.idx > 0 && !c[p.idx-1].Less(k):
		return false
	case p.idx == 0 && p.chunk > 0 && !s.maxes[p.chunk-1].Less(k):
		return false
	case p.idx+1 < len(c) && !k.Less(c[p.idx+1]):
		return false
	case p.idx+1 == len(c) && p.chunk+1 < len(s.chunks) && !k.Less(s.chunks[p.chunk+1][0]):
		return false
	}
	s.setAt(p, k)
	return true
}

// below returns the position and value of the largest key < k.
func (s *Set) below(k Key) (Pos, Key, bool) {
	i := s.chunkFor(k) // first chunk whose maximum is ≥ k
	if i < len(s.chunks) {
		if j := lowerIn(s.chunks[i], k); j > 0 {
			return Pos{i, j - 1}, s.chunks[i][j-1], true
		}
	}
	if i == 0 {
		return Pos{}, Key{}, false
	}
	c := s.chunks[i-1]
	return Pos{i - 1, len(c) - 1}, c[len(c)-1], true
}

// last returns the position and value of the largest key of a non-empty set.
func (s *Set) last() (Pos, Key) {
	i := len(s.chunks) - 1
	c := s.chunks[i]
	return Pos{i, len(c) - 1}, c[len(c)-1]
}

// clear removes every key, keeping the chunk buffers for reuse.
func (s *Set) clear() {
	for i := range s.chunks {
		s.spare = append(s.spare, s.chunks[i][:0])
		s.chunks[i] = nil
	}
	s.chunks, s.maxes, s.n = s.chunks[:0], s.maxes[:0], 0
}
