package strategy

import (
	"testing"

	"github.com/gpufrag/gpufrag/mem"
)

// TestPagedWarm: a warmed prompt is found by the next admission of the same
// prompt (all full blocks but the one holding its last token), leaves the
// stats as they were, and a pool too small for it caches nothing.
func TestPagedWarm(t *testing.T) {
	const bs = 16
	env := newEnv(t, "caching", 1*mem.GiB, 64*bs*tinyBPT) // 64 blocks
	s, err := Parse("paged:16", env)
	if err != nil {
		t.Fatal(err)
	}
	pc := s.(PrefixCaching)
	r := Request{Prompt: 200, MaxOutput: 10, TrueOutput: 10, N: 1, PrefixIDs: []uint64{42}, PrefixSpan: 512}
	before := s.Stats()
	ok, err := pc.Warm(r)
	if err != nil || !ok {
		t.Fatalf("Warm = %v, %v; want true, nil", ok, err)
	}
	if got := s.Stats(); got != before {
		t.Fatalf("Warm changed the stats: %v, was %v", got, before)
	}
	if err := s.Admit(1, r); err != nil {
		t.Fatal(err)
	}
	// 200 tokens: 12 full blocks, the 13th holds the last token.
	if got, want := pc.PrefixHit(1), 12*bs; got != want {
		t.Fatalf("hit after Warm = %d tokens, want %d", got, want)
	}
	other := r
	other.PrefixIDs = []uint64{43}
	if err := s.Admit(2, other); err != nil {
		t.Fatal(err)
	}
	if got := pc.PrefixHit(2); got != 0 {
		t.Fatalf("another prompt hit %d warmed tokens", got)
	}
	// Without prefix ids, or larger than the pool: nothing.
	if ok, err := pc.Warm(Request{Prompt: 200, N: 1}); ok || err != nil {
		t.Fatalf("Warm without ids = %v, %v", ok, err)
	}
	huge := Request{Prompt: 65 * bs, N: 1, PrefixIDs: []uint64{44, 45, 46}, PrefixSpan: 512}
	if ok, err := pc.Warm(huge); ok || err != nil {
		t.Fatalf("Warm of a prompt larger than the pool = %v, %v", ok, err)
	}
	if err := s.Admit(3, Request{Prompt: 100, N: 1, PrefixIDs: []uint64{44}, PrefixSpan: 512}); err != nil {
		t.Fatal(err)
	}
	if got := pc.PrefixHit(3); got != 0 {
		t.Fatalf("a prompt that did not fit when warmed hit %d tokens", got)
	}
	// Prefix caching off: nothing.
	env.NoPrefixCaching = true
	env.Alloc = newEnv(t, "caching", 1*mem.GiB, 0).Alloc
	off, err := Parse("paged:16", env)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := off.(PrefixCaching).Warm(r); ok || err != nil {
		t.Fatalf("Warm with prefix caching off = %v, %v", ok, err)
	}
}
