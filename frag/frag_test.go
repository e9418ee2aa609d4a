package frag

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
)

const MiB = mem.MiB

// seg builds a segment at addr from (size, requested) pairs; requested 0
// means a free block.
func seg(addr uint64, blocks ...[2]int64) mem.Segment {
	s := mem.Segment{Addr: addr, Pool: "large"}
	at := addr
	for _, b := range blocks {
		st := mem.Free
		if b[1] > 0 {
			st = mem.Active
		}
		s.Blocks = append(s.Blocks, mem.Block{Addr: at, Size: b[0], Requested: b[1], State: st})
		at += uint64(b[0])
		s.Size += b[0]
	}
	return s
}

func layout(capacity, other int64, segs ...mem.Segment) mem.Layout {
	l := mem.Layout{Capacity: capacity, OtherUse: other, Segments: segs}
	l.DeviceFree = capacity - other - l.Classes().Reserved()
	return l
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestCompute(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    mem.Layout
		want Metrics
	}{
		{
			// Nothing reserved: health is 1 by definition, all ratios 0.
			name: "empty",
			l:    layout(100*MiB, 10*MiB),
			want: Metrics{Capacity: 100 * MiB, OtherUse: 10 * MiB, DeviceFree: 90 * MiB, Health: 1},
		},
		{
			// One 20 MiB segment, 4 MiB live (3 MiB requested), 16 MiB free in
			// one block: health 1, internal frag 1/4, 80% reserved unallocated.
			name: "one-free-block",
			l:    layout(100*MiB, 0, seg(0, [2]int64{4 * MiB, 3 * MiB}, [2]int64{16 * MiB, 0})),
			want: Metrics{Capacity: 100 * MiB, Reserved: 20 * MiB, Allocated: 4 * MiB, Requested: 3 * MiB,
				CachedFree: 16 * MiB, DeviceFree: 80 * MiB, LargestFreeBlock: 16 * MiB, Health: 1,
				InternalFrag: 0.25, UnallocReserved: 0.8, DistinctSizes: 1, Segments: 1, ActiveBlocks: 1, FreeBlocks: 1},
		},
		{
			// The textbook case: free memory scattered over two segments that
			// cannot merge. 8 + 4 + 4 MiB free, largest 8: health 0.5. Live sizes
			// 12, 2 and 10 MiB fall in two power-of-two buckets (2/3, 1/3):
			// entropy H(1/3, 2/3) = 0.918 bits.
			name: "scattered",
			l: layout(1024*MiB, 0,
				seg(0, [2]int64{8 * MiB, 0}, [2]int64{12 * MiB, 12 * MiB}),
				seg(uint64(20*MiB), [2]int64{4 * MiB, 0}, [2]int64{2 * MiB, 2 * MiB}, [2]int64{4 * MiB, 0}, [2]int64{10 * MiB, 10 * MiB})),
			want: Metrics{Capacity: 1024 * MiB, Reserved: 40 * MiB, Allocated: 24 * MiB, Requested: 24 * MiB,
				CachedFree: 16 * MiB, DeviceFree: 984 * MiB, LargestFreeBlock: 8 * MiB, Health: 0.5, FragRate: 0.5,
				UnallocReserved: 0.4, SizeEntropy: 0.9182958340544896, DistinctSizes: 3, Segments: 2, ActiveBlocks: 3, FreeBlocks: 3},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.l.Check(); err != nil {
				t.Fatal(err)
			}
			got := Compute(tc.l)
			if !near(got.SizeEntropy, tc.want.SizeEntropy) {
				t.Errorf("entropy %v, want %v", got.SizeEntropy, tc.want.SizeEntropy)
			}
			got.SizeEntropy = tc.want.SizeEntropy
			if got != tc.want {
				t.Errorf("Compute:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestRatios(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"health-no-free", Health(0, 0), 1},
		{"health-half", Health(5, 10), 0.5},
		{"frag-rate", FragRate(1, 4), 0.75},
		{"internal-none", InternalFrag(0, 0), 0},
		{"internal", InternalFrag(2048, 1536), 0.25},
		{"unalloc-none", UnallocatedReservedShare(0, 0), 0},
		{"unalloc", UnallocatedReservedShare(30, 120), 0.25},
		{"kv-none", KVWaste(0, 0), 0},
		{"kv", KVWaste(1000, 250), 0.75},
	} {
		if !near(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestSizeDispersion(t *testing.T) {
	for _, tc := range []struct {
		sizes    []int64
		entropy  float64
		distinct int
	}{
		{nil, 0, 0},
		{[]int64{512, 512, 512}, 0, 1},
		// 512 and 1000 share the [512, 1024) bucket: one bucket, two sizes.
		{[]int64{512, 1000}, 0, 2},
		// Two buckets, equally likely: 1 bit.
		{[]int64{512, 2048}, 1, 2},
		// Four buckets, equally likely: 2 bits.
		{[]int64{1, 4, 16, 64}, 2, 4},
	} {
		e, d := SizeDispersion(tc.sizes)
		if !near(e, tc.entropy) || d != tc.distinct {
			t.Errorf("SizeDispersion(%v) = %v, %d; want %v, %d", tc.sizes, e, d, tc.entropy, tc.distinct)
		}
	}
}

// The five memory classes add up to the capacity for any valid layout.
func TestClassesAddUp(t *testing.T) {
	l := layout(256*MiB, 32*MiB,
		seg(0, [2]int64{2 * MiB, MiB}, [2]int64{18 * MiB, 0}),
		seg(uint64(64*MiB), [2]int64{12 * MiB, 11 * MiB}))
	c := l.Classes()
	if c.Sum() != l.Capacity {
		t.Fatalf("classes %+v sum to %d, capacity %d", c, c.Sum(), l.Capacity)
	}
	m := Compute(l)
	if m.Requested+(m.Allocated-m.Requested)+m.CachedFree+m.DeviceFree+m.OtherUse != m.Capacity {
		t.Fatalf("metrics do not add up: %+v", m)
	}
}

func ExampleCompute() {
	l := layout(1024*MiB, 0,
		seg(0, [2]int64{8 * MiB, 0}, [2]int64{12 * MiB, 12 * MiB}),
		seg(uint64(20*MiB), [2]int64{8 * MiB, 0}, [2]int64{12 * MiB, 12 * MiB}))
	m := Compute(l)
	fmt.Printf("cached free %s, largest free block %s, health %.2f, frag rate %.2f\n",
		mem.FormatBytes(m.CachedFree), mem.FormatBytes(m.LargestFreeBlock), m.Health, m.FragRate)
	// Output: cached free 16MiB, largest free block 8MiB, health 0.50, frag rate 0.50
}
