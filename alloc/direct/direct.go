// Direct allocator: one raw device allocation per request.
// See package alloc for the overview.

package direct

import (
	"fmt"
	"math"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/slot"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/mem"
)

// block is one live allocation: a segment of exactly one block.
type block struct {
	addr      uint64 // start of its fresh virtual range; fixed for its life
	size      int64  // mem.PageRound(requested): physical bytes held; fixed
	requested int64  // bytes the caller asked for; fixed
	stream    int    // stream of the request; recorded only
}

// Allocator is the direct allocator. It is not safe for concurrent use.
type Allocator struct {
	cfg  Config
	dev  *mem.Device       // owned: dev.Used() == st.Reserved at all times
	live slot.Table[block] // live allocations; Put by Alloc, Delete by Free
	st   alloc.Stats       // kept incrementally; CheckInvariants recounts it
}

var _ alloc.Allocator = (*Allocator)(nil)

// New returns a direct allocator that owns dev, which must have no memory in
// use yet.
func New(dev *mem.Device, cfg Config) (*Allocator, error) {
	if err := dev.CheckUnused("direct"); err != nil {
		return nil, err
	}
	return &Allocator{
		cfg: cfg,
		dev: dev,
		st:  alloc.Stats{Capacity: dev.Capacity(), OtherUse: dev.OtherUse()},
	}, nil
}

// FromSpec builds a direct allocator from the spec arguments after "direct:"
// (there are none).
func FromSpec(dev *mem.Device, args string) (alloc.Allocator, error) {
	cfg, err := ParseConfig(args)
	if err != nil {
		return nil, err
	}
	return New(dev, cfg)
}

// Spec returns "direct".
func (a *Allocator) Spec() string {
	if s := a.cfg.String(); s != "" {
		return Name + ":" + s
	}
	return Name
}

// Alloc takes mem.PageRound(size) bytes from the device in a fresh virtual
// range.
func (a *Allocator) Alloc(size int64, stream int) (alloc.Block, error) {
	if size <= 0 {
		return alloc.Block{}, fmt.Errorf("%w: direct: got %d bytes", alloc.ErrInvalidSize, size)
	}
	n := pageRound(size)
	addr, ok := uint64(0), a.dev.Reserve(n)
	if ok {
		if addr, ok = a.dev.TryReserveVA(n); !ok {
			a.dev.Unreserve(n) // no address range left for it: out of memory all the same
		}
	}
	if !ok {
		a.st.OOMs++
		if invariants.Enabled {
			a.mustCheck()
		}
		return alloc.Block{}, &alloc.OOMError{
			Requested: size, AllocSize: n,
			Capacity: a.st.Capacity, DeviceFree: a.dev.Free(),
			Allocated: a.st.Allocated, Reserved: a.st.Reserved,
		}
	}
	b := block{addr: addr, size: n, requested: size, stream: stream}
	h := a.live.Put(b)
	st := &a.st
	st.Reserved += n
	st.Allocated += n
	st.Requested += size
	st.PeakReserved = max(st.PeakReserved, st.Reserved)
	st.PeakAllocated = max(st.PeakAllocated, st.Allocated)
	st.Segments++
	st.LiveBlocks++
	st.Allocs++
	st.DeviceAllocs++
	if invariants.Enabled {
		a.mustCheck()
	}
	return alloc.Block{Handle: h, Addr: b.addr, Size: n}, nil
}

// Free releases the allocation's pages and its virtual range to the device
// at once.
func (a *Allocator) Free(h alloc.Handle) error {
	b := a.live.Get(h)
	if b == nil {
		return alloc.ErrInvalidHandle
	}
	n, req := b.size, b.requested
	a.dev.ReleaseVA(b.addr, n) // reused once the fresh space runs out
	a.live.Delete(h)
	a.dev.Release(n)
	st := &a.st
	st.Reserved -= n
	st.Allocated -= n
	st.Requested -= req
	st.Segments--
	st.LiveBlocks--
	st.Frees++
	st.DeviceFrees++
	if invariants.Enabled {
		a.mustCheck()
	}
	return nil
}

// EmptyCache does nothing: there is no cache.
func (a *Allocator) EmptyCache() {}

// Stats returns the counters.
func (a *Allocator) Stats() alloc.Stats { return a.st }

// MaxAllocatable is the device's free memory rounded down to whole pages: a
// request of that size page-rounds to itself and fits.
func (a *Allocator) MaxAllocatable() int64 {
	f := a.dev.Free()
	return f - f%mem.PageSize
}

// Layout returns one segment per live allocation, sorted by address.
func (a *Allocator) Layout() mem.Layout {
	l := mem.Layout{
		Capacity:       a.st.Capacity,
		OtherUse:       a.st.OtherUse,
		DeviceFree:     a.dev.Free(),
		MaxAllocatable: a.MaxAllocatable(),
		Segments:       make([]mem.Segment, 0, a.live.Len()),
	}
	blocks := make([]mem.Block, a.live.Len()) // one backing array for all segments
	a.live.Each(func(_ alloc.Handle, b *block) {
		i := len(l.Segments)
		blocks[i] = mem.Block{Addr: b.addr, Size: b.size, Requested: b.requested, State: mem.Active}
		l.Segments = append(l.Segments, mem.Segment{
			Addr: b.addr, Size: b.size, Stream: b.stream, Pool: Pool, Blocks: blocks[i : i+1 : i+1],
		})
	})
	l.Sort()
	return l
}

// Clone returns an independent copy on a copy of the device.
func (a *Allocator) Clone() alloc.Allocator {
	c := *a
	c.dev = a.dev.Clone()
	c.live = a.live.Clone()
	return &c
}

// pageRound is mem.PageRound for a request that may be near the int64 limit:
// a size that cannot be rounded without overflow is returned unrounded (no
// device has that much memory, so the caller fails it as out of memory).
func pageRound(size int64) int64 {
	if size > math.MaxInt64-mem.PageSize {
		return size
	}
	return mem.PageRound(size)
}
