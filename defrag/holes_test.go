package defrag

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpufrag/gpufrag/internal/longtest"
)

// TestHoleSet checks the hole set against a sorted slice under random
// inserts, removals, bulk builds and best-fit queries (with an excluded
// segment and dead segments): the treap (sizes of bytes, small builds), and
// the bucketed index (sizes of 512-byte units, builds of minBucketHoles or
// more, later holes larger than any built, which go to its sorted slices, and
// now and then a hole it cannot hold, which moves everything to the treap).
func TestHoleSet(t *testing.T) {
	longtest.Skip(t)
	t.Run("treap", func(t *testing.T) { testHoleSet(t, 1, 100, 50, 50) })
	// Buckets over 1 and over 150 bitmap words (3 summary words).
	t.Run("buckets", func(t *testing.T) { testHoleSet(t, bucketUnit, 2*minBucketHoles, 30, 50) })
	t.Run("buckets-wide", func(t *testing.T) { testHoleSet(t, bucketUnit, 2*minBucketHoles, 9600, 12000) })
}

func testHoleSet(t *testing.T, unit int64, nbuild, buildMax, maxUnits int) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		s := newHoleSet(0)
		var ref []hole
		mkMax := func(maxUnits int) hole {
			size := int64(1+r.IntN(maxUnits)) * unit
			if unit > 1 && r.IntN(3000) == 0 {
				size++ // not a multiple of the unit
			}
			return hole{tier: int8(r.IntN(2)), rank: int32(r.IntN(4)), seg: int32(r.IntN(8)),
				size: size, addr: uint64(r.IntN(1000)) * uint64(unit)}
		}
		mk := func() hole { return mkMax(maxUnits) }
		if round%2 == 1 {
			for len(ref) < nbuild {
				h := mkMax(buildMax)
				h.size = h.size / unit * unit
				ref = append(ref, h)
				slices.SortFunc(ref, cmpHole)
				// Holes equal under cmpHole (the set's key; a planner's holes never
				// share an address) would make the reference ambiguous.
				ref = slices.CompactFunc(ref, func(a, b hole) bool { return cmpHole(a, b) == 0 })
			}
			s.build(slices.Clone(ref))
			if unit > 1 && s.bk == nil {
				t.Fatalf("round %d: %d holes of whole units built a treap", round, len(ref))
			}
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
				n := int64(1+r.IntN(maxUnits*6/5))*unit - int64(r.IntN(int(unit)))
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
	if s.bk != nil {
		hs := s.bk.all(nil)
		slices.SortFunc(hs, cmpHole)
		for _, h := range hs {
			f(h)
		}
		return
	}
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

// TestSortHoles checks the packed-key sort against cmpHole, on holes whose
// fields pack into one key and on holes too large to (the fallback).
func TestSortHoles(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		n := r.IntN(300)
		hs := make([]hole, n)
		for i := range hs {
			size := int64(1 + r.IntN(64))
			if round%5 == 4 {
				size <<= 50 // past the packed key: the field-by-field sort
			}
			hs[i] = hole{tier: int8(r.IntN(2)), rank: int32(r.IntN(6)), seg: int32(r.IntN(8)),
				size: size, addr: uint64(r.IntN(4000)) * 512}
		}
		want := slices.Clone(hs)
		slices.SortStableFunc(want, cmpHole)
		sortHoles(hs)
		for i := range hs {
			if cmpHole(hs[i], want[i]) != 0 {
				t.Fatalf("round %d: position %d holds %+v, want %+v", round, i, hs[i], want[i])
			}
		}
	}
}

// TestHoleSetChoosesIndex checks when build picks the bucketed index: sets of
// minBucketHoles or more holes of 512-byte multiples, no more than
// maxBucketLen of one size (size-class slots, all of a few sizes, stay in the
// treap), and none of another size.
func TestHoleSetChoosesIndex(t *testing.T) {
	mk := func(n int, size func(i int) int64) []hole {
		hs := make([]hole, n)
		for i := range hs {
			hs[i] = hole{seg: int32(i % 7), size: size(i), addr: uint64(i) << 30}
		}
		return hs
	}
	for _, c := range []struct {
		name    string
		hs      []hole
		buckets bool
	}{
		{"few", mk(minBucketHoles-1, func(i int) int64 { return int64(1+i) * 512 }), false},
		{"many sizes", mk(4*minBucketHoles, func(i int) int64 { return int64(1+i%300) * 512 }), true},
		{"slots", mk(maxBucketLen+1, func(int) int64 { return 64 << 10 }), false},
		{"unaligned", mk(4*minBucketHoles, func(i int) int64 { return int64(1+i)*512 + int64(i%2) }), false},
	} {
		s := newHoleSet(0)
		s.build(c.hs)
		if (s.bk != nil) != c.buckets || s.n != len(c.hs) {
			t.Errorf("%s: buckets %t with %d holes, want %t with %d", c.name, s.bk != nil, s.n, c.buckets, len(c.hs))
		}
	}
}
