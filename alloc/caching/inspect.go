// Cheap read-only views of the allocator's state, for callers that sample
// it often (a replay's timeline). See package alloc for the overview.

package caching

import (
	"math"

	"github.com/gpufrag/gpufrag/alloc/internal/ordset"
)

// LargestFreeBlock is the largest free mapped block of any pool and stream,
// what frag.LargestFreeBlock computes from Layout, without building the
// layout: O(pools × streams) instead of O(blocks).
func (a *Allocator) LargestFreeBlock() int64 {
	var largest int64
	top := ordset.Key{Hi: math.MaxUint64, Lo: math.MaxUint64}
	for p := range a.pools {
		for _, fs := range a.pools[p].free {
			if fs == nil {
				continue
			}
			fs.Descend(top, func(k ordset.Key) bool {
				largest = max(largest, keySize(k))
				return false
			})
		}
	}
	return largest
}
