package strategy

import (
	"errors"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// A defragmenter moves a contiguous sequence's block through the allocator's
// Relocate and tells the strategy; LiveBlocks then shows the new address and
// releasing the sequence frees the moved block.
func TestMovable(t *testing.T) {
	env := newEnv(t, "caching", mem.GiB, 0)
	s, err := Parse("contiguous-max:oracle", env)
	if err != nil {
		t.Fatal(err)
	}
	mv, ok := s.(Movable)
	if !ok {
		t.Fatal("contiguous does not implement Movable")
	}
	if _, ok := Strategy(mustParse(t, "paged:16", newEnv(t, "caching", mem.GiB, 64*mem.MiB))).(Movable); ok {
		t.Error("paged implements Movable: its pool is one allocation with nothing to move")
	}
	// Two 100-token sequences (800 KiB each) share one 20 MiB segment of
	// the caching allocator's large pool; free the first, so the second can
	// move down to the segment's start.
	for id := SeqID(1); id <= 2; id++ {
		if err := s.Admit(id, Request{Prompt: 100, TrueOutput: 100, N: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Release(1); err != nil {
		t.Fatal(err)
	}
	live := mv.LiveBlocks(nil)
	if len(live) != 1 {
		t.Fatalf("live blocks %v, want one", live)
	}
	old := live[0]
	l := env.Alloc.Layout()
	dst := l.Segments[0].Addr
	if dst == old.Addr {
		t.Fatalf("block already at the segment start %s", mem.FormatAddr(dst))
	}
	nb, err := env.Alloc.(alloc.Relocator).Relocate(old.Handle, dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := mv.Moved(nb.Handle, nb); err != nil {
		t.Fatal(err)
	}
	if got := mv.LiveBlocks(nil); len(got) != 1 || got[0].Addr != dst || got[0].Handle != old.Handle {
		t.Fatalf("after the move: %v, want the same handle at %s", got, mem.FormatAddr(dst))
	}
	if err := mv.Moved(alloc.Handle(12345), nb); !errors.Is(err, ErrUnknownSeq) {
		t.Errorf("Moved of an unknown handle: %v", err)
	}
	if err := mv.Moved(nb.Handle, alloc.Block{Handle: nb.Handle, Addr: dst, Size: nb.Size + 512}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("Moved with another size: %v", err)
	}
	if err := s.Release(2); err != nil {
		t.Fatal(err)
	}
	if a := env.Alloc.Stats().Allocated; a != 0 {
		t.Errorf("allocated %d after releasing everything", a)
	}
}

func mustParse(t *testing.T, spec string, env Env) Strategy {
	t.Helper()
	s, err := Parse(spec, env)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
