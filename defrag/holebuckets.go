// A bucketed index of holes for large hole sets: one bucket per exact size
// in 512-byte units under a two-level bitmap, the holes of a bucket in a
// short slice sorted by (rank, address), descending, so that taking a
// bucket's best hole shortens the slice rather than moving it. It keeps the treap's order exactly
// (tier, size, rank, address), so plans do not depend on which index holds
// the holes; it is several times faster on the planner's pattern (a best-fit
// query, then the hole replaced by its smaller rest). See holes.go.

package defrag

import (
	"math/bits"
	"slices"
)

const (
	// bucketUnit is the size unit of the buckets: every allocator planned
	// for places blocks on 512-byte boundaries (minBlock).
	bucketUnit = minBlock
	// maxBuckets bounds the buckets per tier (sizes up to 32 MiB); larger
	// holes go to one sorted slice per tier.
	maxBuckets = 1 << 16
	// minBucketHoles is the smallest hole set worth a bucketed index.
	minBucketHoles = 256
	// bucketsPerHole bounds the buckets to a few per hole, so that one huge
	// hole (an arena's free tail) does not size the tables: larger holes go
	// to the sorted slices.
	bucketsPerHole = 8
	// maxBucketLen is the most holes of one size build accepts in a bucket
	// (inserting into a bucket moves its tail, up to 40 KiB): size-class
	// slots, thousands of one size, stay in the treap; the caching layout of
	// BenchmarkPlan has at most 721 holes of one size.
	maxBucketLen = 1024
)

// holeBuckets is the bucketed index of a holeSet (holeSet.bk).
type holeBuckets struct {
	nb      int         // buckets per tier: sizes of units [0, nb)
	idx     [2][]int32  // idx[tier][units]: 1 + index in lists, 0 for none yet
	lists   [][]hole    // one slice per bucket in use, sorted by cmpRankAddr descending
	bitmap  [2][]uint64 // bit u: bucket u of the tier is not empty
	summary [2][]uint64 // bit w: bitmap word w of the tier is not zero
	big     [2][]hole   // sizes of nb units or more, sorted by cmpHole
	scratch []hole      // reused by holeSet.holes
}

// bucketable says whether h can live in a bucketed index.
func bucketable(h hole) bool {
	return h.size > 0 && h.size%bucketUnit == 0 && (h.tier == 0 || h.tier == 1)
}

// newHoleBuckets returns an empty index for n holes of sizes up to maxSize.
func newHoleBuckets(maxSize int64, n int) *holeBuckets {
	nb := int(min(maxSize/bucketUnit+1, maxBuckets, int64(bucketsPerHole*n)))
	b := &holeBuckets{nb: nb}
	words := (nb + 63) / 64
	for t := range 2 {
		b.idx[t] = make([]int32, nb)
		b.bitmap[t] = make([]uint64, words)
		b.summary[t] = make([]uint64, (words+63)/64)
	}
	return b
}

// fill puts hs (distinct, in any order; bucketable but for holes of size 0,
// which it drops) into the empty index, or reports false, leaving it unusable,
// when more than maxBucketLen holes have one size:
// one counting pass sizes each bucket's slice in one shared array (with
// room for one more hole, which is what taking from a hole usually needs),
// then each bucket is sorted (unless it already is).
func (b *holeBuckets) fill(hs []hole) bool {
	var nbig [2]int
	nl := 0
	for _, h := range hs {
		if h.size <= 0 {
			continue
		}
		u := int(h.size / bucketUnit)
		if u >= b.nb {
			nbig[h.tier]++
			continue
		}
		if b.idx[h.tier][u] == 0 {
			nl++
			b.idx[h.tier][u] = -1 // counted below
		}
	}
	counts := make([]int32, 0, nl)
	for _, h := range hs {
		if h.size <= 0 {
			continue
		}
		u := int(h.size / bucketUnit)
		if u >= b.nb {
			continue
		}
		li := b.idx[h.tier][u]
		if li < 0 {
			counts = append(counts, 0)
			li = int32(len(counts))
			b.idx[h.tier][u] = li
		}
		counts[li-1]++
	}
	for _, c := range counts {
		if c > maxBucketLen {
			return false
		}
	}
	backing := make([]hole, 0, len(hs)-nbig[0]-nbig[1]+len(counts))
	b.lists = make([][]hole, len(counts))
	off := 0
	for i, c := range counts {
		b.lists[i] = backing[off : off : off+int(c)+1]
		off += int(c) + 1
	}
	backing = backing[:off]
	for t := range 2 {
		b.big[t] = make([]hole, 0, nbig[t])
	}
	for _, h := range hs {
		if h.size <= 0 {
			continue
		}
		u := int(h.size / bucketUnit)
		if u >= b.nb {
			b.big[h.tier] = append(b.big[h.tier], h)
			continue
		}
		li := b.idx[h.tier][u]
		if len(b.lists[li-1]) == 0 {
			b.setBit(h.tier, u)
		}
		b.lists[li-1] = append(b.lists[li-1], h)
	}
	for _, l := range b.lists {
		// planCompact lists its holes in (rank, address) order, which the
		// buckets keep: checking and reversing is cheaper than sorting.
		switch {
		case len(l) < 2:
		case slices.IsSortedFunc(l, cmpRankAddr):
			slices.Reverse(l)
		default:
			slices.SortFunc(l, cmpRankAddrDesc)
		}
	}
	for t := range 2 {
		slices.SortFunc(b.big[t], cmpHole)
	}
	return true
}

// cmpRankAddrDesc is the order of a bucket's slice: cmpRankAddr reversed.
func cmpRankAddrDesc(a, b hole) int { return cmpRankAddr(b, a) }

// cmpRankAddr orders the holes of one bucket (same tier and size).
func cmpRankAddr(a, b hole) int {
	if a.rank != b.rank {
		if a.rank < b.rank {
			return -1
		}
		return 1
	}
	return cmpAddr(a.addr, b.addr)
}

func (b *holeBuckets) setBit(t int8, u int) {
	w := u >> 6
	b.bitmap[t][w] |= 1 << (u & 63)
	b.summary[t][w>>6] |= 1 << (w & 63)
}

func (b *holeBuckets) clearBit(t int8, u int) {
	w := u >> 6
	b.bitmap[t][w] &^= 1 << (u & 63)
	if b.bitmap[t][w] == 0 {
		b.summary[t][w>>6] &^= 1 << (w & 63)
	}
}

// insert adds h (bucketable, not present).
func (b *holeBuckets) insert(h hole) {
	u := int(h.size / bucketUnit)
	if u >= b.nb {
		i, _ := slices.BinarySearchFunc(b.big[h.tier], h, cmpHole)
		b.big[h.tier] = slices.Insert(b.big[h.tier], i, h)
		return
	}
	li := b.idx[h.tier][u]
	if li == 0 {
		b.lists = append(b.lists, nil)
		li = int32(len(b.lists))
		b.idx[h.tier][u] = li
	}
	l := b.lists[li-1]
	if len(l) == 0 {
		b.setBit(h.tier, u)
	}
	i, _ := slices.BinarySearchFunc(l, h, cmpRankAddrDesc)
	b.lists[li-1] = slices.Insert(l, i, h)
}

// remove deletes h and reports whether it was there.
func (b *holeBuckets) remove(h hole) bool {
	u := int(h.size / bucketUnit)
	if u >= b.nb {
		i, found := slices.BinarySearchFunc(b.big[h.tier], h, cmpHole)
		if found {
			b.big[h.tier] = slices.Delete(b.big[h.tier], i, i+1)
		}
		return found
	}
	li := b.idx[h.tier][u]
	if li == 0 {
		return false
	}
	l := b.lists[li-1]
	i, found := slices.BinarySearchFunc(l, h, cmpRankAddrDesc)
	if !found {
		return false
	}
	if i == len(l)-1 {
		l = l[:i] // the bucket's best hole, the usual case
	} else {
		l = slices.Delete(l, i, i+1)
	}
	b.lists[li-1] = l
	if len(l) == 0 {
		b.clearBit(h.tier, u)
	}
	return true
}

// first returns the smallest hole of tier t (in cmpHole order) whose size
// is at least n.
func (b *holeBuckets) first(t int8, n int64) (hole, bool) {
	u := 0
	if n > 0 {
		u = int((n + bucketUnit - 1) / bucketUnit)
	}
	if u < b.nb {
		if v := b.nextBit(t, u); v >= 0 {
			l := b.lists[b.idx[t][v]-1]
			return l[len(l)-1], true
		}
	}
	big := b.big[t]
	i, _ := slices.BinarySearchFunc(big, n, func(h hole, n int64) int {
		if h.size < n {
			return -1
		}
		return 1
	})
	if i < len(big) {
		return big[i], true
	}
	return hole{}, false
}

// nextBit returns the first non-empty bucket of tier t at or above u, or -1.
func (b *holeBuckets) nextBit(t int8, u int) int {
	bm, sm := b.bitmap[t], b.summary[t]
	w := u >> 6
	if x := bm[w] >> (u & 63); x != 0 {
		return u + bits.TrailingZeros64(x)
	}
	w++
	for sw := w >> 6; sw < len(sm); sw++ {
		x := sm[sw]
		if sw == w>>6 {
			x &= ^uint64(0) << (w & 63) // words below w were looked at
		}
		if x != 0 {
			ww := sw<<6 + bits.TrailingZeros64(x)
			return ww<<6 + bits.TrailingZeros64(bm[ww])
		}
	}
	return -1
}

// all appends every hole of the index to dst.
func (b *holeBuckets) all(dst []hole) []hole {
	for _, l := range b.lists {
		dst = append(dst, l...)
	}
	return append(append(dst, b.big[0]...), b.big[1]...)
}
