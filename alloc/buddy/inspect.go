// Buddy inspection: stats, layout and the invariant check.
// See package alloc for the overview.

package buddy

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// ErrBroken is wrapped by CheckInvariants for a violated invariant.
var ErrBroken = errors.New("buddy: broken invariant")

// Stats returns the counters, all kept incrementally. Allocated counts
// whole blocks and Requested the callers' bytes, so Allocated − Requested
// is the power-of-two rounding. The pool is one raw device allocation held
// for the allocator's whole life.
func (a *Allocator) Stats() alloc.Stats {
	return alloc.Stats{
		Capacity:      a.dev.Capacity(),
		OtherUse:      a.dev.OtherUse(),
		Reserved:      a.pool.size,
		Allocated:     a.allocated,
		Requested:     a.requested,
		PeakReserved:  a.pool.size,
		PeakAllocated: a.peakAlloc,
		Segments:      1,
		LiveBlocks:    a.live.Len(),
		Allocs:        a.allocs,
		Frees:         a.frees,
		OOMs:          a.ooms,
		DeviceAllocs:  1,
	}
}

// blocks returns every block of the pool, live and free, in address order,
// as offsets from the base: a live block with its request, a free one with
// requested 0.
func (a *Allocator) blocks() []mem.Block {
	out := make([]mem.Block, 0, a.live.Len()+a.pool.free.Len())
	a.live.Each(func(_ alloc.Handle, b *block) {
		out = append(out, mem.Block{Addr: b.off, Size: a.pool.blockSize(int(b.order)), Requested: b.requested, State: mem.Active})
	})
	a.pool.each(func(off uint64, k int) {
		out = append(out, mem.Block{Addr: off, Size: a.pool.blockSize(k), State: mem.Free})
	})
	slices.SortFunc(out, func(x, y mem.Block) int {
		switch {
		case x.Addr < y.Addr:
			return -1
		case x.Addr > y.Addr:
			return 1
		}
		return 0
	})
	return out
}

// Layout returns the pool as one segment tiled by its blocks in address
// order: live blocks with their whole power-of-two size and the bytes
// requested (so frag sees the rounding as internal waste), free blocks as
// the buddy system holds them (two free neighbours that are not buddies
// stay two blocks, as they are two blocks to the allocator).
func (a *Allocator) Layout() mem.Layout {
	blocks := a.blocks()
	for i := range blocks {
		blocks[i].Addr += a.base
	}
	return mem.Layout{
		Capacity:       a.dev.Capacity(),
		OtherUse:       a.dev.OtherUse(),
		DeviceFree:     a.dev.Free(),
		MaxAllocatable: a.MaxAllocatable(),
		Segments: []mem.Segment{{
			Addr: a.base, Size: a.pool.size, Stream: 0, Pool: Name, Blocks: blocks,
		}},
	}
}

// CheckInvariants verifies the invariants listed in the package doc and
// returns the first violation, wrapping ErrBroken. It costs O(n log n).
func (a *Allocator) CheckInvariants() error {
	if err := a.pool.check(); err != nil {
		return fmt.Errorf("%w: %w", ErrBroken, err)
	}
	if a.dev.Used() != a.pool.size {
		return fmt.Errorf("%w: device holds %d bytes for a pool of %d", ErrBroken, a.dev.Used(), a.pool.size)
	}
	var allocated, requested int64
	var at uint64
	for _, b := range a.blocks() {
		if b.Addr != at || b.Addr%uint64(b.Size) != 0 {
			return fmt.Errorf("%w: block of %d bytes at offset %d, expected the next one at %d (aligned to its size)",
				ErrBroken, b.Size, b.Addr, at)
		}
		at = b.End()
		if b.State == mem.Free {
			continue
		}
		// A live block is the smallest that holds its request.
		if b.Requested <= 0 || b.Requested > b.Size || b.Size > a.cfg.Min && 2*b.Requested <= b.Size {
			return fmt.Errorf("%w: live block of %d bytes at offset %d holds a request of %d (min %d)",
				ErrBroken, b.Size, b.Addr, b.Requested, a.cfg.Min)
		}
		allocated += b.Size
		requested += b.Requested
	}
	switch {
	case at != uint64(a.pool.size):
		return fmt.Errorf("%w: blocks end at offset %d, pool at %d", ErrBroken, at, a.pool.size)
	case allocated != a.allocated || requested != a.requested:
		return fmt.Errorf("%w: live blocks sum to %d/%d bytes, counters say %d/%d", ErrBroken,
			allocated, requested, a.allocated, a.requested)
	case allocated+a.pool.freeBytes != a.pool.size:
		return fmt.Errorf("%w: allocated %d + free %d != pool %d", ErrBroken, allocated, a.pool.freeBytes, a.pool.size)
	case a.peakAlloc < a.allocated:
		return fmt.Errorf("%w: peak %d below allocated %d", ErrBroken, a.peakAlloc, a.allocated)
	}
	return nil
}
