package buddy

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
)

// TestConformance runs the shared property suite (alloctest.Conformance) on
// the default pool (0.9 of free memory: rarely a power of two, so several
// top-level blocks), on a fixed power-of-two pool that leaves device memory
// free, and on one with a large smallest block (2 MiB, so small requests
// waste most of theirs).
func TestConformance(t *testing.T) {
	for _, args := range []string{"", "32MiB", "0.5,min:2MiB"} {
		t.Run("spec=buddy:"+args, func(t *testing.T) {
			alloctest.Conformance(t, func(dev *mem.Device) (alloc.Allocator, error) { return FromSpec(dev, args) })
		})
	}
}
