// VMM allocator: one virtual range per allocation, pages mapped on demand.
// See package alloc for the overview.

package vmm

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/slot"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/mem"
)

// ErrRangeFull is returned by Grow when the new size needs more than the
// virtual space reserved for the range (Config.MaxRange): growing in place is
// impossible and the caller must allocate anew and copy.
var ErrRangeFull = errors.New("vmm: range's reserved virtual space is full")

// ErrShrink is returned by Grow for a new size below the current requested
// size: Grow only adds pages (a sequence's KV cache does not shrink while it
// lives; it is freed whole).
var ErrShrink = errors.New("vmm: grow below the current size")

// rng is one live allocation: a reserved virtual range whose first pages are
// mapped.
type rng struct {
	addr      uint64 // start of the virtual range; fixed for its life
	va        int64  // virtual bytes reserved, a multiple of P; fixed
	pages     int64  // P-byte pages mapped at the start; only grows (Grow)
	requested int64  // bytes the caller asked for; only grows (Grow)
	stream    int    // stream of the request; recorded only
}

// Allocator is the VMM allocator. It is not safe for concurrent use.
type Allocator struct {
	cfg  Config
	dev  *mem.Device     // owned: dev.Used() == st.Reserved at all times
	live slot.Table[rng] // live ranges; Put by Alloc, Delete by Free
	st   alloc.Stats     // kept incrementally; CheckInvariants recounts it
	// mut counts Alloc and Free calls, not grows, for round trips
	// (trip.go): a closed trip stays repeatable across grows. It is no
	// Stamper's stamp, as a grow changes the Layout.
	mut  alloc.Mutations
	high int64 // the most bytes mapped since the last BeginTrip
}

var (
	_ alloc.Allocator = (*Allocator)(nil)
	_ alloc.Grower    = (*Allocator)(nil)
)

// New returns a VMM allocator that owns dev, which must have no memory in use
// yet. Zero fields of cfg take the defaults.
func New(dev *mem.Device, cfg Config) (*Allocator, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := dev.CheckUnused("vmm"); err != nil {
		return nil, err
	}
	return &Allocator{
		cfg: cfg,
		dev: dev,
		st:  alloc.Stats{Capacity: dev.Capacity(), OtherUse: dev.OtherUse()},
	}, nil
}

// FromSpec builds a VMM allocator from the spec arguments after "vmm:".
func FromSpec(dev *mem.Device, args string) (alloc.Allocator, error) {
	cfg, err := ParseConfig(args)
	if err != nil {
		return nil, err
	}
	return New(dev, cfg)
}

// Config returns the allocator's configuration, defaults filled in.
func (a *Allocator) Config() Config { return a.cfg }

// Spec returns "vmm:" and the canonical arguments.
func (a *Allocator) Spec() string { return Name + ":" + a.cfg.String() }

// pagesFor is ceil(size/P), without overflow for any positive size.
func (a *Allocator) pagesFor(size int64) int64 { return (size-1)/a.cfg.Page + 1 }

// Alloc reserves a virtual range and maps ceil(size/P) pages at its start.
func (a *Allocator) Alloc(size int64, stream int) (alloc.Block, error) {
	a.mut.Mutated()
	if size <= 0 {
		return alloc.Block{}, fmt.Errorf("%w: vmm: got %d bytes", alloc.ErrInvalidSize, size)
	}
	p := a.pagesFor(size)
	n := size // only for a size whose rounding overflows, which no device can map
	if p <= math.MaxInt64/a.cfg.Page {
		n = p * a.cfg.Page
	}
	if !a.dev.Reserve(n) {
		return alloc.Block{}, a.oom(size, n)
	}
	r := rng{va: max(a.cfg.MaxRange, n), pages: p, requested: size, stream: stream}
	var ok bool
	if r.addr, ok = a.dev.TryReserveVA(r.va); !ok {
		a.dev.Unreserve(n) // no address range left for it: out of memory all the same
		return alloc.Block{}, a.oom(size, n)
	}
	h := a.live.Put(r)
	st := &a.st
	st.Segments++
	st.LiveBlocks++
	st.Allocs++
	a.mapped(p, size)
	if invariants.Enabled {
		a.mustCheck()
	}
	return alloc.Block{Handle: h, Addr: r.addr, Size: n}, nil
}

// mapped accounts p newly mapped pages and req newly requested bytes.
func (a *Allocator) mapped(p, req int64) {
	n := p * a.cfg.Page
	st := &a.st
	st.Reserved += n
	st.Allocated += n
	st.Requested += req
	st.PeakReserved = max(st.PeakReserved, st.Reserved)
	st.PeakAllocated = max(st.PeakAllocated, st.Allocated)
	st.DeviceAllocs += p
	a.high = max(a.high, st.Reserved)
}

// oom counts and returns an out-of-memory error for a request of size bytes
// that needed n more bytes mapped.
func (a *Allocator) oom(size, n int64) error {
	a.st.OOMs++
	if invariants.Enabled {
		a.mustCheck()
	}
	return &alloc.OOMError{
		Requested: size, AllocSize: n,
		Capacity: a.st.Capacity, DeviceFree: a.dev.Free(),
		Allocated: a.st.Allocated, Reserved: a.st.Reserved,
	}
}

// Grow makes the live allocation h at least newSize bytes by mapping more
// pages at the end of its range, in place: the address stays the same and
// nothing is copied. newSize must not be below the current requested size;
// when the pages already mapped cover it, only the requested size changes.
// It fails with alloc.ErrInvalidHandle, ErrShrink, an
// *alloc.OOMError (Requested = newSize, AllocSize = the bytes it tried to
// map; counted in Stats.OOMs) or ErrRangeFull, and then changes nothing but
// the OOM count. Grow is not an Alloc: only the requested and mapped bytes
// and the map count move. It implements alloc.Grower: the pages it maps
// come straight from the device, so a grow needing at most MaxAllocatable
// bytes succeeds.
func (a *Allocator) Grow(h alloc.Handle, newSize int64) (alloc.Block, error) {
	r := a.live.Get(h)
	if r == nil {
		return alloc.Block{}, alloc.ErrInvalidHandle
	}
	if newSize < r.requested {
		return alloc.Block{}, fmt.Errorf("%w: %d bytes requested now, %d asked", ErrShrink, r.requested, newSize)
	}
	p := a.pagesFor(newSize)
	if p > r.va/a.cfg.Page {
		return alloc.Block{}, fmt.Errorf("%w: %d bytes needed, %s reserved (Config.MaxRange)",
			ErrRangeFull, newSize, formatExact(r.va))
	}
	extra := p - r.pages
	if extra > 0 && !a.dev.Reserve(extra*a.cfg.Page) {
		return alloc.Block{}, a.oom(newSize, extra*a.cfg.Page)
	}
	dreq := newSize - r.requested
	r.pages = p
	r.requested = newSize
	a.mapped(extra, dreq)
	if invariants.Enabled {
		a.mustCheck()
	}
	return alloc.Block{Handle: h, Addr: r.addr, Size: p * a.cfg.Page}, nil
}

// GrowUnit is the page size P (alloc.Grower): a grown range maps whole
// pages.
func (a *Allocator) GrowUnit() int64 { return a.cfg.Page }

// MaxGrowSize is Config.MaxRange (alloc.Grower): every range reserves at
// least that much virtual space, so Grow to it never hits ErrRangeFull.
func (a *Allocator) MaxGrowSize() int64 { return a.cfg.MaxRange }

// Free unmaps every page of the range at once and gives its virtual range
// back to the device.
func (a *Allocator) Free(h alloc.Handle) error {
	a.mut.Mutated()
	r := a.live.Get(h)
	if r == nil {
		return alloc.ErrInvalidHandle
	}
	n, req, p := r.pages*a.cfg.Page, r.requested, r.pages
	a.dev.ReleaseVA(r.addr, r.va) // cuMemAddressFree: reused once the fresh space runs out
	a.live.Delete(h)
	a.dev.Release(n)
	st := &a.st
	st.Reserved -= n
	st.Allocated -= n
	st.Requested -= req
	st.Segments--
	st.LiveBlocks--
	st.Frees++
	st.DeviceFrees += p
	if invariants.Enabled {
		a.mustCheck()
	}
	return nil
}

// MapOps is the number of P-byte pages mapped so far (Stats.DeviceAllocs):
// a cost model charges a per-page map time for each.
func (a *Allocator) MapOps() int64 { return a.st.DeviceAllocs }

// UnmapOps is the number of pages unmapped so far (Stats.DeviceFrees).
func (a *Allocator) UnmapOps() int64 { return a.st.DeviceFrees }

// EmptyCache does nothing: there is no cache.
func (a *Allocator) EmptyCache() {}

// Stats returns the counters.
func (a *Allocator) Stats() alloc.Stats { return a.st }

// MaxAllocatable is the device's free memory rounded down to a multiple of
// P: that many bytes are whole pages and map.
func (a *Allocator) MaxAllocatable() int64 {
	f := a.dev.Free()
	return f - f%a.cfg.Page
}

// Layout returns one expandable segment per live range (its mapped part),
// sorted by address.
func (a *Allocator) Layout() mem.Layout {
	l := mem.Layout{
		Capacity:       a.st.Capacity,
		OtherUse:       a.st.OtherUse,
		DeviceFree:     a.dev.Free(),
		MaxAllocatable: a.MaxAllocatable(),
		Segments:       make([]mem.Segment, 0, a.live.Len()),
	}
	blocks := make([]mem.Block, a.live.Len()) // one backing array for all segments
	a.live.Each(func(_ alloc.Handle, r *rng) {
		i := len(l.Segments)
		n := r.pages * a.cfg.Page
		blocks[i] = mem.Block{Addr: r.addr, Size: n, Requested: r.requested, State: mem.Active}
		l.Segments = append(l.Segments, mem.Segment{
			Addr: r.addr, Size: n, Stream: r.stream, Pool: Pool, Expandable: true, Blocks: blocks[i : i+1 : i+1],
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
