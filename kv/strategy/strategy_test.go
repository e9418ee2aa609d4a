package strategy

import (
	"errors"
	"github.com/gpufrag/gpufrag/model"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/kv/blockpool"
	"github.com/gpufrag/gpufrag/mem"
)

func TestParseNames(t *testing.T) {
	for _, tc := range []struct{ spec, alloc, name string }{
		{"contiguous-max", "caching", "contiguous-max"},
		{" Contiguous-Max:POW2 ", "caching", "contiguous-max:pow2"},
		{"contiguous-max:oracle", "direct", "contiguous-max:oracle"},
		{"contiguous-grow", "caching", "contiguous-grow"},
		{"paged:16", "caching", "paged:16"},
		{"vmm:2MiB", "vmm:2MiB", "vmm:2MiB"},
		{"vmm:65536", "vmm:64KiB", "vmm:64KiB"},
	} {
		s, err := Parse(tc.spec, newEnv(t, tc.alloc, mem.GiB, 64*mem.MiB))
		if err != nil {
			t.Fatalf("%q: %v", tc.spec, err)
		}
		if s.Name() != tc.name {
			t.Errorf("%q: Name %q, want %q", tc.spec, s.Name(), tc.name)
		}
	}
	for _, bad := range []string{"", "paged", "paged:0", "paged:-1", "vmm", "vmm:abc", "contiguous", "contiguous-max:", "vmm:1MiB"} {
		if _, err := Parse(bad, newEnv(t, "vmm:2MiB", mem.GiB, 64*mem.MiB)); !errors.Is(err, ErrBadSpec) {
			t.Errorf("%q: error %v, want ErrBadSpec", bad, err)
		}
	}
	env := newEnv(t, "caching", mem.GiB, 0)
	env.Alloc = nil
	if _, err := Parse("contiguous-max", env); !errors.Is(err, ErrBadSpec) {
		t.Errorf("nil allocator: %v", err)
	}
}

// TestPagedPoolTooManyBlocks: a model far smaller than any real one (one
// layer of hidden size 1: 4 KV bytes per token) would give a pool of more
// blocks than blockpool.MaxBlocks, whose state New allocates at once (33 GB
// for the 1.2e9 blocks of a 76 GB budget); Parse refuses it before
// allocating and names a block size that fits.
func TestPagedPoolTooManyBlocks(t *testing.T) {
	env := newEnv(t, "caching", 80*mem.GiB, 76*mem.GiB)
	env.Model = model.Model{Name: "one", Family: "llama", Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 1,
		Hidden: 1, Intermediate: 1, Vocab: 10, MaxContext: 128, Params: 100, WeightDType: model.BF16}
	_, err := Parse("paged:16", env)
	if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), "use paged:2048 or larger") {
		t.Fatalf("Parse(paged:16) on a 4-byte-per-token model: %v, want ErrBadSpec naming paged:2048", err)
	}
	if _, err := Parse("paged:2048", env); err != nil {
		t.Errorf("Parse(paged:2048), the suggested size: %v", err)
	}
}

func TestNoMemoryWrapsCause(t *testing.T) {
	env := newEnv(t, "caching", 32*mem.MiB, 0)
	s, _ := Parse("contiguous-max", env)
	_ = s.Admit(1, Request{Prompt: 1, N: 1})
	_ = s.Admit(2, Request{Prompt: 1, N: 1})
	err := s.Admit(3, Request{Prompt: 1, N: 1})
	var oom *alloc.OOMError
	if !errors.Is(err, ErrNoMemory) || !errors.Is(err, alloc.ErrOutOfMemory) || !errors.As(err, &oom) {
		t.Fatalf("contiguous OOM: %v", err)
	}

	env = newEnv(t, "caching", mem.GiB, 2*16*tinyBPT)
	s, _ = Parse("paged:16", env)
	if err := s.Admit(1, Request{Prompt: 16, N: 1}); err != nil {
		t.Fatal(err)
	}
	err = s.Grow(1, 1)
	if !errors.Is(err, ErrNoMemory) || !errors.Is(err, blockpool.ErrOutOfBlocks) {
		t.Fatalf("paged OOM: %v", err)
	}
}

func TestMisuse(t *testing.T) {
	s, _ := Parse("contiguous-grow", newEnv(t, "caching", mem.GiB, 0))
	for _, tc := range []struct {
		err  error
		want error
	}{
		{s.Admit(1, Request{Prompt: 0, N: 1}), ErrBadRequest},
		{s.Admit(1, Request{Prompt: 1, N: 0}), ErrBadRequest},
		{s.Admit(1, Request{Prompt: 4096, N: 1}), ErrTooLong},
		{s.Grow(1, 1), ErrUnknownSeq},
		{s.Release(1), ErrUnknownSeq},
		{s.Preempt(1), ErrUnknownSeq},
		{s.Admit(1, Request{Prompt: 1, N: 1}), nil},
		{s.Admit(1, Request{Prompt: 1, N: 1}), ErrDuplicateSeq},
		{s.Grow(1, -1), ErrBadRequest},
	} {
		if !errors.Is(tc.err, tc.want) || (tc.want == nil) != (tc.err == nil) {
			t.Errorf("got %v, want %v", tc.err, tc.want)
		}
	}
}

func TestNextPow2(t *testing.T) {
	for _, tc := range [][2]int{{0, 0}, {1, 1}, {2, 2}, {3, 4}, {200, 256}, {256, 256}, {257, 512}} {
		if got := nextPow2(tc[0]); got != tc[1] {
			t.Errorf("nextPow2(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}
