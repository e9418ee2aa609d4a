// Cheap views of the allocator's state, for callers that sample it often (a
// replay's timeline and oom entries). See package alloc for the overview.

package caching

// LargestFreeBlock is the largest free mapped block of any pool (default or
// private) and stream,
// what frag.LargestFreeBlock computes from Layout, without building the
// layout: the first call builds an index over the free sets (O(pools ×
// streams)), later ones look again only at the sets changed since, O(log
// streams) each (maxIndex).
func (a *Allocator) LargestFreeBlock() int64 { return a.largestFree() }

// LargestFreeIn is the largest free mapped block of one default pool (small:
// the small pool, else the large one) on one stream, 0 if none: what a scan of
// Layout's segments of that pool and stream finds, without building the
// layout. A snapshot replay asks it at every oom entry.
func (a *Allocator) LargestFreeIn(small bool, stream int) int64 {
	si, ok := a.streamIndex(stream)
	if !ok {
		return 0
	}
	p := largePool
	if small {
		p = smallPool
	}
	return a.setLargest(int(p), si)
}
