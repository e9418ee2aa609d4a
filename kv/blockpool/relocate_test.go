package blockpool

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestRelocateCompaction runs random sequences (appends, forks, prefix hits,
// releases) on a pool, then compacts it the vllm-gaudi way (highest used id
// to lowest free id) with RelocateBlocks, and checks that nothing is lost:
// the pool's invariants and every sequence's hold; each block's content (a
// tag per block id, moved with the block) is where its tables say; the used
// blocks end up in the lowest ids; the counters are unchanged.
func TestRelocateCompaction(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 9))
		p, err := New(64, 4, Options{DisablePrefixCaching: seed%2 == 1})
		if err != nil {
			t.Fatal(err)
		}
		content := make([]int, 64) // content[id]: a tag standing for the KV the block holds
		next := 1
		var seqs []*Sequence
		var hashes [][]BlockHash
		for range 200 {
			switch op := r.IntN(10); {
			case op < 5 && len(seqs) > 0: // append to a sequence
				s := seqs[r.IntN(len(seqs))]
				before := len(s.Blocks())
				if err := s.Append(1 + r.IntN(6)); err == nil {
					for _, id := range s.Blocks()[max(0, before-1):] {
						if content[id] == 0 {
							content[id] = next
							next++
						}
					}
				}
			case op < 7: // new sequence, maybe from the cache
				s := NewSequence(p)
				toks := make([]int32, 8)
				for i := range toks {
					toks[i] = int32(r.IntN(3))
				}
				hs := HashChain(nil, NoParent, toks, 4, 0)
				if n, _ := s.MatchPrefix(hs); n == 0 {
					if err := s.Append(8); err != nil {
						continue
					}
					for _, id := range s.Blocks() {
						content[id] = next
						next++
					}
				}
				_, _ = s.Cache(hs)
				seqs = append(seqs, s)
				hashes = append(hashes, hs)
			case op < 8 && len(seqs) > 0: // fork
				seqs = append(seqs, seqs[r.IntN(len(seqs))].Fork())
				hashes = append(hashes, nil)
			case len(seqs) > 0: // release
				i := r.IntN(len(seqs))
				if err := seqs[i].Release(); err != nil {
					t.Fatal(err)
				}
				seqs = append(seqs[:i], seqs[i+1:]...)
				hashes = append(hashes[:i], hashes[i+1:]...)
			}
		}
		// Expected content of every table, by position.
		want := make([][]int, len(seqs))
		for i, s := range seqs {
			for _, id := range s.Blocks() {
				want[i] = append(want[i], content[id])
			}
		}
		st := p.Stats()
		// Plan: highest used id to lowest free id (PlanPool in package defrag).
		var moves []Relocation
		lo, hi := BlockID(1), BlockID(p.NumBlocks()-1)
		for {
			for lo < hi && p.RefCount(lo) > 0 {
				lo++
			}
			for hi > lo && p.RefCount(hi) == 0 {
				hi--
			}
			if lo >= hi {
				break
			}
			moves = append(moves, Relocation{From: hi, To: lo})
			lo++
			hi--
		}
		if err := RelocateBlocks(p, moves, seqs); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, m := range moves { // the copy kernel: swap the two blocks' content
			content[m.From], content[m.To] = content[m.To], content[m.From]
		}
		if err := p.CheckInvariants(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i, s := range seqs {
			if err := s.checkInvariants(); err != nil {
				t.Fatalf("seed %d: sequence %d: %v", seed, i, err)
			}
			for j, id := range s.Blocks() {
				if content[id] != want[i][j] {
					t.Fatalf("seed %d: sequence %d block %d (id %d) holds %d, want %d", seed, i, j, id, content[id], want[i][j])
				}
			}
		}
		for id := 1; id <= p.NumUsed(); id++ {
			if p.RefCount(BlockID(id)) == 0 {
				t.Fatalf("seed %d: block %d is free but %d blocks are used: not compacted", seed, id, p.NumUsed())
			}
		}
		got := p.Stats()
		if got.Free != st.Free || got.Used != st.Used || got.Cached != st.Cached || got.Evictable != st.Evictable ||
			got.TokenSlots != st.TokenSlots || got.InternalSlots != st.InternalSlots {
			t.Fatalf("seed %d: stats changed:\n%v\n%v", seed, st, got)
		}
		// The cache still finds the same content under each key.
		for i, hs := range hashes {
			if hs == nil {
				continue
			}
			for _, h := range hs {
				if id, ok := p.Lookup(h); ok && content[id] == 0 {
					t.Fatalf("seed %d: sequence %d: key %#x names block %d with no content", seed, i, uint64(h), id)
				}
			}
		}
	}
}

func TestRelocateErrors(t *testing.T) {
	p, _ := New(8, 4, Options{})
	s := NewSequence(p)
	if err := s.Append(8); err != nil { // blocks 1 and 2
		t.Fatal(err)
	}
	fork := s.Fork()
	for _, c := range []struct {
		from, to BlockID
		want     error
	}{
		{0, 5, ErrBadBlock},
		{1, 1, ErrBadBlock},
		{1, 99, ErrBadBlock},
		{5, 6, ErrNotAllocated},
		{1, 2, ErrNotFree},
	} {
		if err := p.Relocate(c.from, c.to); !errors.Is(err, c.want) {
			t.Errorf("Relocate(%d, %d) = %v, want %v", c.from, c.to, err, c.want)
		}
	}
	// Block 1 is held twice (s and its fork): moving it with only s given
	// would leave the fork pointing at the old id.
	err := RelocateBlocks(p, []Relocation{{From: 1, To: 5}}, []*Sequence{s})
	if !errors.Is(err, ErrStaleOwner) || p.RefCount(1) != 2 {
		t.Fatalf("got %v (ref %d), want ErrStaleOwner and nothing moved", err, p.RefCount(1))
	}
	if err := RelocateBlocks(p, []Relocation{{From: 1, To: 5}}, []*Sequence{s, fork}); err != nil {
		t.Fatal(err)
	}
	if s.Blocks()[0] != 5 || fork.Blocks()[0] != 5 || p.RefCount(5) != 2 || p.RefCount(1) != 0 {
		t.Fatalf("tables %v %v, refs %d %d", s.Blocks(), fork.Blocks(), p.RefCount(5), p.RefCount(1))
	}
	if err := p.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
