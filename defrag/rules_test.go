package defrag

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/mem"
)

// The rules of gpufrag's relocating allocators, as the planner knew them
// from its own table before they were the allocators' (alloc.Relocation):
// the test that they did not change.
var (
	cachingRules   = rules{name: "caching", Relocation: alloc.Relocation{Releasable: true, Streams: true, SizePools: true}}
	arenaRules     = rules{name: "arena", Relocation: alloc.Relocation{Memmove: true}}
	sizeclassRules = rules{name: "sizeclass", Relocation: alloc.Relocation{Releasable: true, Slots: true}}
)

func fixedRules(name string) rules {
	return rules{name: name, Relocation: alloc.Relocation{Releasable: true}, fixed: true}
}

// TestRulesFor: the rules come from an allocator's capabilities (its
// kind's name and alloc.Caps.Relocation, arguments ignored), from a parsed
// spec and from a built allocator alike; kinds without a relocation hook
// are fixed; no allocator is an error.
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
		{"buddy", fixedRules("buddy")},
	} {
		sp := registry.MustParse(tc.allocator)
		r, err := rulesFor(sp)
		if err != nil || r != tc.want {
			t.Errorf("rulesFor(%q) = %+v, %v; want %+v", tc.allocator, r, err, tc.want)
		}
		a, err := sp.New(mem.MustDevice(80*mem.GiB, 0))
		if err != nil {
			t.Fatal(err)
		}
		if r, err := rulesFor(built{a}); err != nil || r != tc.want {
			t.Errorf("rulesFor(built %q) = %+v, %v; want %+v", tc.allocator, r, err, tc.want)
		}
	}
	// Capabilities decide, not the name: a kind no table knows is planned
	// by the relocation it declares.
	slab := alloc.Relocation{Releasable: true, Slots: true}
	if r, err := rulesFor(described{"slab", alloc.Caps{Relocates: true, Relocation: slab}}); err != nil || r != (rules{name: "slab", Relocation: slab}) {
		t.Errorf("rulesFor(slab, relocating) = %+v, %v", r, err)
	}
	if r, err := rulesFor(described{"slab", alloc.Caps{}}); err != nil || r != fixedRules("slab") {
		t.Errorf("rulesFor(slab, fixed) = %+v, %v", r, err)
	}
	if _, err := rulesFor(nil); !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "registry.ForPools") {
		t.Errorf("rulesFor(nil): %v", err)
	}
}

// TestBuiltDescribesItself: PlanAllocator's default description of a built
// allocator names its kind and capabilities as its parsed spec does.
func TestBuiltDescribesItself(t *testing.T) {
	for _, k := range registry.Kinds {
		sp := registry.MustParse(k.Example)
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
