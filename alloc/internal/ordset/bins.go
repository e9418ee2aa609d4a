// Bins of a Binned set: the two bin functions, and the two-level bitmap of
// the non-empty bins. See package ordset for the overview.

package ordset

import "math/bits"

// Bins. Hi values below exactBins get a bin each; above, every power of two
// is cut into 1<<subBits bins. The caching allocator packs size/512 into Hi,
// so every size below 2 MiB (nearly all small-pool blocks) has a bin of its
// own, and a best-fit query usually touches one small sorted bin plus a
// bitmap step, instead of binary-searching a set of thousands of keys,
// whose mispredicted branches dominated the allocator's time (callgrind:
// 31 mispredictions per free+alloc pair before, 9 after). 32 bins per power
// of two keep a large-pool bin within 1/32 (3%) of its size.
const (
	exactBins = 1 << 12
	exactBits = 12 // log2(exactBins)
	subBits   = 5
	numBins   = exactBins + (64-exactBits)<<subBits // every uint64 Hi: 5,760 bins
)

// logBin maps Hi to its bin under the default, log-linear bin function. It
// is monotone (a larger Hi never gets a smaller bin), so the bins in order,
// each walked in order, give the keys in order.
func logBin(hi uint64) int {
	if hi < exactBins {
		return int(hi)
	}
	e := bits.Len64(hi) - 1 // 2^e <= hi < 2^(e+1), e >= exactBits
	return exactBins + (e-exactBits)<<subBits + int(hi>>(e-subBits))&(1<<subBits-1)
}

// linearBins is the number of bins of the linear bin function (InitLinear):
// 4096 buckets spread a device-sized range finely enough that a bucket holds
// a handful of extents in the arena benchmark (its ~1,600 free extents at
// 10,000 live blocks fall into ~150 of the 32 MiB buckets of its 72 GiB
// pool, ~10 each).
const (
	linearBits = 12
	linearBins = 1 << linearBits
)

// The bitmap is sized for numBins; the linear bins must fit (a negative
// constant does not convert).
const _ = uint(numBins - linearBins)

// linear is the bin function set by InitLinear: bucket (Hi-base)>>shift,
// clamped to [0, linearBins-1].
type linear struct {
	on    bool
	base  uint64
	shift uint
}

// InitLinear empties s and bins it by address instead of by size, for keys
// whose Hi is an address in [base, base+span): linearBins buckets of the
// smallest power of two that covers the span, Hi below base in the first
// and past the span in the last. A span of 0 is the whole space above base.
// The log-linear bins would crowd such keys into the few bins of the range's
// top power of two. The order of the keys does not depend on the bin
// function, only the cost.
func (s *Binned) InitLinear(base, span uint64) {
	shift := uint(64 - linearBits) // span 0: 2^64 bytes
	if span > 0 {
		shift = uint(max(0, bits.Len64(span-1)-linearBits))
	}
	s.Clear()
	s.lin = linear{on: true, base: base, shift: shift}
}

// binOf maps Hi to its bin: logBin, or the linear buckets of InitLinear.
// Both are monotone.
func (s *Binned) binOf(hi uint64) int {
	if s.lin.on {
		if hi < s.lin.base {
			return 0
		}
		return int(min((hi-s.lin.base)>>s.lin.shift, linearBins-1))
	}
	return logBin(hi)
}

// nbins is the number of bins of s's bin function.
func (s *Binned) nbins() int {
	if s.lin.on {
		return linearBins
	}
	return numBins
}

// numWords and numSum size the bitmap for every bin of either bin function
// (numBins ≥ linearBins).
const (
	numWords = (numBins + 63) / 64  // words of the used bitmap: 90
	numSum   = (numWords + 63) / 64 // words of the summary bitmap: 2
)

// bitmap records which bins are non-empty: bit b of used for bin b, and bit
// w of summary for word w of used, so that next and prev leave a word in at
// most numSum summary steps, each a TrailingZeros or LeadingZeros.
//
// Invariant: summary bit w is set iff used[w] != 0.
type bitmap struct {
	used    [numWords]uint64
	summary [numSum]uint64
}

func (m *bitmap) has(b int) bool { return m.used[b>>6]>>(b&63)&1 != 0 }

func (m *bitmap) mark(b int) {
	m.used[b>>6] |= 1 << (b & 63)
	m.summary[b>>12] |= 1 << ((b >> 6) & 63)
}

func (m *bitmap) unmark(b int) {
	w := b >> 6
	m.used[w] &^= 1 << (b & 63)
	if m.used[w] == 0 {
		m.summary[w>>6] &^= 1 << (w & 63)
	}
}

// next returns the first marked bin ≥ b (b ≥ 0), or -1.
func (m *bitmap) next(b int) int {
	w := b >> 6
	if w >= numWords {
		return -1
	}
	if x := m.used[w] >> (b & 63); x != 0 {
		return b + bits.TrailingZeros64(x)
	}
	for w++; w < numWords; w = (w | 63) + 1 {
		if x := m.summary[w>>6] >> (w & 63); x != 0 {
			w += bits.TrailingZeros64(x)
			return w<<6 | bits.TrailingZeros64(m.used[w])
		}
	}
	return -1
}

// prev returns the last marked bin ≤ b (b < numWords*64), or -1.
func (m *bitmap) prev(b int) int {
	if b < 0 {
		return -1
	}
	w := b >> 6
	if x := m.used[w] << (63 - b&63); x != 0 {
		return b - bits.LeadingZeros64(x)
	}
	for w--; w >= 0; w = w&^63 - 1 {
		if x := m.summary[w>>6] << (63 - w&63); x != 0 {
			w -= bits.LeadingZeros64(x)
			return w<<6 | (63 - bits.LeadingZeros64(m.used[w]))
		}
	}
	return -1
}

// check verifies the summary.
func (m *bitmap) check() error {
	for w, u := range m.used {
		if (u != 0) != (m.summary[w>>6]>>(w&63)&1 != 0) {
			return errorf("summary bit of word %d disagrees with %#x", w, u)
		}
	}
	return nil
}
