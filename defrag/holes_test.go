package defrag

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestHoleSet checks the treap against a sorted slice under random inserts,
// removals, bulk builds and best-fit queries (with an excluded segment and
// dead segments).
func TestHoleSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		s := newHoleSet(0)
		var ref []hole
		mk := func() hole {
			return hole{tier: int8(r.IntN(2)), rank: int32(r.IntN(4)), seg: int32(r.IntN(8)),
				size: int64(1 + r.IntN(50)), addr: uint64(r.IntN(1000))}
		}
		if round%2 == 1 {
			for range 100 {
				ref = append(ref, mk())
			}
			slices.SortFunc(ref, cmpHole)
			ref = slices.CompactFunc(ref, func(a, b hole) bool { return a == b })
			s.build(slices.Clone(ref))
		}
		if round%4 == 3 {
			s.dead = make([]bool, 8)
			s.dead[3] = true
		}
		for range 3000 {
			switch r.IntN(3) {
			case 0:
				h := mk()
				if _, found := slices.BinarySearchFunc(ref, h, cmpHole); found {
					continue
				}
				s.insert(h)
				i, _ := slices.BinarySearchFunc(ref, h, cmpHole)
				ref = slices.Insert(ref, i, h)
			case 1:
				var h hole
				if len(ref) > 0 && r.IntN(4) > 0 {
					h = ref[r.IntN(len(ref))]
				} else {
					h = mk()
				}
				i, found := slices.BinarySearchFunc(ref, h, cmpHole)
				if got := s.remove(h); got != found {
					t.Fatalf("round %d: remove %+v: %v, want %v", round, h, got, found)
				}
				if found {
					ref = slices.Delete(ref, i, i+1)
				}
			case 2:
				n := int64(1 + r.IntN(60))
				exclude := int32(r.IntN(10)) // 8, 9: none
				got, ok := s.bestFit(n, exclude)
				// The reference: drop dead segments' holes met on the way
				// and stash the excluded one's, as bestFit does.
				var want hole
				wok := false
				for tier := int8(0); tier <= 1 && !wok; tier++ {
					for _, h := range ref {
						if h.tier != tier || h.size < n || h.seg == exclude || (s.dead != nil && s.dead[h.seg]) {
							continue
						}
						want, wok = h, true
						break
					}
				}
				if ok != wok || got != want {
					t.Fatalf("round %d: bestFit(%d, exclude %d) = %+v %v, want %+v %v", round, n, exclude, got, ok, want, wok)
				}
				// bestFit drops dead segments' holes and stashes the
				// excluded segment's: put the stash back, and let the
				// reference follow the dropped ones.
				s.restoreStash()
				ref = ref[:0]
				s.walk(func(h hole) { ref = append(ref, h) })
			}
			if s.n != len(ref) {
				t.Fatalf("round %d: size %d, want %d", round, s.n, len(ref))
			}
		}
		var bytes int64
		var got []hole
		s.walk(func(h hole) { got = append(got, h); bytes += h.size })
		if !slices.Equal(got, ref) || s.bytes != bytes {
			t.Fatalf("round %d: in-order walk differs from the reference (bytes %d, want %d)", round, s.bytes, bytes)
		}
		if !slices.IsSortedFunc(got, cmpHole) {
			t.Fatalf("round %d: walk not sorted", round)
		}
		// Heap order of priorities: what keeps the treap balanced.
		for i, nd := range s.nodes {
			for _, c := range []int32{nd.left, nd.right} {
				if c != nilNode && s.contains(nd.h) && s.nodes[c].prio > nd.prio {
					t.Fatalf("round %d: node %d has a child of higher priority", round, i)
				}
			}
		}
	}
}

// walk visits the holes in order (tests only).
func (s *holeSet) walk(f func(hole)) {
	var rec func(t int32)
	rec = func(t int32) {
		if t == nilNode {
			return
		}
		rec(s.nodes[t].left)
		f(s.nodes[t].h)
		rec(s.nodes[t].right)
	}
	rec(s.root)
}

// contains reports whether h is in the set (tests only).
func (s *holeSet) contains(h hole) bool {
	got, ok := s.lowerBound(h)
	return ok && got == h
}
