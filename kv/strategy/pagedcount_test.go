package strategy

import (
	"testing"

	"pgregory.net/rapid"
)

// TestCountedMatchesPool runs the same admissions (with several samples,
// and with prefix ids, which a pool without prefix caching ignores), grows,
// decode runs, releases, preemptions and a Close on two paged strategies
// with prefix caching off: one over a block pool, the other counting its
// blocks (Env.CountBlocks). Pools are small, so admissions and grows fail,
// and prompts end inside blocks, so samples copy their shared last block
// on write. After every operation both must agree on the error (text),
// the steps DecodeSteps did, the counters, the usage, every request's
// tokens, and the pool's whole Stats (free, used, usage, the slot classes,
// the allocs, frees and copies).
func TestCountedMatchesPool(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bs := rapid.SampledFrom([]int{1, 2, 3, 4, 16}).Draw(t, "bs")
		blocks := rapid.IntRange(2, 40).Draw(t, "blocks")
		maxCtx := rapid.SampledFrom([]int{2048, 64, 10, 10}).Draw(t, "max-context") // 10: within a block, for bs 3, 4 and 16
		mk := func(count bool) *paged {
			return newTinyPaged(t, bs, blocks, func(e *Env) {
				e.NoPrefixCaching, e.CountBlocks, e.MaxContext = true, count, maxCtx
			})
		}
		a, b := mk(false), mk(true)
		if a.pool == nil || a.counts != nil || b.pool != nil || b.counts == nil {
			t.Fatalf("pool %v counts %v; pool %v counts %v", a.pool, a.counts, b.pool, b.counts)
		}
		var next SeqID
		same := func(op string, err1, err2 error) {
			sameOutcome(t, op, a, b, err1, err2)
			if a.closed {
				return
			}
			if sa, sb := a.pool.Stats(), b.poolStats(); sa != sb {
				t.Fatalf("%s: pool stats\n%v\ncounted\n%v", op, sa, sb)
			}
			if err := b.checkCounts(); err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			for id := range next {
				ta, oka := a.Tokens(id)
				tb, okb := b.Tokens(id)
				if ta != tb || oka != okb {
					t.Fatalf("%s: seq %d: tokens %d %v, %d %v", op, id, ta, oka, tb, okb)
				}
			}
		}
		pick := func(t *rapid.T) SeqID { // live or not: both must say the same
			return SeqID(rapid.IntRange(0, int(next)).Draw(t, "id"))
		}
		t.Repeat(map[string]func(*rapid.T){
			"admit": func(t *rapid.T) {
				r := Request{Prompt: rapid.IntRange(1, 3*bs+2).Draw(t, "prompt"), MaxOutput: 100, TrueOutput: 100,
					N: rapid.SampledFrom([]int{1, 1, 1, 2, 3}).Draw(t, "n")}
				if rapid.Bool().Draw(t, "prefix") {
					r.PrefixIDs, r.PrefixSpan = []uint64{7, 8, 9}, bs
				}
				id := next
				if rapid.IntRange(0, 9).Draw(t, "again") == 0 {
					id = pick(t) // a duplicate, mostly
				} else {
					next++
				}
				same("admit", a.Admit(id, r), b.Admit(id, r))
			},
			"grow": func(t *rapid.T) {
				id, k := pick(t), rapid.IntRange(-1, 2*bs+1).Draw(t, "k")
				same("grow", a.Grow(id, k), b.Grow(id, k))
			},
			"decode": func(t *rapid.T) {
				ids := rapid.SliceOfN(rapid.Custom(pick), 0, 5).Draw(t, "ids")
				k := rapid.IntRange(0, 3*bs+2).Draw(t, "k")
				da, db := a.DecodeSteps(ids, k, 0), b.DecodeSteps(ids, k, 0)
				if da != db {
					t.Fatalf("DecodeSteps(%v, %d): %d and %d steps", ids, k, da, db)
				}
				same("decode", nil, nil)
			},
			"release": func(t *rapid.T) {
				id := pick(t)
				same("release", a.Release(id), b.Release(id))
			},
			"preempt": func(t *rapid.T) {
				id := pick(t)
				same("preempt", a.Preempt(id), b.Preempt(id))
			},
			"close": func(t *rapid.T) {
				if rapid.IntRange(0, 19).Draw(t, "close") == 0 {
					same("close", a.Close(), b.Close())
				}
			},
		})
	})
}

// TestCountBlocksNeedsNoPrefixCaching checks that Env.CountBlocks counts
// only a pool without a prefix cache: with prefix caching on, blocks have
// keys and the pool is kept.
func TestCountBlocksNeedsNoPrefixCaching(t *testing.T) {
	p := newTinyPaged(t, 16, 8, func(e *Env) { e.CountBlocks = true })
	if p.counts != nil || p.pool == nil {
		t.Fatalf("prefix caching on: counts %v, pool %v", p.counts, p.pool)
	}
	q := newTinyPaged(t, 16, 8, func(e *Env) { e.CountBlocks, e.NoPrefixCaching = true, true })
	if q.Pool() != nil || q.counts == nil {
		t.Fatalf("prefix caching off: pool %v, counts %v", q.Pool(), q.counts)
	}
}
