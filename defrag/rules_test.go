package defrag

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/spec"
	"github.com/gpufrag/gpufrag/mem"
)

// TestRulesTableCoversRelocators: every allocator kind of alloc/spec that
// implements alloc.Relocator has relocation rules here, and the table names
// no other, so adding a relocating allocator fails this test until its
// rules exist.
func TestRulesTableCoversRelocators(t *testing.T) {
	relocators := map[string]bool{}
	for _, k := range spec.Kinds {
		if k.Caps.Relocates {
			relocators[k.Name] = true
			if r, ok := relocating[k.Name]; !ok || r.name != k.Name || r.fixed {
				t.Errorf("%s relocates blocks: rules %+v, %v", k.Name, r, ok)
			}
		}
	}
	for name := range relocating {
		if !relocators[name] {
			t.Errorf("rules for %s, which is no relocating allocator of alloc/spec", name)
		}
	}
}

// TestRulesFor: the rules come from the allocator kind alloc/spec names
// (name only, any case, arguments ignored); kinds without a relocation hook
// are fixed; an unknown name gets the registry's message; no name infers
// the rules from the pools.
func TestRulesFor(t *testing.T) {
	for _, tc := range []struct {
		allocator string
		want      rules
	}{
		{"caching", cachingRules},
		{" Caching:expandable_segments:True", cachingRules},
		{"caching:not-parsed-here", cachingRules},
		{"arena:0.5", arenaRules},
		{"sizeclass:8MiB/64MiB", sizeclassRules},
		{"vmm:2MiB", fixedRules("vmm")},
		{"ASYNC", fixedRules("async")},
		{"direct", fixedRules("direct")},
	} {
		r, err := rulesFor(mem.Layout{}, tc.allocator)
		if err != nil || r != tc.want {
			t.Errorf("rulesFor(%q) = %+v, %v; want %+v", tc.allocator, r, err, tc.want)
		}
	}
	_, err := rulesFor(mem.Layout{}, "cudamalloc")
	if !errors.Is(err, ErrLayout) || !errors.Is(err, alloc.ErrBadSpec) || !strings.Contains(err.Error(), `unknown allocator "cudamalloc" (known: `) {
		t.Errorf("rulesFor(cudamalloc): %v", err)
	}
	for pool, want := range map[string]rules{"small": cachingRules, "large": cachingRules, "arena": arenaRules,
		"vmm": fixedRules("vmm"), "async": fixedRules("async"), "direct": fixedRules("direct"), "8MiB": sizeclassRules} {
		l := mem.Layout{Segments: []mem.Segment{{Pool: pool}}}
		if r, err := rulesFor(l, ""); err != nil || r != want {
			t.Errorf("pool %s: %+v, %v; want %+v", pool, r, err, want)
		}
	}
}
