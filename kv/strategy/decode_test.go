package strategy

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// blockTables returns every live sequence's block tables, by id.
func blockTables(p *paged) map[SeqID][][]int32 {
	out := map[SeqID][][]int32{}
	for _, id := range p.seqs.ids() {
		ps, _ := p.seqs.get(id)
		for _, s := range ps.samples {
			var b []int32
			for _, x := range s.Blocks() {
				b = append(b, int32(x))
			}
			out[id] = append(out[id], b)
		}
	}
	return out
}

// TestDecodeStepsIsGrowRounds checks DecodeSteps against the rounds of
// Grow(id, 1) it stands for, on twin paged pools that went through the
// same admissions and grows: the same steps done (as many as the free
// blocks allow), the same block tables (blocks taken in the same order),
// counters and usage, and the same free queue afterwards (a sequence
// admitted next gets the same blocks).
func TestDecodeStepsIsGrowRounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bs := rapid.IntRange(1, 8).Draw(t, "block-size")
		blocks := rapid.IntRange(4, 60).Draw(t, "blocks")
		maxCtx := rapid.SampledFrom([]int{2048, 64}).Draw(t, "max-context")
		mk := func() *paged {
			env := newEnv(t, "caching", 1<<30, int64(blocks*bs)*tinyBPT)
			env.MaxContext = maxCtx
			s, err := Parse(fmt.Sprintf("paged:%d", bs), env)
			if err != nil {
				t.Fatal(err)
			}
			return s.(*paged)
		}
		a, b, c := mk(), mk(), mk()
		nseq := rapid.IntRange(1, 6).Draw(t, "seqs")
		var ids []SeqID
		for i := range nseq {
			r := Request{Prompt: rapid.IntRange(1, 3*bs+2).Draw(t, "prompt"), MaxOutput: 1000, TrueOutput: 1000,
				N: rapid.SampledFrom([]int{1, 1, 1, 2}).Draw(t, "n")}
			if rapid.Bool().Draw(t, "prefix") {
				r.PrefixIDs, r.PrefixSpan = []uint64{7, 8, 9}, bs
			}
			id := SeqID(3 * i)
			errA, errB, errC := a.Admit(id, r), b.Admit(id, r), c.Admit(id, r)
			if (errA == nil) != (errB == nil) || (errA == nil) != (errC == nil) {
				t.Fatalf("twin admissions differ: %v, %v, %v", errA, errB, errC)
			}
			if errA != nil {
				continue
			}
			ids = append(ids, id)
			if g := rapid.IntRange(0, bs).Draw(t, "grow"); g > 0 {
				ea, eb, ec := a.Grow(id, g), b.Grow(id, g), c.Grow(id, g)
				if (ea == nil) != (eb == nil) || (ea == nil) != (ec == nil) {
					t.Fatalf("twin grows differ: %v, %v, %v", ea, eb, ec)
				}
			}
		}
		k := rapid.IntRange(1, 40).Draw(t, "k")
		done := a.DecodeSteps(ids, k)
		if done < 0 || done > k {
			t.Fatalf("DecodeSteps(%v, %d) = %d", ids, k, done)
		}
		single := len(ids) > 0
		for _, id := range ids {
			ps, _ := b.seqs.get(id)
			single = single && len(ps.samples) == 1
		}
		if !single && done != 0 {
			t.Fatalf("DecodeSteps did %d steps with a multi-sample sequence", done)
		}
		for range done {
			for _, id := range ids {
				if b.Grow(id, 1) != nil || c.Grow(id, 1) != nil {
					t.Fatal("a grow DecodeSteps did fails alone")
				}
			}
		}
		if single && done < k {
			// It stopped early: the next round must fail somewhere (no free
			// block, the context) or copy on write (which DecodeSteps leaves
			// to Grow).
			copied := c.Stats().CopiedBytes
			failed := false
			for _, id := range ids {
				if err := c.Grow(id, 1); err != nil {
					if !errors.Is(err, ErrNoMemory) && !errors.Is(err, ErrTooLong) {
						t.Fatal(err)
					}
					failed = true
					break
				}
			}
			if !failed && c.Stats().CopiedBytes == copied {
				t.Fatalf("DecodeSteps stopped after %d of %d steps, but the next round succeeds without copying", done, k)
			}
		}
		if ta, tb := blockTables(a), blockTables(b); !reflect.DeepEqual(ta, tb) {
			t.Fatalf("block tables differ:\nDecodeSteps %v\nGrow rounds %v", ta, tb)
		}
		if sa, sb := a.Stats(), b.Stats(); sa != sb {
			t.Fatalf("stats differ:\nDecodeSteps %+v\nGrow rounds %+v", sa, sb)
		}
		if ua, ub := a.Usage(), b.Usage(); ua != ub {
			t.Fatalf("usage differs:\nDecodeSteps %+v\nGrow rounds %+v", ua, ub)
		}
		if a.pool.NumFree() != b.pool.NumFree() {
			t.Fatalf("free blocks %d, %d", a.pool.NumFree(), b.pool.NumFree())
		}
		// The free queues hold the same blocks in the same order.
		if n := a.pool.NumFree(); n > 0 {
			r := Request{Prompt: min(n*bs, maxCtx), MaxOutput: 1, TrueOutput: 1, N: 1}
			if err := a.Admit(999, r); err != nil {
				t.Fatal(err)
			}
			if err := b.Admit(999, r); err != nil {
				t.Fatal(err)
			}
			if ta, tb := blockTables(a)[999], blockTables(b)[999]; !slices.EqualFunc(ta, tb, slices.Equal) {
				t.Fatalf("the next admission got blocks %v after DecodeSteps, %v after Grow rounds", ta, tb)
			}
		}
	})
}
