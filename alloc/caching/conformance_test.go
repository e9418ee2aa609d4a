package caching_test

import (
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/alloctest"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/mem"
)

// Each configuration exercises different paths: plain best fit and splits;
// oversize rules and release_available_cached_blocks (max_split_size_mb);
// expandable segments (map/unmap); rounding; GC under a memory fraction.
var confs = []string{
	"",
	"max_split_size_mb:20",
	"max_split_size_mb:40,max_non_split_rounding_mb:30",
	"expandable_segments:True",
	"expandable_segments:True,max_split_size_mb:32",
	"roundup_power2_divisions:4",
	"roundup_power2_divisions:[1:2,8:8,>:1]",
	"per_process_memory_fraction:0.8,garbage_collection_threshold:0.6",
}

func TestConformance(t *testing.T) {
	for _, c := range confs {
		t.Run("conf="+c, func(t *testing.T) {
			alloctest.Conformance(t, func(dev *mem.Device) (alloc.Allocator, error) {
				return caching.FromSpec(dev, c)
			})
		})
	}
}

func TestScripts(t *testing.T) {
	alloctest.RunScripts(t, "testdata/scripts", caching.FromSpec)
}
