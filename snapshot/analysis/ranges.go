package analysis

// rangeSet holds address ranges [lo, lo+size), keyed by lo (setting a key
// again replaces its size), and answers whether any overlaps a given range
// in O(log n): a treap ordered by lo whose nodes carry the largest end
// below them. It replaces a map scanned on every new segment of a replay,
// which made a replay over 45,000 segments quadratic, and answers exactly
// as that scan did, `a < lo+size && lo < a+n` in uint64 arithmetic, also
// for ranges whose end wraps past 2^64 (kept aside: a fresh address can
// only wrap after 2^64 bytes of segments, so there is at most a handful).
//
// The priorities are a hash of the key, so the shape, and everything else,
// is deterministic.
type rangeSet struct {
	root    *rangeNode
	wrapped map[uint64]int64 // ranges whose end wraps past 2^64
	free    *rangeNode       // removed nodes, reused
}

type rangeNode struct {
	lo, hi      uint64 // hi = lo + size, no wrap
	maxHi       uint64 // largest hi in this subtree
	prio        uint64
	left, right *rangeNode
}

// set adds [lo, lo+size) under key lo, replacing the range there if any.
func (s *rangeSet) set(lo uint64, size int64) {
	s.del(lo)
	hi := lo + uint64(size)
	if hi <= lo {
		if s.wrapped == nil {
			s.wrapped = map[uint64]int64{}
		}
		s.wrapped[lo] = size
		return
	}
	n := s.free
	if n != nil {
		s.free = n.right
		*n = rangeNode{}
	} else {
		n = &rangeNode{}
	}
	n.lo, n.hi, n.maxHi, n.prio = lo, hi, hi, mix(lo)
	s.root = insertNode(s.root, n)
}

// del removes the range keyed lo, if any.
func (s *rangeSet) del(lo uint64) {
	if _, ok := s.wrapped[lo]; ok {
		delete(s.wrapped, lo)
		return
	}
	var gone *rangeNode
	s.root, gone = deleteNode(s.root, lo)
	if gone != nil {
		gone.left, gone.right = nil, s.free
		s.free = gone
	}
}

// overlaps reports whether some range [lo, lo+n) has a < lo+n && lo < a+size
// (uint64 arithmetic, as the scan it replaces).
func (s *rangeSet) overlaps(a uint64, size int64) bool {
	end := a + uint64(size)
	for lo, n := range s.wrapped {
		if a < lo+uint64(n) && lo < end {
			return true
		}
	}
	// Among the ranges with lo < end, is the largest hi above a?
	for t := s.root; t != nil; {
		if t.lo >= end {
			t = t.left
			continue
		}
		// t and its whole left subtree have lo < end.
		if t.hi > a || (t.left != nil && t.left.maxHi > a) {
			return true
		}
		t = t.right
	}
	return false
}

func (n *rangeNode) fix() {
	n.maxHi = n.hi
	if n.left != nil && n.left.maxHi > n.maxHi {
		n.maxHi = n.left.maxHi
	}
	if n.right != nil && n.right.maxHi > n.maxHi {
		n.maxHi = n.right.maxHi
	}
}

// insertNode inserts n (its key absent from t) and returns the new root.
func insertNode(t, n *rangeNode) *rangeNode {
	if t == nil {
		return n
	}
	if n.lo < t.lo {
		t.left = insertNode(t.left, n)
		if t.left.prio > t.prio {
			l := t.left
			t.left, l.right = l.right, t
			t.fix()
			l.fix()
			return l
		}
	} else {
		t.right = insertNode(t.right, n)
		if t.right.prio > t.prio {
			r := t.right
			t.right, r.left = r.left, t
			t.fix()
			r.fix()
			return r
		}
	}
	t.fix()
	return t
}

// deleteNode removes key lo from t and returns the new root and the node
// removed (nil if absent).
func deleteNode(t *rangeNode, lo uint64) (*rangeNode, *rangeNode) {
	if t == nil {
		return nil, nil
	}
	var gone *rangeNode
	switch {
	case lo < t.lo:
		t.left, gone = deleteNode(t.left, lo)
	case lo > t.lo:
		t.right, gone = deleteNode(t.right, lo)
	default:
		return mergeNodes(t.left, t.right), t
	}
	t.fix()
	return t, gone
}

// mergeNodes joins two treaps, every key of l below every key of r.
func mergeNodes(l, r *rangeNode) *rangeNode {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case l.prio > r.prio:
		l.right = mergeNodes(l.right, r)
		l.fix()
		return l
	default:
		r.left = mergeNodes(l, r.left)
		r.fix()
		return r
	}
}

// mix is splitmix64's finaliser: a treap priority from a key.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
