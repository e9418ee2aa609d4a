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

// TestRulesFor: the rules come from a parsed allocator spec (its kind's
// name and capabilities, arguments ignored); kinds without a relocation
// hook are fixed; a relocating kind without rules is refused; no allocator
// infers the rules from the pools.
func TestRulesFor(t *testing.T) {
	for _, tc := range []struct {
		allocator string
		want      rules
	}{
		{"caching", cachingRules},
		{" Caching:expandable_segments:True", cachingRules},
		{"arena:0.5", arenaRules},
		{"sizeclass:8MiB/64MiB", sizeclassRules},
		{"vmm:2MiB", fixedRules("vmm")},
		{"ASYNC", fixedRules("async")},
		{"direct", fixedRules("direct")},
	} {
		r, err := rulesFor(mem.Layout{}, spec.MustParse(tc.allocator))
		if err != nil || r != tc.want {
			t.Errorf("rulesFor(%q) = %+v, %v; want %+v", tc.allocator, r, err, tc.want)
		}
	}
	// Capabilities decide, not the name: a kind that relocates without
	// rules here is refused, one that does not is fixed.
	_, err := rulesFor(mem.Layout{}, described{"slab", alloc.Caps{Relocates: true}})
	if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), `allocator "slab" relocates blocks, but defrag has no relocation rules`) {
		t.Errorf("rulesFor(slab, relocating): %v", err)
	}
	if r, err := rulesFor(mem.Layout{}, described{"slab", alloc.Caps{}}); err != nil || r != fixedRules("slab") {
		t.Errorf("rulesFor(slab, fixed) = %+v, %v", r, err)
	}
	for pool, want := range map[string]rules{"small": cachingRules, "large": cachingRules, "arena": arenaRules,
		"vmm": fixedRules("vmm"), "async": fixedRules("async"), "direct": fixedRules("direct"), "8MiB": sizeclassRules} {
		l := mem.Layout{Segments: []mem.Segment{{Pool: pool}}}
		if r, err := rulesFor(l, nil); err != nil || r != want {
			t.Errorf("pool %s: %+v, %v; want %+v", pool, r, err, want)
		}
	}
}

// TestBuiltDescribesItself: PlanAllocator's default description of a built
// allocator names its kind and capabilities as its parsed spec does.
func TestBuiltDescribesItself(t *testing.T) {
	for _, k := range spec.Kinds {
		sp := spec.MustParse(k.Example)
		a, err := sp.New(mem.MustDevice(80*mem.GiB, 0))
		if err != nil {
			t.Fatal(err)
		}
		b := built{a}
		if b.Name() != sp.Name() || b.Caps() != sp.Caps() {
			t.Errorf("%s: built %s %+v, spec %s %+v", k.Example, b.Name(), b.Caps(), sp.Name(), sp.Caps())
		}
	}
}

// described is an allocator spec that no registry knows.
type described struct {
	name string
	caps alloc.Caps
}

func (d described) String() string   { return d.name }
func (d described) Name() string     { return d.name }
func (d described) Caps() alloc.Caps { return d.caps }
