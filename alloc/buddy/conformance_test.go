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
// free, on one with a large smallest block (2 MiB, so small requests
// waste most of theirs), and on one whose unit is not a power of two (one
// token's KV of OPT-13B, 819,200 B: blocks of 2^k tokens).
func TestConformance(t *testing.T) {
	for _, args := range []string{"", "32MiB", "0.5,min:2MiB", "0.5,min:819200"} {
		t.Run("spec=buddy:"+args, func(t *testing.T) {
			alloctest.Conformance(t, func(dev *mem.Device) (alloc.Allocator, error) { return FromSpec(dev, args) })
		})
	}
}
