package analysis

import (
	"testing"

	"github.com/gpufrag/gpufrag/frag"
)

// TestCapacityKnown: the capacity-dependent sizes are facts only for a
// given or recorded capacity that holds the reserved bytes; an assumed
// one (default) or none (reserved, --no-replay) is not.
func TestCapacityKnown(t *testing.T) {
	for _, c := range []struct {
		source   string
		capacity int64
		want     bool
	}{
		{"flag", 100, true}, {"oom entry", 100, true}, {"flag", 60, true},
		{"flag", 59, false}, {"oom entry", 10, false},
		{"default", 100, false}, {"reserved", 60, false}, {"", 100, false},
	} {
		d := Device{Capacity: c.capacity, CapacitySource: c.source, Classes: Classes{Reserved: 60, Allocated: 30, Requested: 25, CachedFree: 20},
			Metrics: frag.Metrics{Reserved: 60, Allocated: 40, DeviceFree: 40, MaxAllocatable: 42, LargestFreeBlock: 12}}
		sz := d.Sizes()
		if d.CapacityKnown() != c.want || sz.CapacityKnown != c.want {
			t.Errorf("%q at %d: known %v (Sizes %v), want %v", c.source, c.capacity, d.CapacityKnown(), sz.CapacityKnown, c.want)
		}
		// The byte classes are analyze's (allocated without pending free),
		// the layout figures frag's.
		if want := (Sizes{60, 30, 25, 20, 12, 40, 42, c.want}); sz != want {
			t.Errorf("%q at %d: Sizes %+v, want %+v", c.source, c.capacity, sz, want)
		}
	}
}
