package arena

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
)

// TestConformance runs the shared property suite (alloctest.Conformance) on
// the default arena and on a fixed-size one that leaves device memory free.
func TestConformance(t *testing.T) {
	t.Run("spec=arena", func(t *testing.T) {
		alloctest.Conformance(t, func(dev *mem.Device) (alloc.Allocator, error) { return FromSpec(dev, "") })
	})
	t.Run("spec=arena:32MiB", func(t *testing.T) {
		alloctest.Conformance(t, func(dev *mem.Device) (alloc.Allocator, error) { return FromSpec(dev, "32MiB") })
	})
}
