package spec

import (
	"strings"
	"testing"
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
