package caching_test

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/mem"
)

// BenchmarkAllocFree: one free+alloc pair in steady state.
//
//	go test ./alloc/caching/ -run '^$' -bench AllocFree -benchmem -count 6
func BenchmarkAllocFree(b *testing.B) {
	for _, c := range []struct{ name, conf string }{
		{"caching", ""},
		{"caching-expandable", "expandable_segments:True"},
	} {
		alloctest.RunBenchAllocFree(b, c.name, func(dev *mem.Device) (alloc.Allocator, error) {
			return caching.FromSpec(dev, c.conf)
		})
	}
}

// BenchmarkStreams is alloctest.BenchStreams: a free+alloc pair with one
// live block on each of N streams, to show that the cost does not grow
// with the stream count.
//
//	go test -run '^$' -bench BenchmarkStreams -benchmem -benchtime 2000x ./alloc/caching/
func BenchmarkStreams(b *testing.B) {
	alloctest.RunBenchStreams(b, func(dev *mem.Device) (alloc.Allocator, error) { return caching.FromSpec(dev, "") })
}
