package ordset

import (
	"testing"

	"pgregory.net/rapid"
)

// TestBitmapModel checks mark, unmark, has, next and prev against an array
// of booleans, with bins drawn around word and summary-word boundaries so
// the multi-word paths of next and prev run.
func TestBitmapModel(t *testing.T) {
	const n = numWords * 64
	rapid.Check(t, func(rt *rapid.T) {
		var m bitmap
		var model [n]bool
		bin := rapid.Custom(func(t *rapid.T) int {
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 0:
				return rapid.IntRange(0, n-1).Draw(t, "b")
			case 1: // next to a word boundary
				return min(n-1, max(0, rapid.IntRange(0, numWords).Draw(t, "w")*64+rapid.IntRange(-2, 1).Draw(t, "d")))
			default: // next to the summary boundary (word 64) or the ends
				return rapid.SampledFrom([]int{0, 1, 4031, 4095, 4096, 4097, 4159, n - 2, n - 1}).Draw(t, "b")
			}
		})
		next := func(b int) int {
			for ; b < n; b++ {
				if model[b] {
					return b
				}
			}
			return -1
		}
		prev := func(b int) int {
			for ; b >= 0; b-- {
				if model[b] {
					return b
				}
			}
			return -1
		}
		for range rapid.IntRange(1, 200).Draw(rt, "ops") {
			b := bin.Draw(rt, "bin")
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0, 1:
				m.mark(b)
				model[b] = true
			default:
				m.unmark(b)
				model[b] = false
			}
			if m.has(b) != model[b] {
				rt.Fatalf("has(%d) = %v", b, m.has(b))
			}
			for _, q := range []int{b - 1, b, b + 1, 0, n - 1} {
				if q < 0 || q >= n {
					continue
				}
				if got, want := m.next(q), next(q); got != want {
					rt.Fatalf("next(%d) = %d, want %d", q, got, want)
				}
				if got, want := m.prev(q), prev(q); got != want {
					rt.Fatalf("prev(%d) = %d, want %d", q, got, want)
				}
			}
			if err := m.check(); err != nil {
				rt.Fatal(err)
			}
		}
		if m.next(n) != -1 || m.next(n+100) != -1 || m.prev(-1) != -1 {
			rt.Fatal("out-of-range queries")
		}
	})
}

// TestLinearBins checks the linear bin function at and past its ends, and
// the bucket width InitLinear derives from the span.
func TestLinearBins(t *testing.T) {
	var s Binned
	s.InitLinear(1000, linearBins<<3)
	for _, c := range []struct {
		hi   uint64
		want int
	}{{0, 0}, {999, 0}, {1000, 0}, {1007, 0}, {1008, 1}, {1000 + (linearBins-1)<<3, linearBins - 1}, {^uint64(0), linearBins - 1}} {
		if got := s.binOf(c.hi); got != c.want {
			t.Errorf("binOf(%d) = %d, want %d", c.hi, got, c.want)
		}
	}
	for _, c := range []struct {
		span  uint64
		shift uint
	}{{0, 64 - linearBits}, {1, 0}, {linearBins, 0}, {linearBins + 1, 1}, {linearBins << 3, 3}, {linearBins<<3 + 1, 4}, {^uint64(0), 64 - linearBits}} {
		s.InitLinear(0, c.span)
		if s.lin.shift != c.shift {
			t.Errorf("InitLinear(0, %d): shift %d, want %d", c.span, s.lin.shift, c.shift)
		}
	}
}
