package async

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
)

// TestConformance runs the shared property suite (alloctest.Conformance)
// with the default release threshold (every Sync trims), with one that
// keeps some pages, and with "max" (Sync never trims).
func TestConformance(t *testing.T) {
	for _, args := range []string{"", "release_threshold:20MiB", "release_threshold:max"} {
		t.Run("spec=async:"+args, func(t *testing.T) {
			alloctest.Conformance(t, func(dev *mem.Device) (alloc.Allocator, error) { return FromSpec(dev, args) })
		})
	}
}
