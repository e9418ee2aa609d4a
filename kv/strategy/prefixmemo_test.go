package strategy

import (
	"reflect"
	"slices"
	"testing"

	"github.com/gpufrag/gpufrag/kv/blockpool"
	"pgregory.net/rapid"
)

// TestPrefixMemoChangesNothing drives twin paged strategies through the
// same admissions (conversations whose turns extend their prompt's prefix
// ids, and unrelated prompts that share a system prefix), grows, releases
// and warm-ups, one with the prefix-key memo and one whose memo is emptied
// before every call, and compares everything after each step: errors,
// block tables, counters, usage, the free queue and the cached blocks.
func TestPrefixMemoChangesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bs := rapid.SampledFrom([]int{1, 3, 16}).Draw(t, "block-size")
		blocks := rapid.IntRange(8, 200).Draw(t, "blocks")
		mk := func() *paged { return newTinyPaged(t, bs, blocks, nil) }
		a, b := mk(), mk()
		span := rapid.SampledFrom([]int{1, 2, bs, 2 * bs, 5}).Draw(t, "span")
		convs := make([][]uint64, rapid.IntRange(1, 4).Draw(t, "conversations"))
		next := uint64(100)
		var live []SeqID
		var last Request
		for step := range rapid.IntRange(1, 40).Draw(t, "steps") {
			b.memo = prefixMemo{}
			var ea, eb error
			switch op := rapid.IntRange(0, 4).Draw(t, "op"); {
			case op <= 1 || len(live) == 0: // admit a conversation's next turn
				c := rapid.IntRange(0, len(convs)-1).Draw(t, "conversation")
				if len(convs[c]) == 0 || rapid.IntRange(0, 5).Draw(t, "restart") == 0 {
					convs[c] = []uint64{7} // a new conversation: the shared system span
				}
				// Keep all but the last span (partly covered), as turns do,
				// or another number of them, then add new spans.
				keep := len(convs[c]) - 1
				if rapid.Bool().Draw(t, "cut") {
					keep = rapid.IntRange(0, len(convs[c])).Draw(t, "keep")
				}
				ids := slices.Clone(convs[c][:keep])
				for range rapid.IntRange(1, 6).Draw(t, "new-spans") {
					ids = append(ids, next)
					next++
				}
				convs[c] = ids
				prompt := rapid.IntRange(max(1, (len(ids)-1)*span+1), len(ids)*span).Draw(t, "prompt")
				r := Request{Prompt: prompt, MaxOutput: 100, TrueOutput: 100, N: rapid.SampledFrom([]int{1, 1, 2}).Draw(t, "n"),
					PrefixIDs: ids, PrefixSpan: span}
				if last.Prompt > 0 && rapid.IntRange(0, 3).Draw(t, "repeat") == 0 {
					// The same prompt again: its last block, recomputed, is
					// cached a second time under its key.
					r = last
				}
				last = r
				if rapid.IntRange(0, 4).Draw(t, "warm") == 0 {
					var oa, ob bool
					oa, ea = a.Warm(r)
					ob, eb = b.Warm(r)
					if oa != ob {
						t.Fatalf("step %d: Warm %v with the memo, %v without", step, oa, ob)
					}
					break
				}
				id := SeqID(step)
				if ea, eb = a.Admit(id, r), b.Admit(id, r); ea == nil {
					live = append(live, id)
				}
				if a.PrefixHit(id) != b.PrefixHit(id) {
					t.Fatalf("step %d: prefix hit %d with the memo, %d without", step, a.PrefixHit(id), b.PrefixHit(id))
				}
			case op == 2:
				id := live[rapid.IntRange(0, len(live)-1).Draw(t, "grow-seq")]
				k := rapid.IntRange(1, 2*bs+1).Draw(t, "grow")
				ea, eb = a.Grow(id, k), b.Grow(id, k)
			default:
				i := rapid.IntRange(0, len(live)-1).Draw(t, "release-seq")
				id := live[i]
				live = slices.Delete(live, i, i+1)
				ea, eb = a.Release(id), b.Release(id)
			}
			if (ea == nil) != (eb == nil) {
				t.Fatalf("step %d: %v with the memo, %v without", step, ea, eb)
			}
			samePaged(t, a, b)
		}
	})
}

// samePaged fails t unless two paged strategies hold the same block tables,
// counters, usage, free queue and prefix cache.
func samePaged(t *rapid.T, a, b *paged) {
	t.Helper()
	if ta, tb := blockTables(a), blockTables(b); !reflect.DeepEqual(ta, tb) {
		t.Fatalf("block tables differ:\n%v\n%v", ta, tb)
	}
	sameCounters(t, a, b)
	if pa, pb := a.pool.Stats(), b.pool.Stats(); pa != pb {
		t.Fatalf("pool stats differ:\n%+v\n%+v", pa, pb)
	}
	if qa, qb := a.pool.FreeQueue(nil), b.pool.FreeQueue(nil); !slices.Equal(qa, qb) {
		t.Fatalf("free queues differ:\n%v\n%v", qa, qb)
	}
	for id := range a.pool.NumBlocks() {
		ha, oka := a.pool.CachedHash(blockpool.BlockID(id))
		hb, okb := b.pool.CachedHash(blockpool.BlockID(id))
		if ha != hb || oka != okb {
			t.Fatalf("block %d: key %#x (%v) with the memo, %#x (%v) without", id, ha, oka, hb, okb)
		}
	}
}

// TestAdmitReusesReleasedSequences: a paged admission after a release takes
// the released sequence, whose block table keeps its capacity, so a turn of
// a long prompt allocates no table (before, each admission allocated a
// sequence and grew a table of its thousands of blocks).
func TestAdmitReusesReleasedSequences(t *testing.T) {
	env := newEnv(t, "caching", 1<<30, 512<<20)
	s, err := Parse("paged:16", env)
	if err != nil {
		t.Fatal(err)
	}
	r := Request{Prompt: 2000, MaxOutput: 1, TrueOutput: 1, N: 1, PrefixIDs: []uint64{1, 2, 3, 4}, PrefixSpan: 512}
	cycle := func() {
		if err := s.Admit(1, r); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(1); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	// The pagedSeq and its samples slice remain.
	if n := testing.AllocsPerRun(20, cycle); n > 2 {
		t.Errorf("%v allocations per admission and release, want at most 2", n)
	}
}
