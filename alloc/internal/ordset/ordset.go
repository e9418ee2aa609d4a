// Package ordset is an ordered set of small fixed keys, specialised for the
// allocators' free-block indexes: best fit is a lower-bound query on
// (stream, size, address).
//
// It is a two-level B+tree: sorted chunks of at most maxChunk keys, plus the
// array of each chunk's largest key. A query binary-searches the maxima, then
// the chunk; an insert or delete shifts at most maxChunk keys. With keys
// compared inline (no comparator function values, unlike a generic B-tree)
// an operation on a 10,000-key set costs a few tens of nanoseconds, and
// chunk buffers are recycled, so the steady state allocates nothing.
//
// Invariants:
//
//	every chunk is non-empty, sorted, and holds at most maxChunk keys
//	maxes[i] is the last key of chunks[i]; maxes is strictly increasing
//	n == Σ len(chunks[i])
//
// Binned (binned.go, bins.go) splits a set into bins by Hi under a bitmap:
// the allocators' one binned index, where best fit must find the smallest
// size at or above a request. The caching allocator's free sets are Binned
// (log-linear bins of size/512), and so are both indexes of package extent,
// the arena and async pools' free extents (log-linear bins of the size, and
// linear buckets of the address, InitLinear); extent keeps two orders of the
// same extents in step by rewriting keys in place through the positions
// that searches return (pos.go). Set itself keeps the caching allocator's
// unmapped sets and Binned's oversized bins.
package ordset

// maxChunk bounds a chunk: 64 keys of 24 bytes are 1.5 KiB, so an insert or
// delete moves under 1 KiB on average, and 10,000 keys need only ~200
// maxima (8 binary-search steps). 32 and 128 measured slower on the
// caching allocator's benchmark.
const maxChunk = 64

// Key is ordered by Hi, then Lo. ID is carried along and ignored by the
// order (keys with equal Hi and Lo are the same key). Two words keep the
// comparison to two instructions; callers pack their fields into them.
type Key struct {
	Hi, Lo uint64
	ID     int32
}

// Less reports whether k orders before o.
func (k Key) Less(o Key) bool {
	return k.Hi < o.Hi || (k.Hi == o.Hi && k.Lo < o.Lo)
}

func (k Key) same(o Key) bool { return k.Hi == o.Hi && k.Lo == o.Lo }

// Set is an ordered set of Keys. The zero value is an empty set.
type Set struct {
	chunks [][]Key
	maxes  []Key
	spare  [][]Key // recycled chunk buffers
	n      int
}

// Len is the number of keys.
func (s *Set) Len() int { return s.n }

// chunkFor returns the index of the first chunk whose maximum is ≥ k
// (len(chunks) if none).
func (s *Set) chunkFor(k Key) int {
	lo, hi := 0, len(s.maxes)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.maxes[m].Less(k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func lowerIn(c []Key, k Key) int {
	lo, hi := 0, len(c)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c[m].Less(k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// LowerBound returns the smallest key ≥ k.
func (s *Set) LowerBound(k Key) (Key, bool) {
	i := s.chunkFor(k)
	if i == len(s.chunks) {
		return Key{}, false
	}
	c := s.chunks[i]
	return c[lowerIn(c, k)], true
}

// Max returns the largest key.
func (s *Set) Max() (Key, bool) {
	if s.n == 0 {
		return Key{}, false
	}
	return s.maxes[len(s.maxes)-1], true
}

// Has reports whether an equal key is present.
func (s *Set) Has(k Key) bool {
	f, ok := s.LowerBound(k)
	return ok && f.same(k)
}

func (s *Set) newChunk() []Key {
	if n := len(s.spare); n > 0 {
		c := s.spare[n-1]
		s.spare = s.spare[:n-1]
		return c[:0]
	}
	return make([]Key, 0, maxChunk+1)
}

// Insert adds k; it reports false (and changes nothing) if an equal key is
// already present.
func (s *Set) Insert(k Key) bool {
	if len(s.chunks) == 0 {
		c := append(s.newChunk(), k)
		s.chunks = append(s.chunks, c)
		s.maxes = append(s.maxes, k)
		s.n = 1
		return true
	}
	i := s.chunkFor(k)
	if i == len(s.chunks) {
		i-- // larger than everything: append to the last chunk
	}
	c := s.chunks[i]
	j := lowerIn(c, k)
	if j < len(c) && c[j].same(k) {
		return false
	}
	c = append(c, Key{})
	copy(c[j+1:], c[j:])
	c[j] = k
	s.n++
	if len(c) <= maxChunk {
		s.chunks[i] = c
		s.maxes[i] = c[len(c)-1]
		return true
	}
	// Split: the upper half moves to a new chunk after i.
	half := len(c) / 2
	d := append(s.newChunk(), c[half:]...)
	c = c[:half]
	s.chunks[i] = c
	s.maxes[i] = c[len(c)-1]
	s.chunks = append(s.chunks, nil)
	copy(s.chunks[i+2:], s.chunks[i+1:])
	s.chunks[i+1] = d
	s.maxes = append(s.maxes, Key{})
	copy(s.maxes[i+2:], s.maxes[i+1:])
	s.maxes[i+1] = d[len(d)-1]
	return true
}

// Delete removes the key equal to k and reports whether it was present.
func (s *Set) Delete(k Key) bool {
	i := s.chunkFor(k)
	if i == len(s.chunks) {
		return false
	}
	c := s.chunks[i]
	j := lowerIn(c, k)
	if j == len(c) || !c[j].same(k) {
		return false
	}
	s.deleteAt(i, j)
	return true
}

// deleteAt removes chunks[i][j].
func (s *Set) deleteAt(i, j int) {
	c := s.chunks[i]
	copy(c[j:], c[j+1:])
	c = c[:len(c)-1]
	s.n--
	s.chunks[i] = c
	if len(c) == 0 {
		s.removeChunk(i)
		return
	}
	s.maxes[i] = c[len(c)-1]
	// Keep chunks reasonably full so the maxima array stays short: merge a
	// small chunk into a neighbour when both fit in three quarters of one.
	if len(c) < maxChunk/4 {
		if i+1 < len(s.chunks) && len(c)+len(s.chunks[i+1]) <= maxChunk*3/4 {
			s.merge(i)
		} else if i > 0 && len(c)+len(s.chunks[i-1]) <= maxChunk*3/4 {
			s.merge(i - 1)
		}
	}
}

// merge appends chunk i+1 to chunk i.
func (s *Set) merge(i int) {
	c := append(s.chunks[i], s.chunks[i+1]...)
	s.chunks[i] = c
	s.maxes[i] = c[len(c)-1]
	s.chunks[i+1] = s.chunks[i+1][:0]
	s.removeChunk(i + 1)
}

func (s *Set) removeChunk(i int) {
	s.spare = append(s.spare, s.chunks[i])
	copy(s.chunks[i:], s.chunks[i+1:])
	s.chunks[len(s.chunks)-1] = nil
	s.chunks = s.chunks[:len(s.chunks)-1]
	copy(s.maxes[i:], s.maxes[i+1:])
	s.maxes = s.maxes[:len(s.maxes)-1]
}

// Ascend calls f for every key ≥ from in increasing order until f returns
// false. f must not modify the set.
func (s *Set) Ascend(from Key, f func(Key) bool) {
	for i := s.chunkFor(from); i < len(s.chunks); i++ {
		c := s.chunks[i]
		j := 0
		if c[0].Less(from) {
			j = lowerIn(c, from)
		}
		for ; j < len(c); j++ {
			if !f(c[j]) {
				return
			}
		}
	}
}

// All calls f for every key in increasing order until f returns false.
func (s *Set) All(f func(Key) bool) {
	for _, c := range s.chunks {
		for _, k := range c {
			if !f(k) {
				return
			}
		}
	}
}

// Descend calls f for every key ≤ from in decreasing order until f returns
// false. f must not modify the set.
func (s *Set) Descend(from Key, f func(Key) bool) {
	i := s.chunkFor(from)
	if i == len(s.chunks) {
		i--
	}
	for ; i >= 0; i-- {
		c := s.chunks[i]
		j := len(c) - 1
		if from.Less(c[j]) {
			j = lowerIn(c, from) // first ≥ from
			if j == len(c) || !c[j].same(from) {
				j--
			}
		}
		for ; j >= 0; j-- {
			if !f(c[j]) {
				return
			}
		}
	}
}

// Clone returns an independent copy.
func (s *Set) Clone() Set {
	c := Set{chunks: make([][]Key, len(s.chunks)), maxes: append([]Key(nil), s.maxes...), n: s.n}
	for i, ch := range s.chunks {
		c.chunks[i] = append(make([]Key, 0, maxChunk+1), ch...)
	}
	return c
}

// Check verifies the invariants.
func (s *Set) Check() error {
	n := 0
	for i, c := range s.chunks {
		if len(c) == 0 || len(c) > maxChunk {
			return errorf("chunk %d has %d keys", i, len(c))
		}
		for j := 1; j < len(c); j++ {
			if !c[j-1].Less(c[j]) {
				return errorf("chunk %d not sorted at %d", i, j)
			}
		}
		if !s.maxes[i].same(c[len(c)-1]) {
			return errorf("maxes[%d] stale", i)
		}
		if i > 0 && !s.maxes[i-1].Less(c[0]) {
			return errorf("chunk %d overlaps chunk %d", i, i-1)
		}
		n += len(c)
	}
	if n != s.n || len(s.maxes) != len(s.chunks) {
		return errorf("count %d, recount %d", s.n, n)
	}
	return nil
}

// Pos is a position returned by Find, valid until the set changes.
type Pos struct{ chunk, idx int }

// Find returns the position and value of the smallest key ≥ k, so a caller
// can inspect it and then DeleteAt without a second search.
func (s *Set) Find(k Key) (Pos, Key, bool) {
	i := s.chunkFor(k)
	if i == len(s.chunks) {
		return Pos{}, Key{}, false
	}
	c := s.chunks[i]
	j := lowerIn(c, k)
	return Pos{i, j}, c[j], true
}

// DeleteAt removes the key at p (from Find, with no change in between).
func (s *Set) DeleteAt(p Pos) {
	s.deleteAt(p.chunk, p.idx)
}
