package defrag

import (
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
)

// TestSortByRatioExact checks sortByRatio, which sorts packed floating-point
// keys and settles their ties exactly, against exact rational arithmetic, on
// segments built to tie: equal ratios of different sizes, ratios a few ulps
// apart, and operands past 2^53 (where floats are no longer exact).
func TestSortByRatioExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		n := 1 + r.IntN(300)
		pl := &planner{l: mem.Layout{Segments: make([]mem.Segment, n)}, segs: make([]segInfo, n)}
		big53 := round%4 == 3
		for i := range n {
			var size, live int64
			switch r.IntN(4) {
			case 0: // a 2 MiB page, live in 512-byte units: many exact ties
				size, live = 2*mem.MiB, 512*(1+r.Int64N(4096))
			case 1: // the same ratios on 3 × 2 MiB
				size, live = 6*mem.MiB, 3*512*(1+r.Int64N(4096))
			case 2: // ratios that differ in the last bits of a float
				size = 1<<52 + r.Int64N(1<<20)
				live = size/3 + r.Int64N(4)
			default:
				size = 1 + r.Int64N(1<<30)
				live = 1 + r.Int64N(size)
			}
			if big53 && r.IntN(8) == 0 {
				size = 1<<62 + r.Int64N(1<<40)
				live = size / 7
			}
			pl.l.Segments[i] = mem.Segment{Addr: uint64(i) << 40, Size: size}
			pl.segs[i].live = live
		}
		segs := make([]int32, n)
		for i := range segs {
			segs[i] = int32(i)
		}
		want := slices.Clone(segs)
		slices.SortFunc(want, func(a, b int32) int {
			sa, sb := pl.l.Segments[a], pl.l.Segments[b]
			ra := new(big.Rat).SetFrac64(pl.segs[a].live, sa.Size)
			rb := new(big.Rat).SetFrac64(pl.segs[b].live, sb.Size)
			if c := ra.Cmp(rb); c != 0 {
				return c
			}
			if c := cmpAddr(uint64(pl.segs[a].live), uint64(pl.segs[b].live)); c != 0 {
				return c
			}
			return cmpAddr(sa.Addr, sb.Addr)
		})
		r.Shuffle(n, func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
		sizes := make([]int64, n)
		pl.sortByRatio(segs, sizes)
		if !slices.Equal(segs, want) {
			t.Fatalf("round %d: order %v, want %v", round, segs, want)
		}
		for i, si := range segs {
			if sizes[i] != pl.l.Segments[si].Size {
				t.Fatalf("round %d: sizes[%d] = %d, want %d", round, i, sizes[i], pl.l.Segments[si].Size)
			}
		}
	}
}
