package direct

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/mem"
)

func TestConformance(t *testing.T) {
	alloctest.Conformance(t, func(dev *mem.Device) (alloc.Allocator, error) { return New(dev, Config{}) })
}
