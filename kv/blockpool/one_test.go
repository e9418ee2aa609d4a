package blockpool

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestAllocateOneFreeOne runs the same random operations on two pools, one
// taking and returning blocks through AllocateOne and FreeOne, the other
// through Allocate(dst, 1) and Free of a one-block table, with prefix-cache
// registrations, hits and bad frees between them, and requires the same ids,
// errors, free queue and counters after every step.
func TestAllocateOneFreeOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		blocks := rapid.IntRange(1, 12).Draw(t, "blocks")
		one, err := New(blocks, 4, Options{})
		if err != nil {
			t.Fatal(err)
		}
		two, _ := New(blocks, 4, Options{})
		var held []BlockID // references held, in both pools alike
		next := BlockHash(1)
		same := func(op string, err1, err2 error) {
			if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
				t.Fatalf("%s: errors %v and %v", op, err1, err2)
			}
			if q1, q2 := one.FreeQueue(nil), two.FreeQueue(nil); !slices.Equal(q1, q2) {
				t.Fatalf("%s: queues %v and %v", op, q1, q2)
			}
			if s1, s2 := one.Stats(), two.Stats(); s1 != s2 {
				t.Fatalf("%s: stats %+v and %+v", op, s1, s2)
			}
			for _, p := range []*Pool{one, two} {
				if err := p.CheckInvariants(); err != nil {
					t.Fatalf("%s: %v", op, err)
				}
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"allocate": func(t *rapid.T) {
				id1, err1 := one.AllocateOne()
				ids, err2 := two.Allocate(nil, 1)
				if err1 == nil {
					if len(ids) != 1 || ids[0] != id1 {
						t.Fatalf("AllocateOne gave %d, Allocate %v", id1, ids)
					}
					held = append(held, id1)
				} else if id1 != NullBlock || !errors.Is(err1, ErrOutOfBlocks) {
					t.Fatalf("AllocateOne failed with %d, %v", id1, err1)
				}
				same("allocate", err1, err2)
			},
			"free": func(t *rapid.T) {
				if len(held) == 0 {
					return
				}
				i := rapid.IntRange(0, len(held)-1).Draw(t, "i")
				id := held[i]
				held = slices.Delete(held, i, i+1)
				same("free", one.FreeOne(id), two.Free([]BlockID{id}))
			},
			"bad free": func(t *rapid.T) {
				id := BlockID(rapid.IntRange(-1, blocks+1).Draw(t, "id"))
				if slices.Contains(held, id) {
					return
				}
				same("bad free", one.FreeOne(id), two.Free([]BlockID{id}))
			},
			"cache": func(t *rapid.T) {
				if len(held) == 0 {
					return
				}
				id := held[rapid.IntRange(0, len(held)-1).Draw(t, "i")]
				same("cache", one.CacheFullBlock(id, next), two.CacheFullBlock(id, next))
				next++
			},
			"hit": func(t *rapid.T) {
				if next == 1 {
					return
				}
				h := BlockHash(rapid.IntRange(1, int(next)-1).Draw(t, "hash"))
				id1, ok1 := one.GetCached(h)
				id2, ok2 := two.GetCached(h)
				if id1 != id2 || ok1 != ok2 {
					t.Fatalf("GetCached(%d): %d %v and %d %v", h, id1, ok1, id2, ok2)
				}
				if ok1 {
					held = append(held, id1)
				}
				same("hit", nil, nil)
			},
		})
	})
}
