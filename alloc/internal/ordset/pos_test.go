package ordset

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestBinnedPositions checks Below, Seek, At, Replace, SetAt and Clear
// against a sorted slice, under both bin functions, with keys crowded into a
// few bins so that bins grow past maxFlat into Sets and positions inside
// Sets (and at their chunk boundaries) are exercised too.
func TestBinnedPositions(t *testing.T) {
	const base, shift = 1 << 20, 4
	for _, lin := range []bool{false, true} {
		t.Run(map[bool]string{false: "bins=log", true: "bins=linear"}[lin], func(t *testing.T) {
			hi := func(t *rapid.T) uint64 {
				if !lin {
					return rapid.SampledFrom([]uint64{3, 7, exactBins - 1, exactBins, exactBins + 1, 1 << 40}).Draw(t, "hi")
				}
				switch rapid.IntRange(0, 2).Draw(t, "where") {
				case 0: // around the range, and past both ends
					return rapid.Uint64Range(base-40, base+linearBins<<shift+40).Draw(t, "hi")
				case 1: // crowd bin 5 with several Hi
					return base + 5<<shift + rapid.Uint64Range(0, 3).Draw(t, "d")
				default:
					return rapid.SampledFrom([]uint64{0, base - 1, base, ^uint64(0)}).Draw(t, "hi")
				}
			}
			testPositions(t, lin, base, shift, rapid.Custom(func(t *rapid.T) Key {
				return Key{Hi: hi(t), Lo: rapid.Uint64Range(0, 3*maxFlat).Draw(t, "lo")}
			}))
		})
	}
}

func testPositions(t *testing.T, lin bool, base uint64, shift uint, key *rapid.Generator[Key]) {
	cmp := func(x, y Key) int {
		if x.Less(y) {
			return -1
		}
		if y.Less(x) {
			return 1
		}
		return 0
	}
	rapid.Check(t, func(rt *rapid.T) {
		var s Binned
		if lin {
			s.InitLinear(base, linearBins<<shift)
		}
		var model []Key
		// fits reports whether k may replace model[i]: same bin, and
		// strictly between its neighbours.
		fits := func(i int, k Key) bool {
			return s.binOf(k.Hi) == s.binOf(model[i].Hi) &&
				(i == 0 || model[i-1].Less(k)) && (i+1 == len(model) || k.Less(model[i+1]))
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
				for range rapid.IntRange(1, 400).Draw(rt, "n") {
					k := key.Draw(rt, "k")
					if i, found := slices.BinarySearchFunc(model, k, cmp); s.Insert(k) == found {
						rt.Fatalf("insert %v: found=%v", k, found)
					} else if !found {
						model = slices.Insert(model, i, k)
					}
				}
			},
			"delete": func(rt *rapid.T) {
				for range rapid.IntRange(1, 300).Draw(rt, "n") {
					k := key.Draw(rt, "k")
					if i, found := slices.BinarySearchFunc(model, k, cmp); s.Delete(k) != found {
						rt.Fatalf("delete %v: found=%v", k, found)
					} else if found {
						model = slices.Delete(model, i, i+1)
					}
				}
			},
			"crowd": func(rt *rapid.T) { // one bin past maxFlat: a big bin
				h := key.Draw(rt, "k").Hi
				for j := range maxFlat + rapid.IntRange(1, 300).Draw(rt, "n") {
					k := Key{Hi: h, Lo: uint64(2 * j)} // even: Lo+1 fits between
					if i, found := slices.BinarySearchFunc(model, k, cmp); !found {
						s.Insert(k)
						model = slices.Insert(model, i, k)
					}
				}
			},
			"thin": func(rt *rapid.T) { // most of one bin's keys, so it shrinks back
				if len(model) == 0 {
					return
				}
				b := s.binOf(model[rapid.IntRange(0, len(model)-1).Draw(rt, "i")].Hi)
				keep := rapid.IntRange(0, 8).Draw(rt, "keep")
				model = slices.DeleteFunc(model, func(k Key) bool {
					if s.binOf(k.Hi) != b || k.Lo%8 < uint64(keep) {
						return false
					}
					if !s.Delete(k) {
						rt.Fatalf("delete %v", k)
					}
					return true
				})
			},
			"seek": func(rt *rapid.T) {
				k := key.Draw(rt, "k")
				i, _ := slices.BinarySearchFunc(model, k, cmp) // model[i-1] < k <= model[i]
				pred, predOK, succ, succOK := s.Seek(k)
				if predOK != (i > 0) || predOK && s.At(pred) != model[i-1] {
					rt.Fatalf("Seek(%v) pred %v, model index %d", k, predOK, i-1)
				}
				if succOK != (i < len(model)) || succOK && s.At(succ) != model[i] {
					rt.Fatalf("Seek(%v) succ %v, model index %d", k, succOK, i)
				}
				p, x, ok := s.Below(k)
				if ok != predOK || ok && (x != model[i-1] || s.At(p) != x) {
					rt.Fatalf("Below(%v) = %v,%v; model index %d", k, x, ok, i-1)
				}
			},
			"replace": func(rt *rapid.T) {
				for range rapid.IntRange(1, 60).Draw(rt, "n") {
					if len(model) == 0 {
						return
					}
					i := rapid.IntRange(0, len(model)-1).Draw(rt, "i")
					old := model[i]
					var k Key
					switch rapid.IntRange(0, 2).Draw(rt, "how") {
					case 0:
						k = key.Draw(rt, "k")
					case 1: // fits between crowded keys
						k = Key{Hi: old.Hi, Lo: old.Lo + 1}
					default: // a few keys away: past a Set chunk's end, sometimes
						k = Key{Hi: old.Hi, Lo: old.Lo + rapid.Uint64Range(0, 260).Draw(rt, "d") - 130}
					}
					p, x, ok := s.Find(old)
					if !ok || x != old {
						rt.Fatalf("Find(%v) = %v,%v", old, x, ok)
					}
					want := fits(i, k)
					if rapid.Bool().Draw(rt, "setAt") {
						if !want {
							continue
						}
						s.SetAt(p, k)
					} else if got := s.Replace(p, k); got != want {
						rt.Fatalf("Replace(%v -> %v) = %v, want %v", old, k, got, want)
					}
					if want {
						model[i] = k
					}
					if got := s.At(p); got != model[i] {
						rt.Fatalf("At after replace = %v, want %v", got, model[i])
					}
				}
			},
			"all": func(rt *rapid.T) {
				var all []Key
				s.All(func(x Key) bool { all = append(all, x); return true })
				if !slices.Equal(all, model) {
					rt.Fatalf("All = %v, want %v", all, model)
				}
			},
			"clear": func(rt *rapid.T) {
				s.Clear()
				model = model[:0]
			},
			"clone": func(rt *rapid.T) {
				c := s.Clone()
				if err := c.Check(); err != nil || c.Len() != s.Len() {
					rt.Fatalf("clone: %v", err)
				}
			},
		})
	})
}
