package strategy

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
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
		mk := func() *paged { return newTinyPaged(t, bs, blocks, func(e *Env) { e.MaxContext = maxCtx }) }
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
			if admitTwins(t, []Strategy{a, b, c}, id, r, rapid.IntRange(0, bs).Draw(t, "grow")) {
				ids = append(ids, id)
			}
		}
		k := rapid.IntRange(1, 40).Draw(t, "k")
		done := a.DecodeSteps(ids, k, 0)
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
		if single && done < k && !nextRoundStops(t, c, ids) {
			t.Fatalf("DecodeSteps stopped after %d of %d steps, but the next round succeeds without copying", done, k)
		}
		if ta, tb := blockTables(a), blockTables(b); !reflect.DeepEqual(ta, tb) {
			t.Fatalf("block tables differ:\nDecodeSteps %v\nGrow rounds %v", ta, tb)
		}
		sameCounters(t, a, b)
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

// TestDecodeStepsContiguousVMM checks the contiguous and vmm DecodeSteps
// against the rounds of Grow(id, 1) they stand for, on twin strategies
// over twin allocators that went through the same admissions and grows:
// the same steps done (up to the first reallocation, the end of a
// reservation, the context or the device's free pages less the bytes to
// keep), the same tokens, counters, usage, allocator stats and layout, and
// an admission afterwards that gets the same block.
func TestDecodeStepsContiguousVMM(t *testing.T) {
	setups := []struct{ kv, alloc string }{
		{"contiguous-max", "caching"},
		{"contiguous-max:pow2", "caching"},
		{"contiguous-max:oracle", "caching"},
		{"contiguous-grow", "caching"},
		{"contiguous-grow", "caching:expandable_segments:True"},
		{"vmm:64KiB", "vmm:64KiB"},
		{"vmm:192KiB", "vmm:192KiB"},
	}
	rapid.Check(t, func(t *rapid.T) {
		su := setups[rapid.IntRange(0, len(setups)-1).Draw(t, "setup")]
		capacity := int64(rapid.IntRange(1, 64).Draw(t, "capacity-mib")) * mem.MiB
		maxCtx := rapid.SampledFrom([]int{2048, 300, 64}).Draw(t, "max-context")
		mk := func() Strategy {
			env := newEnv(t, su.alloc, capacity, 0)
			env.MaxContext = maxCtx
			s, err := Parse(su.kv, env)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		a, b, c := mk(), mk(), mk()
		var ids []SeqID
		for i := range rapid.IntRange(1, 6).Draw(t, "seqs") {
			out := rapid.IntRange(0, 200).Draw(t, "true-output")
			r := Request{Prompt: rapid.IntRange(1, 200).Draw(t, "prompt"), MaxOutput: out, TrueOutput: out,
				N: rapid.SampledFrom([]int{1, 1, 1, 2}).Draw(t, "n")}
			id := SeqID(5 * i)
			if admitTwins(t, []Strategy{a, b, c}, id, r, rapid.IntRange(0, 70).Draw(t, "grow")) {
				ids = append(ids, id)
			}
		}
		ds := a.(DecodeStepper)
		if len(ids) > 0 && ds.DecodeSteps(append(ids, ids[0]), 5, 0) != 0 {
			t.Fatal("DecodeSteps did steps for an id given twice")
		}
		var keep int64 // the other strategies' runs take nothing from the allocator
		if _, ok := a.(*vmmStrategy); ok {
			keep = int64(rapid.IntRange(0, 4*int(mem.MiB)).Draw(t, "keep"))
		}
		k := rapid.IntRange(1, 300).Draw(t, "k")
		done := ds.DecodeSteps(ids, k, keep)
		if done < 0 || done > k {
			t.Fatalf("DecodeSteps(%v, %d) = %d", ids, k, done)
		}
		if done > 0 && allocOf(a).MaxAllocatable() < keep {
			t.Fatalf("DecodeSteps left %d bytes allocatable, %d to keep", allocOf(a).MaxAllocatable(), keep)
		}
		for range done {
			for _, id := range ids {
				if b.Grow(id, 1) != nil || c.Grow(id, 1) != nil {
					t.Fatal("a grow DecodeSteps did fails alone")
				}
			}
		}
		if len(ids) > 0 && done < k && !nextRoundStops(t, c, ids) && allocOf(c).MaxAllocatable() >= keep {
			t.Fatalf("DecodeSteps stopped after %d of %d steps, but the next round succeeds in place with %d bytes kept", done, k, keep)
		}
		for _, id := range ids {
			ta, _ := a.Tokens(id)
			tb, _ := b.Tokens(id)
			if ta != tb {
				t.Fatalf("seq %d: %d tokens after DecodeSteps, %d after Grow rounds", id, ta, tb)
			}
		}
		sameCounters(t, a, b)
		aa, ab := allocOf(a), allocOf(b)
		if sa, sb := aa.Stats(), ab.Stats(); sa != sb {
			t.Fatalf("allocator stats differ:\nDecodeSteps %+v\nGrow rounds %+v", sa, sb)
		}
		if la, lb := aa.Layout(), ab.Layout(); !reflect.DeepEqual(la, lb) {
			t.Fatalf("allocator layouts differ:\nDecodeSteps %+v\nGrow rounds %+v", la, lb)
		}
		r := Request{Prompt: 1, N: 1}
		errA, errB := a.Admit(999, r), b.Admit(999, r)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("the next admission: %v after DecodeSteps, %v after Grow rounds", errA, errB)
		}
		if la, lb := aa.Layout(), ab.Layout(); !reflect.DeepEqual(la, lb) {
			t.Fatalf("allocator layouts differ after the next admission:\nDecodeSteps %+v\nGrow rounds %+v", la, lb)
		}
	})
}

// allocOf is the allocator a contiguous or vmm strategy is built on.
func allocOf(s Strategy) alloc.Allocator {
	switch s := s.(type) {
	case *contiguous:
		return s.env.Alloc
	case *vmmStrategy:
		return s.a
	}
	panic(fmt.Sprintf("allocOf %T", s))
}

// nextRoundStops reports whether the round of Grow(id, 1) over ids after a
// DecodeSteps that stopped early fails somewhere (out of memory, past the
// context or a reservation) or moves KV (a copy on write, a reallocation),
// which DecodeSteps leaves to Grow.
func nextRoundStops(t *rapid.T, s Strategy, ids []SeqID) bool {
	before := s.Stats()
	for _, id := range ids {
		if err := s.Grow(id, 1); err != nil {
			if !errors.Is(err, ErrNoMemory) && !errors.Is(err, ErrTooLong) {
				t.Fatal(err)
			}
			return true
		}
	}
	after := s.Stats()
	return after.CopiedBytes != before.CopiedBytes || after.Reallocs != before.Reallocs
}

// sameCounters fails t unless two strategies have the same stats and usage
// (a is the one under test).
func sameCounters(t *rapid.T, a, b Strategy) {
	t.Helper()
	if sa, sb := a.Stats(), b.Stats(); sa != sb {
		t.Fatalf("stats differ:\n%+v\n%+v", sa, sb)
	}
	if ua, ub := a.Usage(), b.Usage(); ua != ub {
		t.Fatalf("usage differs:\n%+v\n%+v", ua, ub)
	}
}

// admitTwins admits r as id into every one of twins and grows it by g
// tokens, failing t unless all succeed or all fail alike; it reports
// whether the admission succeeded.
func admitTwins(t *rapid.T, twins []Strategy, id SeqID, r Request, g int) bool {
	t.Helper()
	var errs []error
	for _, s := range twins {
		errs = append(errs, s.Admit(id, r))
	}
	for _, err := range errs {
		if (err == nil) != (errs[0] == nil) {
			t.Fatalf("twin admissions differ: %v", errs)
		}
	}
	if errs[0] != nil || g == 0 {
		return errs[0] == nil
	}
	errs = errs[:0]
	for _, s := range twins {
		errs = append(errs, s.Grow(id, g))
	}
	for _, err := range errs {
		if (err == nil) != (errs[0] == nil) {
			t.Fatalf("twin grows differ: %v", errs)
		}
	}
	return true
}
