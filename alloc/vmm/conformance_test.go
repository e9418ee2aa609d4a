package vmm

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
)

func TestConformance(t *testing.T) {
	for _, cfg := range []Config{
		DefaultConfig(),
		// vAttention's 64 KiB pages, with ranges small enough that some
		// requests exceed them (the range is then the request's own size).
		{Page: MinPage, MaxRange: 16 * mem.MiB},
		// A page that is not a power of two and does not divide 2 MiB.
		{Page: 192 * mem.KiB, MaxRange: 192 * mem.KiB},
	} {
		t.Run("spec="+cfg.String(), func(t *testing.T) {
			alloctest.Conformance(t, func(dev *mem.Device) (alloc.Allocator, error) { return New(dev, cfg) })
		})
	}
}
