// Hole sets: the free ranges a planner may place blocks into.
// See doc.go for the overview.

package defrag

import (
	"math/bits"
	"slices"
)

// hole is one free range that may receive blocks. Blocks are placed at the low
// end of a hole, so a hole shrinks from its start.
type hole struct {
	tier int8   // 0: a segment that will be kept for sure; 1: one that might be evacuated
	rank int32  // destination preference among segments (lower first: fuller segments)
	seg  int32  // index of the segment in the layout
	size int64  // bytes
	addr uint64 // start
}

// less orders holes for best fit: tier, then size, then preference, then
// address, so that the first hole at or after (tier, n) is the smallest hole of
// that tier with room for n bytes.
func (h hole) less(o hole) bool { return cmpHole(h, o) < 0 }

// cmpHole is the three-way comparison behind less.
func cmpHole(h, o hole) int {
	switch {
	case h.tier != o.tier:
		if h.tier < o.tier {
			return -1
		}
		return 1
	case h.size != o.size:
		if h.size < o.size {
			return -1
		}
		return 1
	case h.rank != o.rank:
		if h.rank < o.rank {
			return -1
		}
		return 1
	case h.addr != o.addr:
		if h.addr < o.addr {
			return -1
		}
		return 1
	}
	return 0
}

// holeSet is a treap of holes ordered by hole.less: insert, delete and
// lower-bound queries in O(log n) expected time. Priorities come from a fixed
// hash of a counter, so the tree's shape (and therefore nothing else either)
// never depends on a random source. Nodes live in one slice and are
// recycled through a free list; the set allocates only while it grows.
type holeSet struct {
	nodes []treapNode
	root  int32
	free  int32 // head of recycled nodes, linked through left
	n     int
	bytes int64 // Σ sizes
	seq   uint64
	// dead marks segments whose holes must never be used again (evacuated
	// segments); nil means none. Their holes leave the set lazily.
	dead []bool
	// stash holds holes bestFit took out because their segment was excluded.
	stash []hole
	// bk, when not nil, holds the holes instead of the treap (see
	// holebuckets.go): build chooses it for large sets of 512-byte multiples.
	bk *holeBuckets
	// hint is the capacity newHoleSet was asked for: the treap's nodes are
	// allocated when first needed, so a set that build puts in buckets never
	// pays for them.
	hint int
}

type treapNode struct {
	h           hole
	prio        uint64
	left, right int32
}

const nilNode = -1

func newHoleSet(capacity int) *holeSet {
	return &holeSet{root: nilNode, free: nilNode, hint: capacity}
}

// splitmix64 is a fixed bijective mixer (Steele et al., SplitMix): it gives
// treap priorities that look random but are the same on every run.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (s *holeSet) newNode(h hole) int32 {
	s.seq++
	nd := treapNode{h: h, prio: splitmix64(s.seq), left: nilNode, right: nilNode}
	if s.free != nilNode {
		i := s.free
		s.free = s.nodes[i].left
		s.nodes[i] = nd
		return i
	}
	if s.nodes == nil {
		s.nodes = make([]treapNode, 0, max(s.hint, 1))
	}
	s.nodes = append(s.nodes, nd)
	return int32(len(s.nodes) - 1)
}

// split cuts tree t into keys < k and keys >= k.
func (s *holeSet) split(t int32, k hole) (int32, int32) {
	if t == nilNode {
		return nilNode, nilNode
	}
	if s.nodes[t].h.less(k) {
		l, r := s.split(s.nodes[t].right, k)
		s.nodes[t].right = l
		return t, r
	}
	l, r := s.split(s.nodes[t].left, k)
	s.nodes[t].left = r
	return l, t
}

// merge joins a and b where every key of a is below every key of b.
func (s *holeSet) merge(a, b int32) int32 {
	switch {
	case a == nilNode:
		return b
	case b == nilNode:
		return a
	case s.nodes[a].prio > s.nodes[b].prio:
		s.nodes[a].right = s.merge(s.nodes[a].right, b)
		return a
	default:
		s.nodes[b].left = s.merge(a, s.nodes[b].left)
		return b
	}
}

// insert adds h; holes of size 0 are not kept. It descends once, hangs the
// node as a leaf and rotates it up while its priority beats its parent's.
func (s *holeSet) insert(h hole) {
	if h.size <= 0 {
		return
	}
	if s.bk != nil {
		if bucketable(h) {
			s.n++
			s.bytes += h.size
			s.bk.insert(h)
			return
		}
		s.toTreap()
	}
	nd := s.newNode(h)
	s.n++
	s.bytes += h.size
	var path [96]int32 // ancestors; a treap of n nodes is ~2 ln n deep
	depth := 0
	t := s.root
	for t != nilNode && depth < len(path) {
		path[depth] = t
		depth++
		if h.less(s.nodes[t].h) {
			t = s.nodes[t].left
		} else {
			t = s.nodes[t].right
		}
	}
	if t != nilNode {
		// Pathologically deep (never seen): fall back to split and merge.
		s.n--
		s.bytes -= h.size
		l, r := s.split(s.root, h)
		s.root = s.merge(s.merge(l, nd), r)
		s.n++
		s.bytes += h.size
		return
	}
	if depth == 0 {
		s.root = nd
		return
	}
	p := path[depth-1]
	if h.less(s.nodes[p].h) {
		s.nodes[p].left = nd
	} else {
		s.nodes[p].right = nd
	}
	// Rotate up.
	for i := depth - 1; i >= 0; i-- {
		p := path[i]
		if s.nodes[nd].prio <= s.nodes[p].prio {
			break
		}
		if s.nodes[p].left == nd {
			s.nodes[p].left = s.nodes[nd].right
			s.nodes[nd].right = p
		} else {
			s.nodes[p].right = s.nodes[nd].left
			s.nodes[nd].left = p
		}
		if i == 0 {
			s.root = nd
		} else if g := path[i-1]; s.nodes[g].left == p {
			s.nodes[g].left = nd
		} else {
			s.nodes[g].right = nd
		}
	}
}

// remove deletes the hole equal to h, reporting whether it was there. It
// descends to the node, rotates it down below its higher-priority child
// until it has at most one child, and splices it out.
func (s *holeSet) remove(h hole) bool {
	if h.size <= 0 {
		return false
	}
	if s.bk != nil {
		if !bucketable(h) || !s.bk.remove(h) {
			return false
		}
		s.n--
		s.bytes -= h.size
		return true
	}
	parent, t := int32(nilNode), s.root
	for t != nilNode {
		c := cmpHole(h, s.nodes[t].h)
		if c == 0 {
			break
		}
		parent = t
		if c < 0 {
			t = s.nodes[t].left
		} else {
			t = s.nodes[t].right
		}
	}
	if t == nilNode {
		return false
	}
	link := func(parent, old, nw int32) {
		switch {
		case parent == nilNode:
			s.root = nw
		case s.nodes[parent].left == old:
			s.nodes[parent].left = nw
		default:
			s.nodes[parent].right = nw
		}
	}
	for {
		l, r := s.nodes[t].left, s.nodes[t].right
		if l == nilNode || r == nilNode {
			child := l
			if l == nilNode {
				child = r
			}
			link(parent, t, child)
			break
		}
		// Rotate the child with the higher priority above t.
		var up int32
		if s.nodes[l].prio > s.nodes[r].prio {
			up = l
			s.nodes[t].left = s.nodes[l].right
			s.nodes[l].right = t
		} else {
			up = r
			s.nodes[t].right = s.nodes[r].left
			s.nodes[r].left = t
		}
		link(parent, t, up)
		parent = up
	}
	s.nodes[t].left = s.free
	s.free = t
	s.n--
	s.bytes -= h.size
	return true
}

// build replaces the set's content by hs (which it sorts) in O(n log n) for
// the sort and O(n) for the tree: a Cartesian tree of the sorted holes by
// priority, built with a stack, is exactly the treap that inserting them one
// by one would give. Holes of size 0 are dropped.
func (s *holeSet) build(hs []hole) {
	s.stash = s.stash[:0]
	s.bk = nil
	if len(hs) >= minBucketHoles {
		var maxSize int64
		ok := true
		for _, h := range hs {
			if h.size > 0 && !bucketable(h) {
				ok = false
				break
			}
			maxSize = max(maxSize, h.size)
		}
		if ok {
			s.nodes, s.root, s.free, s.n, s.bytes = s.nodes[:0], nilNode, nilNode, 0, 0
			bk := newHoleBuckets(maxSize, len(hs))
			if bk.fill(hs) {
				s.bk = bk
				for _, h := range hs {
					if h.size > 0 {
						s.n++
						s.bytes += h.size
					}
				}
				return
			}
		}
	}
	s.buildTreap(hs)
}

// toTreap moves the holes of the bucketed index into the treap (for a hole
// the buckets cannot hold); the stash and dead marks are kept.
func (s *holeSet) toTreap() {
	hs := s.bk.all(nil)
	s.bk = nil
	s.buildTreap(hs)
}

// buildTreap replaces the treap's content by hs, as build describes.
func (s *holeSet) buildTreap(hs []hole) {
	order := holeOrder(hs)
	s.nodes, s.root, s.free, s.n, s.bytes = s.nodes[:0], nilNode, nilNode, 0, 0
	stack := make([]int32, 0, 64)
	for i := range hs {
		h := hs[i]
		if order != nil {
			h = hs[order[i]]
		}
		if h.size <= 0 {
			continue
		}
		nd := s.newNode(h)
		s.n++
		s.bytes += h.size
		last := int32(nilNode)
		for len(stack) > 0 && s.nodes[stack[len(stack)-1]].prio < s.nodes[nd].prio {
			last = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
		}
		s.nodes[nd].left = last
		if len(stack) > 0 {
			s.nodes[stack[len(stack)-1]].right = nd
		}
		stack = append(stack, nd)
	}
	if len(stack) > 0 {
		s.root = stack[0]
	}
}

// lowerBound returns the smallest hole not less than k.
func (s *holeSet) lowerBound(k hole) (hole, bool) {
	t, best := s.root, int32(nilNode)
	for t != nilNode {
		if s.nodes[t].h.less(k) {
			t = s.nodes[t].right
		} else {
			best = t
			t = s.nodes[t].left
		}
	}
	if best == nilNode {
		return hole{}, false
	}
	return s.nodes[best].h, true
}

// bestFit returns the smallest hole with room for n bytes, preferring tier 0
// over tier 1. Holes of segments marked dead (evacuated) are dropped from the
// set when met; holes of segment exclude are taken out and appended to
// s.stash, so the caller can put them back (restoreStash) or forget them.
// This lazy removal keeps a failed evacuation from paying for removing and
// reinserting all of its segment's holes.
func (s *holeSet) bestFit(n int64, exclude int32) (hole, bool) {
	for tier := int8(0); tier <= 1; tier++ {
		for {
			var h hole
			var ok bool
			if s.bk != nil {
				h, ok = s.bk.first(tier, n)
			} else {
				h, ok = s.lowerBound(hole{tier: tier, size: n, rank: -1 << 31})
			}
			if !ok || h.tier != tier {
				break
			}
			switch {
			case h.seg == exclude:
				s.remove(h)
				s.stash = append(s.stash, h)
			case s.dead != nil && s.dead[h.seg]:
				s.remove(h)
			default:
				return h, true
			}
		}
	}
	return hole{}, false
}

// restoreStash puts back the holes bestFit took out for an excluded segment.
func (s *holeSet) restoreStash() {
	for _, h := range s.stash {
		s.insert(h)
	}
	s.stash = s.stash[:0]
}

// take places n bytes at the start of h (which must be in the set) and
// returns the address; the rest of h stays in the set.
func (s *holeSet) take(h hole, n int64) uint64 {
	s.remove(h)
	rest := h
	rest.addr += uint64(n)
	rest.size -= n
	s.insert(rest)
	return h.addr
}

// untake reverses take(h, n).
func (s *holeSet) untake(h hole, n int64) {
	rest := h
	rest.addr += uint64(n)
	rest.size -= n
	s.remove(rest)
	s.insert(h)
}

// sortHoles sorts hs by cmpHole (holeOrder, then one permutation).
func sortHoles(hs []hole) {
	if order := holeOrder(hs); order != nil {
		sorted := make([]hole, len(hs))
		for i, j := range order {
			sorted[i] = hs[j]
		}
		copy(hs, sorted)
	}
}

// holeOrder returns the indices of hs in cmpHole order, or sorts hs in place
// and returns nil. When tier, size and rank pack into one 64-bit key (sizes
// below 2^40 and ranks below 2^23 do), it sorts small (key, address, index)
// records, which on a 100,000-block layout is several times faster than
// comparing 40-byte holes field by field; the order is the same, since the
// key orders (tier, size, rank) as cmpHole does and ties go to the address.
func holeOrder(hs []hole) []int32 {
	var maxSize int64
	var maxRank int32
	for _, h := range hs {
		if h.size < 0 || h.rank < 0 || h.tier < 0 || h.tier > 1 {
			slices.SortFunc(hs, cmpHole)
			return nil
		}
		maxSize = max(maxSize, h.size)
		maxRank = max(maxRank, h.rank)
	}
	rb := bits.Len32(uint32(maxRank))
	sb := bits.Len64(uint64(maxSize))
	if 1+sb+rb > 64 || len(hs) > 1<<31-1 {
		slices.SortFunc(hs, cmpHole)
		return nil
	}
	type rec struct {
		key, addr uint64
		i         int32
	}
	recs := make([]rec, len(hs))
	for i, h := range hs {
		recs[i] = rec{uint64(h.tier)<<(sb+rb) | uint64(h.size)<<rb | uint64(h.rank), h.addr, int32(i)}
	}
	slices.SortFunc(recs, func(a, b rec) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return cmpAddr(a.addr, b.addr)
	})
	order := make([]int32, len(hs))
	for i, r := range recs {
		order[i] = r.i
	}
	return order
}
