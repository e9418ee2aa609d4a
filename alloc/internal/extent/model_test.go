package extent

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpufrag/gpufrag/internal/longtest"
)

// bitmap is the naive model: one bool per byte of a small address space that
// starts at base, true where the byte is free. Every query is a linear scan.
type bitmap struct {
	base uint64
	free []bool
}

// runs returns the maximal free runs in address order: what the Set's
// extents must be.
func (m *bitmap) runs() []Extent {
	var out []Extent
	for i := 0; i < len(m.free); {
		if !m.free[i] {
			i++
			continue
		}
		j := i
		for j < len(m.free) && m.free[j] {
			j++
		}
		out = append(out, Extent{m.base + uint64(i), int64(j - i)})
		i = j
	}
	return out
}

func (m *bitmap) bestFit(size int64) (Extent, bool) {
	var best Extent
	ok := false
	for _, e := range m.runs() {
		if e.Size >= size && (!ok || e.Size < best.Size) {
			best, ok = e, true
		}
	}
	return best, ok
}

func (m *bitmap) find(addr uint64) (Extent, bool) {
	for _, e := range m.runs() {
		if e.Addr <= addr && addr < e.End() {
			return e, true
		}
	}
	return Extent{}, false
}

// run returns the maximal run of bytes whose free flag equals state around
// offset i.
func (m *bitmap) run(i int, state bool) (lo, hi int) {
	lo, hi = i, i
	for lo > 0 && m.free[lo-1] == state {
		lo--
	}
	for hi < len(m.free) && m.free[hi] == state {
		hi++
	}
	return lo, hi
}

func (m *bitmap) set(lo, hi int, v bool) {
	for i := lo; i < hi; i++ {
		m.free[i] = v
	}
}

func compare(s *Set, m *bitmap) error {
	if err := s.CheckInvariants(); err != nil {
		return err
	}
	want := m.runs()
	var got []Extent
	for e := range s.All() {
		got = append(got, e)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("set %v\nmodel %v", got, want)
	}
	var total int64
	for _, e := range want {
		total += e.Size
	}
	if s.Total() != total || s.Len() != len(want) {
		return fmt.Errorf("total %d len %d, model %d %d", s.Total(), s.Len(), total, len(want))
	}
	return nil
}

// TestSetAgainstBitmap is the model test: random Insert, Take, BestFit,
// Find, Contains, Next, Prev, Largest and Clone calls on a Set and on a byte
// bitmap must agree after every step. Replay a failure with -rapid.seed.
func TestSetAgainstBitmap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 600).Draw(rt, "bytes")
		// A base near the top of the address space checks that nothing
		// assumes small addresses.
		base := rapid.SampledFrom([]uint64{0, 4096, 1 << 62}).Draw(rt, "base")
		m := &bitmap{base: base, free: make([]bool, n)}
		s := &Set{}
		// A zero Set keeps everything in a few address buckets; Init over
		// the range (or a part of it) spreads extents over many, so that
		// rewrites that cross buckets are exercised.
		if span := rapid.IntRange(0, n).Draw(rt, "init_span"); span > 0 {
			s.Init(base, int64(span))
		}
		var clones []struct {
			set   Set
			model []Extent
		}
		off := func(rt *rapid.T, label string) int { return rapid.IntRange(0, n-1).Draw(rt, label) }
		rt.Repeat(map[string]func(*rapid.T){
			"": func(rt *rapid.T) {
				if err := compare(s, m); err != nil {
					rt.Fatal(err)
				}
			},
			"insert": func(rt *rapid.T) {
				i := off(rt, "at")
				if m.free[i] {
					rt.Skip("byte is free")
				}
				lo, hi := m.run(i, false)
				a := rapid.IntRange(lo, hi-1).Draw(rt, "start")
				b := rapid.IntRange(a+1, hi).Draw(rt, "end")
				s.Insert(base+uint64(a), int64(b-a))
				m.set(a, b, true)
			},
			"insert_overlap": func(rt *rapid.T) {
				i := off(rt, "at")
				if !m.free[i] {
					rt.Skip("byte is not free")
				}
				a := rapid.IntRange(0, i).Draw(rt, "start")
				b := rapid.IntRange(i+1, n).Draw(rt, "end")
				before := s.String()
				func() {
					defer func() {
						if recover() == nil {
							rt.Fatalf("Insert over free byte %d did not panic", i)
						}
					}()
					s.Insert(base+uint64(a), int64(b-a))
				}()
				if s.String() != before {
					rt.Fatalf("failed Insert changed the set")
				}
			},
			"take": func(rt *rapid.T) {
				i := off(rt, "at")
				if !m.free[i] {
					rt.Skip("byte is not free")
				}
				lo, hi := m.run(i, true)
				a := rapid.IntRange(lo, hi-1).Draw(rt, "start")
				b := rapid.IntRange(a+1, hi).Draw(rt, "end")
				if !s.Take(base+uint64(a), int64(b-a)) {
					rt.Fatalf("Take(%d, %d) inside a free run failed", a, b-a)
				}
				m.set(a, b, false)
			},
			"take_bad": func(rt *rapid.T) {
				a := off(rt, "start")
				b := rapid.IntRange(a+1, n+3).Draw(rt, "end")
				whole := b <= n
				for j := a; whole && j < b; j++ {
					whole = m.free[j]
				}
				if whole {
					rt.Skip("range is free")
				}
				before := s.String()
				if s.Take(base+uint64(a), int64(b-a)) || s.String() != before {
					rt.Fatalf("Take of a range that is not wholly free succeeded or changed the set")
				}
			},
			"best_fit": func(rt *rapid.T) {
				size := rapid.Int64Range(1, int64(n)+1).Draw(rt, "size")
				got, ok := s.BestFit(size)
				want, wok := m.bestFit(size)
				if ok != wok || got != want {
					rt.Fatalf("BestFit(%d) = %v %v, model %v %v", size, got, ok, want, wok)
				}
			},
			"take_best_fit": func(rt *rapid.T) {
				size := rapid.Int64Range(1, int64(n)+1).Draw(rt, "size")
				want, wok := m.bestFit(size)
				got, ok := s.TakeBestFit(size)
				if ok != wok || (ok && got != want.Addr) {
					rt.Fatalf("TakeBestFit(%d) = %d %v, model %v %v", size, got-base, ok, want, wok)
				}
				if ok {
					m.set(int(got-base), int(got-base)+int(size), false)
				}
			},
			"largest": func(rt *rapid.T) {
				got, ok := s.Largest()
				want, wok := m.bestFit(1)
				for _, e := range m.runs() {
					if e.Size > want.Size {
						want = e
					}
				}
				if ok != wok || got != want {
					rt.Fatalf("Largest = %v %v, model %v %v", got, ok, want, wok)
				}
			},
			"find": func(rt *rapid.T) {
				a := base + uint64(rapid.IntRange(0, n).Draw(rt, "addr"))
				got, ok := s.Find(a)
				want, wok := m.find(a)
				if ok != wok || (ok && got != want) {
					rt.Fatalf("Find(%d) = %v %v, model %v %v", a-base, got, ok, want, wok)
				}
				size := rapid.Int64Range(1, int64(n)).Draw(rt, "size")
				if c, w := s.Contains(a, size), wok && a+uint64(size) <= want.End(); c != w {
					rt.Fatalf("Contains(%d, %d) = %v, model %v", a-base, size, c, w)
				}
			},
			"next_prev": func(rt *rapid.T) {
				a := base + uint64(rapid.IntRange(0, n).Draw(rt, "addr"))
				var next, prev Extent
				nok, pok := false, false
				for _, e := range m.runs() {
					if e.Addr >= a && !nok {
						next, nok = e, true
					}
					if e.Addr < a {
						prev, pok = e, true
					}
				}
				if g, ok := s.Next(a); ok != nok || (ok && g != next) {
					rt.Fatalf("Next(%d) = %v %v, model %v %v", a-base, g, ok, next, nok)
				}
				if g, ok := s.Prev(a); ok != pok || (ok && g != prev) {
					rt.Fatalf("Prev(%d) = %v %v, model %v %v", a-base, g, ok, prev, pok)
				}
			},
			"clone": func(rt *rapid.T) {
				clones = append(clones, struct {
					set   Set
					model []Extent
				}{s.Clone(), m.runs()})
			},
			"check_clones": func(rt *rapid.T) {
				for _, c := range clones {
					var got []Extent
					for e := range c.set.All() {
						got = append(got, e)
					}
					if err := c.set.CheckInvariants(); err != nil || fmt.Sprint(got) != fmt.Sprint(c.model) {
						rt.Fatalf("clone drifted (%v): %v, want %v", err, got, c.model)
					}
				}
			},
		})
	})
}

// TestSetStress runs the same model comparison over a larger space for many
// more steps than rapid's cases take, so that bins grow into chunked Sets
// whose chunks split and merge. The seed is fixed; a failure replays.
func TestSetStress(t *testing.T) {
	longtest.Skip(t)
	t.Run("init=none", func(t *testing.T) {
		s := stress(t, &Set{})
		// Everything landed in one address bin (the log-linear bins of a
		// zero Set put [2^40, 2^40+20000) in one), which grew past ordset's
		// 512 flat keys into a chunked Set: its paths ran too.
		first, _ := s.First()
		last, _ := s.Last()
		if !s.byAddr.SameBin(first.Addr, last.Addr) || s.Len() <= 512 {
			t.Fatalf("expected one big address bin: %v..%v, %d extents", first, last, s.Len())
		}
	})
	t.Run("init=range", func(t *testing.T) {
		s := &Set{}
		s.Init(1<<40, 20000)
		stress(t, s)
	})
}

func stress(t *testing.T, s *Set) *Set {
	const n = 20000
	r := rand.New(rand.NewPCG(5, 6))
	m := &bitmap{base: 1 << 40, free: make([]bool, n)}
	for step := range 40000 {
		i := r.IntN(n)
		if step%3 == 0 {
			size := int64(1 + r.IntN(40))
			want, wok := m.bestFit(size)
			got, ok := s.TakeBestFit(size)
			if ok != wok || (ok && got != want.Addr) {
				t.Fatalf("step %d: TakeBestFit(%d) = %d %v, model %v %v", step, size, got, ok, want, wok)
			}
			if ok {
				m.set(int(got-m.base), int(got-m.base)+int(size), false)
			}
			continue
		}
		if lo, hi := m.run(i, m.free[i]); m.free[i] {
			// Take a random piece of the free run, usually a small one.
			a := lo + r.IntN(hi-lo)
			b := a + 1 + r.IntN(min(hi-a, 64))
			if !s.Take(m.base+uint64(a), int64(b-a)) {
				t.Fatalf("step %d: Take failed", step)
			}
			m.set(a, b, false)
		} else {
			a := lo + r.IntN(hi-lo)
			b := a + 1 + r.IntN(min(hi-a, 48))
			s.Insert(m.base+uint64(a), int64(b-a))
			m.set(a, b, true)
		}
		if step%500 == 0 {
			if err := compare(s, m); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			size := int64(1 + r.IntN(200))
			got, ok := s.BestFit(size)
			want, wok := m.bestFit(size)
			if ok != wok || got != want {
				t.Fatalf("step %d: BestFit(%d) = %v, model %v", step, size, got, want)
			}
		}
	}
	if err := compare(s, m); err != nil {
		t.Fatal(err)
	}
	return s
}
