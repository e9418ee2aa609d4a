package extent

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// build returns a set holding the given [addr, end) pairs, inserted in order.
func build(t *testing.T, ranges ...[2]uint64) *Set {
	t.Helper()
	s := &Set{}
	for _, r := range ranges {
		s.Insert(r[0], int64(r[1]-r[0]))
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	return s
}

func list(s *Set) string {
	var parts []string
	for e := range s.All() {
		parts = append(parts, fmt.Sprintf("%d-%d", e.Addr, e.End()))
	}
	return strings.Join(parts, " ")
}

func TestInsertCoalesces(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before [][2]uint64
		insert [2]uint64
		after  string
	}{
		{"EmptySet", nil, [2]uint64{10, 20}, "10-20"},
		{"Isolated", [][2]uint64{{0, 5}, {30, 40}}, [2]uint64{10, 20}, "0-5 10-20 30-40"},
		{"MergeLeft", [][2]uint64{{0, 10}, {30, 40}}, [2]uint64{10, 20}, "0-20 30-40"},
		{"MergeRight", [][2]uint64{{0, 5}, {20, 40}}, [2]uint64{10, 20}, "0-5 10-40"},
		{"MergeBoth", [][2]uint64{{0, 10}, {20, 40}}, [2]uint64{10, 20}, "0-40"},
		{"FillsHoleAtZero", [][2]uint64{{1, 2}}, [2]uint64{0, 1}, "0-2"},
		{"GapOfOneLeft", [][2]uint64{{0, 9}}, [2]uint64{10, 20}, "0-9 10-20"},
		{"GapOfOneRight", [][2]uint64{{21, 30}}, [2]uint64{10, 20}, "10-20 21-30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := build(t, tc.before...)
			s.Insert(tc.insert[0], int64(tc.insert[1]-tc.insert[0]))
			if err := s.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			if got := list(s); got != tc.after {
				t.Errorf("got %q, want %q", got, tc.after)
			}
		})
	}
}

func TestInsertOverlapPanics(t *testing.T) {
	for _, r := range [][2]uint64{{5, 15}, {15, 25}, {10, 20}, {12, 13}, {0, 100}, {19, 21}} {
		t.Run(fmt.Sprint(r), func(t *testing.T) {
			s := build(t, [2]uint64{10, 20})
			defer func() {
				if recover() == nil {
					t.Errorf("Insert(%v) over 10-20 did not panic", r)
				}
				if got := list(s); got != "10-20" {
					t.Errorf("failed insert changed the set to %q", got)
				}
			}()
			s.Insert(r[0], int64(r[1]-r[0]))
		})
	}
	for _, bad := range []struct {
		addr uint64
		size int64
	}{{0, 0}, {0, -1}, {^uint64(0) - 3, 10}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Insert(%#x, %d) did not panic", bad.addr, bad.size)
				}
			}()
			(&Set{}).Insert(bad.addr, bad.size)
		}()
	}
}

func TestTake(t *testing.T) {
	for _, tc := range []struct {
		name  string
		take  [2]uint64
		ok    bool
		after string
	}{
		{"Whole", [2]uint64{0, 20}, true, "30-40"},
		{"LowEnd", [2]uint64{0, 4}, true, "4-20 30-40"},
		{"HighEnd", [2]uint64{16, 20}, true, "0-16 30-40"},
		{"Middle", [2]uint64{5, 7}, true, "0-5 7-20 30-40"},
		{"Exact", [2]uint64{30, 40}, true, "0-20"},
		{"AcrossGap", [2]uint64{15, 35}, false, "0-20 30-40"},
		{"InGap", [2]uint64{22, 25}, false, "0-20 30-40"},
		{"PastEnd", [2]uint64{38, 41}, false, "0-20 30-40"},
		{"Beyond", [2]uint64{50, 60}, false, "0-20 30-40"},
		{"Empty", [2]uint64{5, 5}, false, "0-20 30-40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := build(t, [2]uint64{0, 20}, [2]uint64{30, 40})
			ok := s.Take(tc.take[0], int64(tc.take[1]-tc.take[0]))
			if err := s.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || list(s) != tc.after {
				t.Errorf("Take(%v) = %v leaving %q; want %v leaving %q", tc.take, ok, list(s), tc.ok, tc.after)
			}
		})
	}
}

func TestBestFit(t *testing.T) {
	// Free: 0-8 (8), 10-14 (4), 20-24 (4), 30-46 (16), 50-58 (8).
	s := build(t, [2]uint64{0, 8}, [2]uint64{10, 14}, [2]uint64{20, 24}, [2]uint64{30, 46}, [2]uint64{50, 58})
	for _, tc := range []struct {
		size int64
		addr uint64
		ok   bool
	}{
		{1, 10, true},  // smallest extents are 4 bytes; lowest address wins
		{4, 10, true},  // exact fit
		{5, 0, true},   // two 8-byte extents; the one at 0
		{8, 0, true},   // exact, lowest address
		{9, 30, true},  // only the 16-byte extent
		{16, 30, true}, // exact
		{17, 0, false}, // nothing that large
	} {
		e, ok := s.BestFit(tc.size)
		if ok != tc.ok || (ok && e.Addr != tc.addr) {
			t.Errorf("BestFit(%d) = %v, %v; want addr %d, %v", tc.size, e, ok, tc.addr, tc.ok)
		}
	}
	if e, ok := s.Largest(); !ok || e != (Extent{30, 16}) {
		t.Errorf("Largest = %v, %v", e, ok)
	}
	s2 := build(t, [2]uint64{0, 8}, [2]uint64{10, 14}, [2]uint64{50, 58})
	if e, _ := s2.Largest(); e.Addr != 0 {
		t.Errorf("Largest among equal sizes = %v, want the one at 0", e)
	}
}

func TestFindNextPrev(t *testing.T) {
	s := build(t, [2]uint64{10, 20}, [2]uint64{30, 40})
	for _, tc := range []struct {
		addr uint64
		find string
		next string
		prev string
	}{
		{0, "-", "10-20", "-"},
		{10, "10-20", "10-20", "-"},
		{19, "10-20", "30-40", "10-20"},
		{20, "-", "30-40", "10-20"},
		{30, "30-40", "30-40", "10-20"},
		{39, "30-40", "-", "30-40"},
		{40, "-", "-", "30-40"},
	} {
		show := func(e Extent, ok bool) string {
			if !ok {
				return "-"
			}
			return fmt.Sprintf("%d-%d", e.Addr, e.End())
		}
		if got := show(s.Find(tc.addr)); got != tc.find {
			t.Errorf("Find(%d) = %s, want %s", tc.addr, got, tc.find)
		}
		if got := show(s.Next(tc.addr)); got != tc.next {
			t.Errorf("Next(%d) = %s, want %s", tc.addr, got, tc.next)
		}
		if got := show(s.Prev(tc.addr)); got != tc.prev {
			t.Errorf("Prev(%d) = %s, want %s", tc.addr, got, tc.prev)
		}
	}
	if !s.Contains(12, 8) || s.Contains(12, 9) || s.Contains(20, 1) || s.Contains(12, 0) {
		t.Error("Contains is wrong at the edges")
	}
	if f, _ := s.First(); f.Addr != 10 {
		t.Errorf("First = %v", f)
	}
	if l, _ := s.Last(); l.Addr != 30 {
		t.Errorf("Last = %v", l)
	}
	var back []uint64
	for e := range s.Backward() {
		back = append(back, e.Addr)
	}
	if !slices.Equal(back, []uint64{30, 10}) {
		t.Errorf("Backward = %v", back)
	}
}

func TestCloneIsIndependent(t *testing.T) {
	s := &Set{}
	s.Init(0, 1<<40)     // address buckets of 256 MiB: all in the first
	for i := range 600 { // more than 512 keys in one bin: a chunked Set
		s.Insert(uint64(i)*10, 5)
	}
	c := s.Clone()
	s.Take(0, 5)
	s.Insert(5, 5) // merges with 10-15
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 600 || c.Total() != 3000 || c.Equal(s) {
		t.Errorf("clone changed with the original: len %d total %d", c.Len(), c.Total())
	}
	c2 := c.Clone()
	if !c2.Equal(&c) {
		t.Error("clone of a clone differs")
	}
}

func TestCheckInvariantsCatchesDamage(t *testing.T) {
	s := build(t, [2]uint64{0, 10}, [2]uint64{20, 30})
	s.total++
	if err := s.CheckInvariants(); !errors.Is(err, ErrBroken) {
		t.Errorf("wrong total not caught: %v", err)
	}
	s = build(t, [2]uint64{0, 10}, [2]uint64{20, 30})
	s.bySize.Delete(sizeKey(20, 10))
	s.bySize.Insert(sizeKey(21, 10))
	if err := s.CheckInvariants(); !errors.Is(err, ErrBroken) {
		t.Errorf("index mismatch not caught: %v", err)
	}
	s = build(t, [2]uint64{0, 10}, [2]uint64{20, 30})
	p, _, _ := s.byAddr.Below(key{Hi: 20})
	s.byAddr.SetAt(p, addrKey(0, 20)) // now touches 20-30
	if err := s.CheckInvariants(); !errors.Is(err, ErrBroken) {
		t.Errorf("touching extents not caught: %v", err)
	}
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	s := &Set{}
	r := rand.New(rand.NewPCG(3, 4))
	const n = 5000
	for i := range n {
		s.Insert(uint64(i)*1024, 512)
	}
	step := func() {
		i := uint64(r.IntN(n))
		if s.Take(i*1024, 512) {
			s.Insert(i*1024+128, 256)
			s.Take(i*1024+128, 256)
		}
		s.Insert(i*1024, 512)
	}
	for range 10000 {
		step()
	}
	if got := testing.AllocsPerRun(1000, step); got != 0 {
		t.Errorf("steady state allocates %.1f times per step", got)
	}
}

// TestNearTopOfAddressSpace: extents that end just below 2^64, in a set
// tuned for a range at the top and in a zero Set, coalesce, split and are
// found like any others, and a range that would wrap past 2^64 (or end
// exactly there, where End would read 0) is refused by Insert and Take.
func TestNearTopOfAddressSpace(t *testing.T) {
	const top = math.MaxUint64 // the last address; an extent may end here
	for _, tuned := range []bool{true, false} {
		s := &Set{}
		span := int64(1) << 52
		if tuned {
			s.Init(top-uint64(span), span)
		}
		a := uint64(top - 3<<20)
		s.Insert(a, 1<<20)             // [top-3M, top-2M)
		s.Insert(a+2<<20, 1<<20)       // [top-1M, top): ends at the last address
		s.Insert(a+1<<20, 1<<20)       // fills the gap: one extent to the top
		s.Insert(top-uint64(span), 64) // far below, in the first bucket
		if err := s.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
		if e, ok := s.Find(top - 1); !ok || e.Addr != a || e.End() != top {
			t.Fatalf("tuned=%v: Find(top-1) = %v, %v", tuned, e, ok)
		}
		if e, ok := s.BestFit(1 << 21); !ok || e.Addr != a {
			t.Fatalf("tuned=%v: BestFit(2MiB) = %v, %v", tuned, e, ok)
		}
		if e, ok := s.Largest(); !ok || e.Size != 3<<20 {
			t.Fatalf("tuned=%v: Largest = %v, %v", tuned, e, ok)
		}
		if !s.Take(top-100, 99) || s.Contains(top-100, 1) || !s.Contains(top-101, 1) {
			t.Fatalf("tuned=%v: Take of the last 99 bytes: %s", tuned, s)
		}
		if e, ok := s.Prev(top); !ok || e.Addr != top-1 || e.Size != 1 {
			t.Fatalf("tuned=%v: Prev(top) = %v, %v, want the last byte", tuned, e, ok)
		}
		if e, ok := s.Prev(top - 1); !ok || e.End() != top-100 {
			t.Fatalf("tuned=%v: Prev(top-1) = %v, %v", tuned, e, ok)
		}
		if s.Take(top-10, 20) {
			t.Fatalf("tuned=%v: a Take that wraps past 2^64 succeeded", tuned)
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
		for _, bad := range [][2]uint64{{top - 10, 11}, {top - 10, 20}, {top, 1 << 62}} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("tuned=%v: Insert(%#x, %d) that wraps did not panic", tuned, bad[0], bad[1])
					}
				}()
				s.Insert(bad[0], int64(bad[1]))
			}()
		}
	}
}
