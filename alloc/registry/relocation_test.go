package registry

import (
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
)

// TestRelocationSummary: every kind is named once, on the side its Caps
// put it.
func TestRelocationSummary(t *testing.T) {
	s := RelocationSummary()
	moves, fixed, ok := strings.Cut(s, " (")
	if !ok || !strings.HasSuffix(fixed, " move nothing)") {
		t.Fatalf("%q: want MOVES (FIXED move nothing)", s)
	}
	for _, k := range Kinds {
		side := fixed
		if k.Caps.Relocates {
			side = moves
		}
		if strings.Count(s, k.Name) != 1 || !strings.Contains(side, k.Name) {
			t.Errorf("%q: kind %s (relocates %v) not once on its side", s, k.Name, k.Caps.Relocates)
		}
	}
}

// TestForPools: the allocator of a layout named by its pool names.
func TestForPools(t *testing.T) {
	for pools, want := range map[string]string{"small": "caching", "8MiB,large": "caching", "arena": "arena",
		"vmm": "vmm", "async": "async", "direct": "direct", "8MiB": "sizeclass", "": Default().String()} {
		var l mem.Layout
		for _, p := range strings.Split(pools, ",") {
			if p != "" {
				l.Segments = append(l.Segments, mem.Segment{Pool: p})
			}
		}
		if got := ForPools(l); got.String() != want {
			t.Errorf("pools %q: %s, want %s", pools, got, want)
		}
	}
}
