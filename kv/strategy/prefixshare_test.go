package strategy

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/gpufrag/gpufrag/kv/blockpool"
	"github.com/gpufrag/gpufrag/mem"
)

// TestPagedPrefixShared: two requests with a 64-token common prefix (4
// blocks of 16, in spans of 32 tokens) and their own tails. The second
// finds the prefix held by the first: PrefixCached says 64 tokens hit,
// none idle, and SharedTokens counts the 4 blocks once more. Once the
// first is released the blocks have one holder (0 shared), and a third
// request with the same prefix finds it held by the second; released
// too, it finds them idle (cached and free).
func TestPagedPrefixShared(t *testing.T) {
	const bs = 16
	env := newEnv(t, "caching", 1*mem.GiB, 256*bs*tinyBPT)
	s, err := Parse("paged:16", env)
	if err != nil {
		t.Fatal(err)
	}
	ps := s.(PrefixSharing)
	pc := s.(PrefixCaching)
	req := func(tail uint64, n int) Request {
		return Request{Prompt: 100, N: n, PrefixIDs: []uint64{7, 8, tail, tail + 1}, PrefixSpan: 32}
	}
	if hit, idle := ps.PrefixCached(req(100, 1)); hit != 0 || idle != 0 {
		t.Fatalf("empty cache: PrefixCached = %d, %d; want 0, 0", hit, idle)
	}
	if err := s.Admit(1, req(100, 1)); err != nil {
		t.Fatal(err)
	}
	if got := ps.SharedTokens(); got != 0 {
		t.Fatalf("one request: shared %d tokens, want 0", got)
	}
	b := req(200, 2)
	if hit, idle := ps.PrefixCached(b); hit != 64 || idle != 0 {
		t.Fatalf("prefix held by a live request: PrefixCached = %d, %d; want 64, 0", hit, idle)
	}
	if err := s.Admit(2, b); err != nil {
		t.Fatal(err)
	}
	if got := pc.PrefixHit(2); got != 64 {
		t.Fatalf("PrefixHit = %d, want 64 (as PrefixCached said)", got)
	}
	if got := ps.SharedTokens(); got != 64 {
		t.Fatalf("two requests sharing 4 blocks: shared %d tokens, want 64", got)
	}
	if err := s.Grow(2, 30); err != nil { // its 2 samples copy their last block
		t.Fatal(err)
	}
	if err := s.Release(1); err != nil {
		t.Fatal(err)
	}
	if got := ps.SharedTokens(); got != 0 {
		t.Fatalf("the first released: shared %d tokens, want 0 (one holder left)", got)
	}
	c := req(300, 1)
	if hit, idle := ps.PrefixCached(c); hit != 64 || idle != 0 {
		t.Fatalf("prefix held by the 2-sample request: PrefixCached = %d, %d; want 64, 0", hit, idle)
	}
	if err := s.Release(2); err != nil {
		t.Fatal(err)
	}
	// The first request's tail (ids 100, 101) is cached and free too, but
	// c's tail differs: only the common prefix hits.
	if hit, idle := ps.PrefixCached(c); hit != 64 || idle != 64 {
		t.Fatalf("prefix cached, nobody holding it: PrefixCached = %d, %d; want 64, 64", hit, idle)
	}
	if hit, idle := ps.PrefixCached(req(100, 1)); hit != 96 || idle != 96 {
		t.Fatalf("the first prompt again: PrefixCached = %d, %d; want 96, 96 (6 full blocks; the 7th holds the last token)", hit, idle)
	}
	if got := ps.SharedTokens(); got != 0 {
		t.Fatalf("nothing live: shared %d tokens", got)
	}
}

// TestPagedPrefixSharedRandom: admissions, growth and releases of requests
// of 1 or 2 samples whose prompts draw their ids from a few prefixes keep
// SharedTokens at the count a scan of every live sample's blocks gives
// (Σ over held blocks of (requests holding it − 1) × B), and PrefixCached
// agrees with the admission that follows: its hit is PrefixHit, and its
// idle part is the hit blocks no live request held before.
func TestPagedPrefixSharedRandom(t *testing.T) {
	const bs = 16
	p := newTinyPaged(t, bs, 400, nil)
	rng := rand.New(rand.NewPCG(24, 10))
	var live []SeqID
	next := SeqID(0)
	sharing := 0 // steps with blocks shared
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 5: // admit
			ids := []uint64{uint64(rng.IntN(3)), uint64(rng.IntN(2)), uint64(1000 + step)}
			r := Request{Prompt: 20 + rng.IntN(120), N: 1 + rng.IntN(2), PrefixIDs: ids[:1+rng.IntN(3)], PrefixSpan: 32}
			hit, idle := p.PrefixCached(r)
			held := heldByLive(p)
			err := p.Admit(next, r)
			if errors.Is(err, ErrNoMemory) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.PrefixHit(next); got != hit {
				t.Fatalf("step %d: PrefixHit %d, PrefixCached said %d", step, got, hit)
			}
			ps, _ := p.seqs.get(next)
			wantIdle := 0
			for _, b := range ps.samples[0].Blocks()[:hit/bs] {
				if len(held[b]) == 0 {
					wantIdle += bs
				}
			}
			if idle != wantIdle {
				t.Fatalf("step %d: PrefixCached idle %d tokens, the blocks found had %d no live request held", step, idle, wantIdle)
			}
			live = append(live, next)
			next++
		case op < 8 && len(live) > 0: // grow one
			id := live[rng.IntN(len(live))]
			if err := p.Grow(id, 1+rng.IntN(20)); err != nil && !errors.Is(err, ErrNoMemory) && !errors.Is(err, ErrTooLong) {
				t.Fatal(err)
			}
		case len(live) > 0: // release one
			i := rng.IntN(len(live))
			if err := p.Release(live[i]); err != nil {
				t.Fatal(err)
			}
			live = append(live[:i], live[i+1:]...)
		}
		var want int64
		for _, holders := range heldByLive(p) {
			want += int64(len(holders)-1) * bs
		}
		if got := p.SharedTokens(); got != want {
			t.Fatalf("step %d: SharedTokens %d, a scan of the live requests gives %d", step, got, want)
		}
		if want > 0 {
			sharing++
		}
	}
	if sharing < 1000 {
		t.Fatalf("blocks shared in %d of 3,000 steps: the test hardly shares", sharing)
	}
	t.Logf("blocks shared in %d of 3,000 steps; %d admissions", sharing, next)
}

// heldByLive maps every held block to the live requests holding it.
func heldByLive(p *paged) map[blockpool.BlockID]map[SeqID]bool {
	held := map[blockpool.BlockID]map[SeqID]bool{}
	for _, id := range p.seqs.ids() {
		ps, _ := p.seqs.get(id)
		for _, s := range ps.samples {
			for _, b := range s.Blocks() {
				if held[b] == nil {
					held[b] = map[SeqID]bool{}
				}
				held[b][id] = true
			}
		}
	}
	return held
}
