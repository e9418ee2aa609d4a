package ordset

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestModel checks the set against a sorted slice under random inserts,
// deletes and queries.
func TestModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var s Set
		var model []Key
		key := rapid.Custom(func(t *rapid.T) Key {
			return Key{Hi: rapid.Uint64Range(0, 100).Draw(t, "hi"), Lo: rapid.Uint64Range(0, 5).Draw(t, "lo")}
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
				for range rapid.IntRange(1, 80).Draw(rt, "n") {
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
			"clone": func(rt *rapid.T) {
				c := s.Clone()
				if err := c.Check(); err != nil || c.Len() != s.Len() {
					rt.Fatalf("clone: %v", err)
				}
				c.Insert(Key{Hi: 999})
				if s.Has(Key{Hi: 999}) {
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
