// Bucketed bins of a Classed set: a long flat bin cut by address.
// See classed.go.

package ordset

import "math/bits"

// classBucket is the length at which a bin's more (its keys besides the
// top, in decreasing order) keeps only its lowest keys, its front, and
// moves the others into the bin's buckets (spillFront); a variable so that
// the tests can make buckets with few keys.
//
// Why: in the caching benchmark (BenchmarkAllocFree, 10,000 live blocks)
// the bins of the smallest classes hold 80-277 keys, and an insert of a
// freed block (a random address) or a merge's delete binary-searched the
// bin (8-9 steps whose loop exit mispredicted nearly every time) and
// shifted 20-39 entries (memmove). Cut into 64 buckets by address, the
// same keys are a handful a bucket, found by a shift and a clamp. The
// front keeps best fit's take and the insert of a new lowest key, the
// common operations, on a flat slice as before, with no test of whether
// the bin has buckets (which mispredicted when every key of a bucketed
// bin was in its buckets).
var classBucket = 32

// bucketMax is the length of a bucket past which an insert rebuckets the
// bin (if the bin has changed as many times as it has keys since it was
// last bucketed, so that rebucketing is O(1) amortized); a variable for
// the tests.
var bucketMax = 32

// bucketBin holds the keys of a flat bin besides its top, cut into 64
// buckets by Lo: key lo is in bucket of(lo), min(63, (lo−base)>>shift),
// 0 for lo below base, a monotone function, so the buckets in order,
// each in order, give the keys in order. Each bucket is in decreasing
// order of Lo, as a flat bin's more is, so a bucket's lowest key is at its
// end. base and shift are chosen when the bin is bucketed (bucketize) to
// spread its keys' range over the 64 buckets.
//
// Invariants (Classed.Check verifies them): bit j of occ is set iff bucket
// j is non-empty; every key of bucket j has of(lo) == j; each bucket is
// strictly decreasing; n is the number of keys.
type bucketBin struct {
	occ   uint64
	base  uint64
	shift uint
	n     int32 // keys
	ops   int64 // inserts and deletes since the bin was last bucketized (64 bits: an int32 wrapped after 2^31 and stopped the rebucketing)
	b     [64][]classKey
}

// of is the bucket of lo.
func (bb *bucketBin) of(lo uint64) int {
	d := (lo - bb.base) & -uint64(b2i(lo >= bb.base)) // 0 below base, without a branch
	return int(min(d>>bb.shift, 63))
}

// bucketize spreads keys (decreasing, at least one) over bb's buckets,
// choosing base and shift from their range; bb must be empty but for the
// storage of its buckets, which it reuses.
func (bb *bucketBin) bucketize(keys []classKey) {
	lo, hi := keys[len(keys)-1].lo, keys[0].lo
	bb.base = lo
	bb.shift = uint(max(0, bits.Len64(hi-lo)-6)) // (hi−lo)>>shift < 64
	bb.occ, bb.ops = 0, 0
	bb.n = int32(len(keys))
	for j := range bb.b {
		bb.b[j] = bb.b[j][:0]
	}
	for _, e := range keys {
		j := bb.of(e.lo)
		bb.b[j] = append(bb.b[j], e)
		bb.occ |= 1 << j
	}
}

// keys returns bb's keys in decreasing order of Lo, appended to dst.
func (bb *bucketBin) keys(dst []classKey) []classKey {
	for m := bb.occ; m != 0; {
		j := 63 - bits.LeadingZeros64(m)
		m &^= 1 << j
		dst = append(dst, bb.b[j]...)
	}
	return dst
}

// pop removes and returns the lowest key (bb is not empty).
func (bb *bucketBin) pop() classKey {
	j := bits.TrailingZeros64(bb.occ)
	s := bb.b[j]
	e := s[len(s)-1]
	bb.b[j] = s[:len(s)-1]
	if len(s) == 1 {
		bb.occ &^= 1 << j
	}
	bb.n--
	return e
}

// pushLowest adds e, whose Lo is below every key of bb.
func (bb *bucketBin) pushLowest(e classKey) {
	j := bb.of(e.lo)
	bb.b[j] = append(bb.b[j], e)
	bb.occ |= 1 << j
	bb.n++
}

// insert adds e; it reports false if a key of the same Lo is present.
func (bb *bucketBin) insert(e classKey) bool {
	j := bb.of(e.lo)
	s := bb.b[j]
	m := len(s)
	s = append(s, classKey{})
	// An insertion sort's step from the low end, as Classed.Insert's into
	// more: a bucket holds a few keys, and the search cost more than the
	// shift.
	p := m
	for ; p > 0 && s[p-1].lo < e.lo; p-- {
		s[p] = s[p-1]
	}
	if p > 0 && s[p-1].lo == e.lo { // present: move them back (bb.b[j] keeps its length)
		copy(s[p:], s[p+1:])
		return false
	}
	s[p] = e
	bb.b[j] = s
	bb.occ |= 1 << j
	bb.n++
	bb.ops++
	if len(s) > bucketMax && bb.ops > int64(bb.n) {
		bb.bucketize(bb.keys(make([]classKey, 0, bb.n)))
	}
	return true
}

// find returns the bucket and index of the key of Lo lo.
func (bb *bucketBin) find(lo uint64) (j, p int, ok bool) {
	j = bb.of(lo)
	s := bb.b[j]
	p = len(s) - 1 // from the low end, as insert: a bucket holds a few keys
	for p >= 0 && s[p].lo < lo {
		p--
	}
	if p < 0 || s[p].lo != lo {
		return 0, 0, false
	}
	return j, p, true
}

// deleteAt removes entry p of bucket j.
func (bb *bucketBin) deleteAt(j, p int) {
	s := bb.b[j]
	last := len(s) - 1
	if last-p <= 8 {
		for ; p < last; p++ {
			s[p] = s[p+1]
		}
	} else {
		copy(s[p:], s[p+1:])
	}
	bb.b[j] = s[:last]
	if last == 0 {
		bb.occ &^= 1 << j
	}
	bb.n--
	bb.ops++
}

// atLeast returns the position of the lowest key whose Lo is ≥ lo.
func (bb *bucketBin) atLeast(lo uint64) (j, p int, ok bool) {
	j = bb.of(lo)
	if s := bb.b[j]; len(s) > 0 {
		if p := firstBelowLo(s, lo); p > 0 {
			return j, p - 1, true
		}
	}
	if j == 63 {
		return 0, 0, false
	}
	m := bb.occ >> (j + 1) << (j + 1)
	if m == 0 {
		return 0, 0, false
	}
	j = bits.TrailingZeros64(m)
	return j, len(bb.b[j]) - 1, true
}

// ascend calls f for the keys from position (j, p) on in increasing
// order until f returns false, and reports whether f stopped it.
func (bb *bucketBin) ascend(j, p int, f func(classKey) bool) bool {
	for {
		s := bb.b[j]
		for ; p >= 0; p-- {
			if !f(s[p]) {
				return true
			}
		}
		if j == 63 {
			return false
		}
		m := bb.occ >> (j + 1) << (j + 1)
		if m == 0 {
			return false
		}
		j = bits.TrailingZeros64(m)
		p = len(bb.b[j]) - 1
	}
}

// descend calls f for the keys whose Lo is ≤ lo in decreasing order until
// f returns false, and reports whether f stopped it.
func (bb *bucketBin) descend(lo uint64, f func(classKey) bool) bool {
	j := bb.of(lo)
	s := bb.b[j]
	p := firstBelowLo(s, lo) // s[:p] ≥ lo
	if p > 0 && s[p-1].lo == lo {
		p--
	}
	for {
		for ; p < len(s); p++ {
			if !f(s[p]) {
				return true
			}
		}
		m := bb.occ & (1<<j - 1)
		if m == 0 {
			return false
		}
		j = 63 - bits.LeadingZeros64(m)
		s, p = bb.b[j], 0
	}
}

// clone returns a deep copy of bb.
func (bb *bucketBin) clone() *bucketBin {
	c := *bb
	for j := range c.b {
		c.b[j] = nil
		if len(bb.b[j]) > 0 {
			c.b[j] = append([]classKey(nil), bb.b[j]...)
		}
	}
	return &c
}

// check verifies bb's invariants, and that its keys are all above lo.
func (bb *bucketBin) check(lo uint64) error {
	n := 0
	for j, s := range bb.b {
		if (bb.occ>>j&1 != 0) != (len(s) > 0) {
			return errorf("bucket %d: %d keys, bit %d", j, len(s), bb.occ>>j&1)
		}
		for p, e := range s {
			if bb.of(e.lo) != j || e.lo <= lo || (p > 0 && e.lo >= s[p-1].lo) {
				return errorf("bucket %d not in order at %d", j, p)
			}
		}
		n += len(s)
	}
	if n != int(bb.n) {
		return errorf("bucketed bin: %d keys, counted %d", bb.n, n)
	}
	return nil
}
