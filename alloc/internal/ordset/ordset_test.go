package ordset

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// set is what Set and Binned have in common.
type set interface {
	Len() int
	Insert(Key) bool
	Delete(Key) bool
	Has(Key) bool
	LowerBound(Key) (Key, bool)
	Ascend(Key, func(Key) bool)
	Descend(Key, func(Key) bool)
	All(func(Key) bool)
	Check() error
	Max() (Key, bool)
	findDelete(Key) (Key, bool)
}

// findDelete removes and returns the smallest key ≥ k with Find and DeleteAt.
func (s *Set) findDelete(k Key) (Key, bool) {
	p, x, ok := s.Find(k)
	if ok {
		s.DeleteAt(p)
	}
	return x, ok
}

func (s *Binned) findDelete(k Key) (Key, bool) {
	p, x, ok := s.Find(k)
	if ok {
		s.DeleteAt(p)
	}
	return x, ok
}

// TestModel checks the set against a sorted slice under random inserts,
// deletes and queries.
func TestModel(t *testing.T) {
	testModel(t, func() set { return new(Set) }, func(s set) set { c := s.(*Set).Clone(); return &c },
		func(t *rapid.T) Key {
			return Key{Hi: rapid.Uint64Range(0, 100).Draw(t, "hi"), Lo: rapid.Uint64Range(0, 5).Draw(t, "lo")}
		})
}

// TestBinnedModel is TestModel for Binned, with Hi drawn around bin
// boundaries: exact bins, the first log-scale bins, and the top of the range,
// and with many keys in two bins, so bins grow past maxFlat into Sets and
// shrink back.
func TestBinnedModel(t *testing.T) {
	hi := func(t *rapid.T) uint64 {
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			return rapid.Uint64Range(0, 100).Draw(t, "hi")
		case 1:
			return rapid.Uint64Range(exactBins-80, exactBins+300).Draw(t, "hi")
		case 2:
			e := rapid.IntRange(exactBits, 63).Draw(t, "e")
			return 1<<e + rapid.Uint64Range(0, 3).Draw(t, "d")<<(e-subBits) - rapid.Uint64Range(0, 2).Draw(t, "m")
		default:
			return ^uint64(0) - rapid.Uint64Range(0, 2).Draw(t, "hi")
		}
	}
	testModel(t, func() set { return new(Binned) }, func(s set) set { c := s.(*Binned).Clone(); return &c },
		func(t *rapid.T) Key {
			if rapid.Bool().Draw(t, "crowd") {
				// Crowd bin 7 (exact) or the first log-scale bin.
				h := rapid.SampledFrom([]uint64{7, exactBins, exactBins + 1}).Draw(t, "hi")
				return Key{Hi: h, Lo: rapid.Uint64Range(0, 3*maxFlat).Draw(t, "lo")}
			}
			return Key{Hi: hi(t), Lo: rapid.Uint64Range(0, 5).Draw(t, "lo")}
		})
}

func TestLogBin(t *testing.T) {
	prev := -1
	for _, hi := range []uint64{0, 1, exactBins - 1, exactBins, exactBins + 1<<(exactBits-subBits) - 1, exactBins + 1<<(exactBits-subBits), 1 << 40, 1<<41 - 1, ^uint64(0)} {
		b := logBin(hi)
		if b < prev || b >= numBins {
			t.Fatalf("logBin(%#x) = %d after %d (numBins %d)", hi, b, prev, numBins)
		}
		prev = b
	}
	if logBin(^uint64(0)) != numBins-1 || logBin(exactBins) != exactBins || logBin(exactBins+1<<(exactBits-subBits)) != exactBins+1 {
		t.Fatal("bin boundaries")
	}
}

// testModel checks a set against a sorted slice through random operations.
// Every key drawn carries a random ID, the payload the sets keep beside a
// key but do not order by: comparisons of whole keys (LowerBound, Ascend,
// Descend, Max, All) then fail where a set loses or swaps the ID it keeps
// (a key equal to one present keeps its first ID, as the model does).
func testModel(t *testing.T, newSet func() set, clone func(set) set, gen func(*rapid.T) Key) {
	rapid.Check(t, func(rt *rapid.T) {
		s := newSet()
		var model []Key
		key := rapid.Custom(func(t *rapid.T) Key {
			k := gen(t)
			k.ID = rapid.Int32Range(0, 1<<20).Draw(t, "id")
			return k
		})
		cmp := func(x, y Key) int {
			if x.Less(y) {
				return -1
			}
			if y.Less(x) {
				return 1
			}
			return 0
		}
		rt.Repeat(map[string]func(*rapid.T){
			"": func(rt *rapid.T) {
				if err := s.Check(); err != nil {
					rt.Fatal(err)
				}
				if s.Len() != len(model) {
					rt.Fatalf("len %d, model %d", s.Len(), len(model))
				}
			},
			"insert": func(rt *rapid.T) {
				for range rapid.IntRange(1, 200).Draw(rt, "n") {
					k := key.Draw(rt, "k")
					i, found := slices.BinarySearchFunc(model, k, cmp)
					if s.Insert(k) == found {
						rt.Fatalf("insert %v: found=%v", k, found)
					}
					if !found {
						model = slices.Insert(model, i, k)
					}
				}
			},
			"delete": func(rt *rapid.T) {
				for range rapid.IntRange(1, 80).Draw(rt, "n") {
					k := key.Draw(rt, "k")
					i, found := slices.BinarySearchFunc(model, k, cmp)
					if s.Delete(k) != found {
						rt.Fatalf("delete %v: found=%v", k, found)
					}
					if found {
						model = slices.Delete(model, i, i+1)
					}
				}
			},
			"query": func(rt *rapid.T) {
				k := key.Draw(rt, "k")
				i, _ := slices.BinarySearchFunc(model, k, cmp)
				got, ok := s.LowerBound(k)
				if ok != (i < len(model)) || (ok && got != model[i]) {
					rt.Fatalf("LowerBound(%v) = %v,%v; model index %d", k, got, ok, i)
				}
				var asc []Key
				s.Ascend(k, func(x Key) bool { asc = append(asc, x); return len(asc) < 7 })
				want := model[i:min(len(model), i+7)]
				if !slices.Equal(asc, want) {
					rt.Fatalf("Ascend(%v) = %v, want %v", k, asc, want)
				}
				j, found := slices.BinarySearchFunc(model, k, cmp)
				if !found {
					j--
				}
				var desc []Key
				s.Descend(k, func(x Key) bool { desc = append(desc, x); return len(desc) < 7 })
				var wantD []Key
				for x := j; x >= 0 && len(wantD) < 7; x-- {
					wantD = append(wantD, model[x])
				}
				if !slices.Equal(desc, wantD) {
					rt.Fatalf("Descend(%v) = %v, want %v", k, desc, wantD)
				}
				if s.Has(k) != found {
					rt.Fatalf("Has(%v)", k)
				}
			},
			"findDelete": func(rt *rapid.T) {
				k := key.Draw(rt, "k")
				i, _ := slices.BinarySearchFunc(model, k, cmp)
				got, ok := s.findDelete(k)
				if ok != (i < len(model)) || (ok && got != model[i]) {
					rt.Fatalf("findDelete(%v) = %v,%v; model index %d", k, got, ok, i)
				}
				if ok {
					model = slices.Delete(model, i, i+1)
				}
			},
			"max": func(rt *rapid.T) {
				got, ok := s.Max()
				if ok != (len(model) > 0) || (ok && got != model[len(model)-1]) {
					rt.Fatalf("Max = %v,%v", got, ok)
				}
			},
			"all": func(rt *rapid.T) {
				var all []Key
				s.All(func(x Key) bool { all = append(all, x); return true })
				if !slices.Equal(all, model) {
					rt.Fatalf("All = %v, want %v", all, model)
				}
			},
			"clone": func(rt *rapid.T) {
				c := clone(s)
				if err := c.Check(); err != nil || c.Len() != s.Len() {
					rt.Fatalf("clone: %v", err)
				}
				c.Insert(Key{Hi: 999, Lo: 99})
				if s.Has(Key{Hi: 999, Lo: 99}) {
					rt.Fatal("clone shares storage")
				}
			},
		})
	})
}

// go test ./alloc/internal/ordset/ -run '^$' -bench . -benchmem
func BenchmarkInsertDelete(b *testing.B) {
	var s Set
	for i := range 10000 {
		s.Insert(Key{Hi: uint64(i * 7919 % 10007), Lo: uint64(i)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := Key{Hi: uint64(i * 31 % 10007), Lo: 1 << 40}
		s.Insert(k)
		s.Delete(k)
	}
}

// TestBinnedBigBin grows one bin past maxFlat into a Set and empties it
// again, by Delete and by Find+DeleteAt, checking the order throughout.
func TestBinnedBigBin(t *testing.T) {
	for _, byFind := range []bool{false, true} {
		var s Binned
		s.Insert(Key{Hi: 3})
		s.Insert(Key{Hi: 9})
		for i := range 2*maxFlat + 5 {
			s.Insert(Key{Hi: 7, Lo: uint64(i * 37 % (2*maxFlat + 5))})
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
		}
		if s.bigSet(7) == nil {
			t.Fatal("bin 7 not big")
		}
		for i := range 2*maxFlat + 5 {
			var got Key
			if byFind {
				p, x, ok := s.Find(Key{Hi: 4})
				if !ok {
					t.Fatal("Find failed")
				}
				got = x
				s.DeleteAt(p)
			} else {
				got = Key{Hi: 7, Lo: uint64(i)}
				if !s.Delete(got) {
					t.Fatalf("Delete %v", got)
				}
			}
			if got != (Key{Hi: 7, Lo: uint64(i)}) {
				t.Fatalf("step %d: got %v", i, got)
			}
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
			var all []Key
			s.All(func(k Key) bool { all = append(all, k); return true })
			if len(all) != s.Len() || all[0] != (Key{Hi: 3}) || all[len(all)-1] != (Key{Hi: 9}) {
				t.Fatalf("step %d: All = %v", i, all)
			}
		}
		if s.Len() != 2 || s.bigSet(7) != nil || s.nonEmpty(7) {
			t.Fatalf("bin 7 not emptied: len %d", s.Len())
		}
	}
}

// findDelete uses TakeFirst (with no limit) for even Lo, Find and
// DeleteAt for odd.
func (s *Classed) findDelete(k Key) (Key, bool) {
	if k.Lo%2 == 0 {
		return s.TakeFirst(k, ^uint64(0))
	}
	p, x, ok := s.Find(k)
	if ok {
		s.DeleteAt(p, x)
	}
	return x, ok
}

// TestClassedTakeFirstLimit: TakeFirst takes the smallest key ≥ k only if
// its Hi is at most the limit, from a flat bin and from rest.
func TestClassedTakeFirstLimit(t *testing.T) {
	var s Classed
	for _, k := range []Key{{Hi: 3, Lo: 20}, {Hi: 3, Lo: 10}, {Hi: 9, Lo: 5}, {Hi: numBins + 5, Lo: 1}} {
		s.Insert(k)
	}
	for _, c := range []struct {
		k     Key
		limit uint64
		want  Key
		ok    bool
	}{
		{Key{Hi: 3}, 2, Key{}, false},
		{Key{Hi: 3}, 3, Key{Hi: 3, Lo: 10}, true},
		{Key{Hi: 3, Lo: 11}, 3, Key{Hi: 3, Lo: 20}, true},
		{Key{Hi: 3}, 8, Key{}, false},
		{Key{Hi: 3}, 9, Key{Hi: 9, Lo: 5}, true},
		{Key{Hi: 0}, numBins + 4, Key{}, false},
		{Key{Hi: 0}, numBins + 5, Key{Hi: numBins + 5, Lo: 1}, true},
		{Key{Hi: 0}, ^uint64(0), Key{}, false},
	} {
		got, ok := s.TakeFirst(c.k, c.limit)
		if got != c.want || ok != c.ok {
			t.Fatalf("TakeFirst(%v, %d) = %v, %v; want %v, %v", c.k, c.limit, got, ok, c.want, c.ok)
		}
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClassedModel is TestModel for Classed, with classes drawn among the
// flat bins, around their end (numBins) and far above it, and with many
// keys in two classes (one flat, the last flat one), so bins grow past
// maxFlat and spill into rest; and again with flat bins of at most 4 keys,
// so that spills are common.
func TestClassedModel(t *testing.T) {
	t.Run("flat=maxFlat", func(t *testing.T) { testClassedModel(t) })
	t.Run("flat=4", func(t *testing.T) {
		classFlat = 4
		defer func() { classFlat = maxFlat }()
		testClassedModel(t)
	})
	// Bins bucketed from 4 keys besides the top (flat again at 1),
	// rebucketed when a bucket passes 4 keys; and so, also spilled at 12.
	t.Run("bucket=4", func(t *testing.T) {
		classBucket, bucketMax = 4, 4
		defer func() { classBucket, bucketMax = 32, 32 }()
		testClassedModel(t)
	})
	t.Run("bucket=4,flat=12", func(t *testing.T) {
		classBucket, bucketMax, classFlat = 4, 4, 12
		defer func() { classBucket, bucketMax, classFlat = 32, 32, maxFlat }()
		testClassedModel(t)
	})
}

func testClassedModel(t *testing.T) {
	testModel(t, func() set { return new(Classed) }, func(s set) set { c := s.(*Classed).Clone(); return &c },
		func(t *rapid.T) Key {
			if rapid.Bool().Draw(t, "crowd") {
				h := rapid.SampledFrom([]uint64{7, numBins - 1}).Draw(t, "hi")
				// Lo in a small range, spread over a wide one (so that
				// a bucketed bin's keys clamp into its first and last
				// buckets), or in two clusters far apart (so that most
				// keys crowd into two buckets, and rebucket).
				switch rapid.IntRange(0, 2).Draw(t, "spread") {
				case 0:
					return Key{Hi: h, Lo: rapid.Uint64Range(0, 3*maxFlat).Draw(t, "lo")}
				case 1:
					return Key{Hi: h, Lo: rapid.Uint64().Draw(t, "lo") >> rapid.UintRange(0, 63).Draw(t, "sh")}
				default:
					return Key{Hi: h, Lo: rapid.SampledFrom([]uint64{0, 1 << 40}).Draw(t, "base") + rapid.Uint64Range(0, 40).Draw(t, "lo")}
				}
			}
			var h uint64
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 0:
				h = rapid.Uint64Range(0, 100).Draw(t, "hi")
			case 1:
				h = rapid.Uint64Range(numBins-70, numBins+70).Draw(t, "hi")
			default:
				h = ^uint64(0) - rapid.Uint64Range(0, 2).Draw(t, "hi")
			}
			return Key{Hi: h, Lo: rapid.Uint64Range(0, 5).Draw(t, "lo")}
		})
}

// TestClassedBuckets fills one class past classBucket in random order,
// takes, deletes and re-inserts, and checks the set against a sorted model
// after each step: the buckets' spills, refills and rebucketings, and the
// buckets emptied by deletes (which drop them), for default and small
// thresholds.
func TestClassedBuckets(t *testing.T) {
	for _, c := range []struct{ bucket, max int }{{32, 32}, {4, 4}, {8, 2}} {
		classBucket, bucketMax = c.bucket, c.max
		r := rand.New(rand.NewPCG(uint64(c.bucket), uint64(c.max)))
		var s Classed
		var model []uint64 // Lo of the keys of class 3, sorted
		check := func(what string) {
			t.Helper()
			if err := s.Check(); err != nil {
				t.Fatalf("bucket=%d max=%d %s: %v", c.bucket, c.max, what, err)
			}
			var got []uint64
			s.All(func(k Key) bool { got = append(got, k.Lo); return true })
			if !slices.Equal(got, model) {
				t.Fatalf("bucket=%d max=%d %s: %v, want %v", c.bucket, c.max, what, got, model)
			}
		}
		for round := range 20 {
			for range 100 + r.IntN(300) { // inserts, a range that moves with the round
				lo := uint64(round)<<20 + r.Uint64N(1<<(10+r.IntN(20)))
				i, found := slices.BinarySearch(model, lo)
				if s.Insert(Key{Hi: 3, Lo: lo, ID: int32(lo % 1000)}) == found {
					t.Fatalf("insert %d: found=%v", lo, found)
				}
				if !found {
					model = slices.Insert(model, i, lo)
				}
			}
			check("after inserts")
			for range r.IntN(len(model) + 1) { // deletes, all of them sometimes
				i := r.IntN(len(model))
				if r.IntN(3) == 0 {
					i = 0
				}
				if !s.Delete(Key{Hi: 3, Lo: model[i]}) {
					t.Fatalf("delete %d: absent", model[i])
				}
				model = slices.Delete(model, i, i+1)
				check("after a delete")
			}
			for range r.IntN(len(model) + 1) { // takes
				k, ok := s.TakeFirst(Key{Hi: 3}, 3)
				if !ok || k.Lo != model[0] {
					t.Fatalf("take: %v %v, want %d", k, ok, model[0])
				}
				model = model[1:]
			}
			check("after takes")
		}
	}
	classBucket, bucketMax = 32, 32
}

// TestBucketOpsNoWrap: the count of inserts and deletes since a bin was
// bucketized decides when an overfull bucket is spread again; after 2^31 of
// them (a long simulation's busy bin) it must still do so. With an int32
// count it wrapped negative and the bin was never spread again.
func TestBucketOpsNoWrap(t *testing.T) {
	var bb bucketBin
	keys := make([]classKey, 64)
	for i := range keys {
		keys[i] = classKey{lo: uint64(63-i) * 1000, id: int32(i)}
	}
	bb.bucketize(keys)
	bb.ops = math.MaxInt32
	top := keys[0].lo
	for i := 1; i <= 400; i++ {
		if !bb.insert(classKey{lo: top + uint64(i), id: int32(1000 + i)}) {
			t.Fatalf("insert %d refused", i)
		}
	}
	// An overfull bucket past n operations spreads the bin again, which
	// starts the count afresh.
	if bb.ops < 0 || bb.ops > 400 {
		t.Fatalf("operation count %d after 400 inserts past 2^31: the bin was never spread again", bb.ops)
	}
}

// TestClassedTakeBest checks TakeBest against a sorted model: random
// inserts and takes from random classes under random limits, with classes
// over several bitmap words (so that a take often steps past its class's
// word, takeBestSlow), around numBins and above it (rest), under the
// default thresholds and small ones (spilled classes, buckets, refills).
func TestClassedTakeBest(t *testing.T) {
	defer func() { classFlat, classBucket, bucketMax = maxFlat, 32, 32 }()
	for _, th := range []struct{ flat, bucket int }{{maxFlat, 32}, {4, 32}, {maxFlat, 4}, {12, 4}} {
		classFlat, classBucket, bucketMax = th.flat, th.bucket, th.bucket
		r := rand.New(rand.NewPCG(uint64(th.flat), uint64(th.bucket)))
		class := func() uint64 {
			switch r.IntN(4) {
			case 0:
				return uint64(r.IntN(8)) // a few crowded classes
			case 1:
				return uint64(r.IntN(400)) // several words
			case 2:
				return uint64(numBins - 70 + r.IntN(140))
			default:
				return ^uint64(0) - uint64(r.IntN(3))
			}
		}
		var s Classed
		var model []Key // sorted by (Hi, Lo)
		byKey := func(a, b Key) int {
			if a.Hi != b.Hi {
				return cmp.Compare(a.Hi, b.Hi)
			}
			return cmp.Compare(a.Lo, b.Lo)
		}
		for step := range 20000 {
			if r.IntN(3) > 0 || len(model) == 0 {
				k := Key{Hi: class(), Lo: uint64(r.IntN(64)), ID: int32(step)}
				i, found := slices.BinarySearchFunc(model, k, byKey)
				if s.Insert(k) == found {
					t.Fatalf("step %d: Insert(%v) = %v with the key present: %v", step, k, !found, found)
				}
				if !found {
					model = slices.Insert(model, i, k)
				}
			} else {
				c := class()
				i, _ := slices.BinarySearchFunc(model, Key{Hi: c}, byKey)
				limit := c + uint64(r.IntN(300))
				switch r.IntN(8) {
				case 0:
					limit = ^uint64(0)
				case 1, 2: // the class best fit finds, or the one below: the limit's edge
					if i < len(model) {
						limit = model[i].Hi - uint64(r.IntN(2))
					}
				}
				if limit < c {
					limit = ^uint64(0)
				}
				want, wok := Key{}, i < len(model) && model[i].Hi <= limit
				if wok {
					want = model[i]
					model = slices.Delete(model, i, i+1)
				}
				if got, ok := s.TakeBest(c, limit); got != want || ok != wok {
					t.Fatalf("flat %d bucket %d step %d: TakeBest(%d, %d) = %v, %v; want %v, %v",
						th.flat, th.bucket, step, c, limit, got, ok, want, wok)
				}
			}
			if step%64 == 0 || step > 19000 {
				if err := s.Check(); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if s.Len() != len(model) {
					t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(model))
				}
			}
		}
	}
}
