package analysis

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/mem"
)

// oomSegment is the segment an oom entry's request needed ("Tried to
// allocate"): get_allocation_size of the rounded request, or the request
// itself above mem.MaxRequest, which no device holds and whose rounding
// would overflow (an 8 EiB request read as a negative segment and a
// "fragmentation" verdict).

func oomSegment(requested int64) int64 {
	if requested > mem.MaxRequest {
		return requested
	}
	return caching.AllocationSize(requested)
}

// distrust makes the verdict on an oom entry "unknown" when the replay had
// diverged from the trace before it: unknownFrees free_completed events
// named an address where the model held no allocation. A real trace
// replays with none (the shared one exactly), frees of blocks allocated
// before the trace began included, since those are rebuilt first; each
// one means the recorded allocator held a block the model did not, so the
// model's cached and largest free blocks at the oom are not the real ones
// and cannot tell fragmentation from demand. Private pools (CUDA graphs)
// give such frees legitimately, corrupt files in numbers.
func distrust(o *OOM, unknownFrees int) {
	if unknownFrees == 0 || o.Cause == "unknown" {
		return
	}
	o.Cause = "unknown"
	o.Why = fmt.Sprintf("requested %s with %s free on the device; the replay had diverged from the trace before this entry "+
		"(%d free_completed events named an address where the model held no allocation), so the model's free blocks "+
		"at this moment are not the recorded allocator's, and they cannot tell fragmentation from demand",
		mem.FormatBytes(o.Requested), mem.FormatBytes(o.DeviceFree), unknownFrees)
}
