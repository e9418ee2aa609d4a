package sizeclass

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
)

func TestConformance(t *testing.T) {
	for _, spec := range []string{
		// The defaults: most requests of the suite land in the 8 MiB and
		// 64 MiB classes, and a 512 MiB slab often does not fit at all.
		"",
		// Small classes that share a page (4096 and 2 slots per slab), slabs
		// with tails, and a largest class low enough that the direct path
		// runs often.
		"512B/768KiB/1536KiB/3MiB/20MiB",
	} {
		cfg, err := ParseConfig(spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Run("spec="+cfg.String(), func(t *testing.T) {
			alloctest.Conformance(t, func(dev *mem.Device) (alloc.Allocator, error) { return New(dev, cfg) })
		})
	}
}
