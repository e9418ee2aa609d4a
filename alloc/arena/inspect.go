// Arena inspection: stats, layout and the invariant check.
// See package alloc for the overview.

package arena

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// ErrBroken is wrapped by CheckInvariants for a violated invariant.
var ErrBroken = errors.New("arena: broken invariant")

// Stats returns the counters, all kept incrementally. The pool is one raw
// device allocation held for the arena's whole life.
func (a *Allocator) Stats() alloc.Stats {
	return alloc.Stats{
		Capacity:      a.dev.Capacity(),
		OtherUse:      a.dev.OtherUse(),
		Reserved:      a.size,
		Allocated:     a.allocated,
		Requested:     a.requested,
		PeakReserved:  a.size,
		PeakAllocated: a.peakAlloc,
		Segments:      1,
		LiveBlocks:    a.live.Len(),
		Allocs:        a.allocs,
		Frees:         a.frees,
		OOMs:          a.ooms,
		DeviceAllocs:  1,
	}
}

// liveBlocks returns the live blocks sorted by address.
func (a *Allocator) liveBlocks() []block {
	out := make([]block, 0, a.live.Len())
	a.live.Each(func(_ alloc.Handle, b *block) { out = append(out, *b) })
	slices.SortFunc(out, func(x, y block) int {
		switch {
		case x.addr < y.addr:
			return -1
		case x.addr > y.addr:
			return 1
		}
		return 0
	})
	return out
}

// Layout returns the pool as one segment tiled by live blocks and free
// extents in address order.
func (a *Allocator) Layout() mem.Layout {
	live := a.liveBlocks()
	blocks := make([]mem.Block, 0, len(live)+a.free.Len())
	i := 0
	emitLive := func(before uint64) {
		for ; i < len(live) && live[i].addr < before; i++ {
			b := live[i]
			blocks = append(blocks, mem.Block{Addr: b.addr, Size: b.size, Requested: b.requested, State: mem.Active})
		}
	}
	for e := range a.free.All() {
		emitLive(e.Addr)
		blocks = append(blocks, mem.Block{Addr: e.Addr, Size: e.Size, State: mem.Free})
	}
	emitLive(a.base + uint64(a.size))
	return mem.Layout{
		Capacity:       a.dev.Capacity(),
		OtherUse:       a.dev.OtherUse(),
		DeviceFree:     a.dev.Free(),
		MaxAllocatable: a.MaxAllocatable(),
		Segments: []mem.Segment{{
			Addr: a.base, Size: a.size, Stream: 0, Pool: Name, Blocks: blocks,
		}},
	}
}

// CheckInvariants verifies the invariants listed in the package doc and
// returns the first violation, wrapping ErrBroken. It costs O(n log n).
func (a *Allocator) CheckInvariants() error {
	if err := a.free.CheckInvariants(); err != nil {
		return fmt.Errorf("%w: free extents: %w", ErrBroken, err)
	}
	if a.dev.Used() != a.size {
		return fmt.Errorf("%w: device holds %d bytes for a pool of %d", ErrBroken, a.dev.Used(), a.size)
	}
	var allocated, requested int64
	at := a.base
	end := a.base + uint64(a.size)
	live := a.liveBlocks()
	i := 0
	// Walk the pool in address order: every byte is in exactly one live
	// block or free extent.
	next := func() (addr uint64, size int64, free bool, ok bool) {
		f, fok := a.free.Next(at)
		switch {
		case i < len(live) && (!fok || live[i].addr < f.Addr):
			b := live[i]
			i++
			if b.requested <= 0 || b.requested > b.size || b.size%Align != 0 {
				return b.addr, b.size, false, false
			}
			allocated += b.size
			requested += b.requested
			return b.addr, b.size, false, true
		case fok:
			return f.Addr, f.Size, true, true
		}
		return at, 0, false, false
	}
	for at < end {
		addr, size, free, ok := next()
		if !ok || size <= 0 {
			return fmt.Errorf("%w: bad or missing block at %s (size %d, free %v)", ErrBroken, mem.FormatAddr(addr), size, free)
		}
		if addr != at || (addr-a.base)%Align != 0 {
			return fmt.Errorf("%w: block at %s, expected the next one at %s (aligned to %d)", ErrBroken,
				mem.FormatAddr(addr), mem.FormatAddr(at), Align)
		}
		at = addr + uint64(size)
	}
	switch {
	case at != end || i != len(live):
		return fmt.Errorf("%w: blocks end at %s, pool at %s; %d of %d live blocks placed", ErrBroken,
			mem.FormatAddr(at), mem.FormatAddr(end), i, len(live))
	case allocated != a.allocated || requested != a.requested:
		return fmt.Errorf("%w: live blocks sum to %d/%d bytes, counters say %d/%d", ErrBroken,
			allocated, requested, a.allocated, a.requested)
	case allocated+a.free.Total() != a.size:
		return fmt.Errorf("%w: allocated %d + free %d != pool %d", ErrBroken, allocated, a.free.Total(), a.size)
	case a.peakAlloc < a.allocated:
		return fmt.Errorf("%w: peak %d below allocated %d", ErrBroken, a.peakAlloc, a.allocated)
	}
	return nil
}
