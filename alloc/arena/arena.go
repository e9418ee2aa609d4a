// Arena allocator: the pool, the alloc and free paths, relocation.
// See package alloc for the overview.

package arena

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/extent"
	"github.com/gpufrag/gpufrag/alloc/internal/slot"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/mem"
)

// Align is the granularity of every block: requests are rounded up to a
// multiple of 512 bytes and blocks start at multiples of 512 from the pool's
// base. 512 B is PyTorch's kMinBlockSize (research/pytorch-allocator.md §1),
// so internal waste here is comparable with the caching allocator's, and it
// is a multiple of the 256 B alignment cudaMalloc guarantees, so every block
// is aligned for any vector width a kernel uses.
const Align = 512

// Name is the allocator's name in specs.
const Name = "arena"

// block is one live allocation.
type block struct {
	addr      uint64
	size      int64 // rounded size the block occupies
	requested int64 // bytes the caller asked for
}

// Allocator is the arena pool. See the package doc for the model and the
// invariants. It is not safe for concurrent use.
type Allocator struct {
	dev  *mem.Device
	cfg  Config
	base uint64 // first address of the pool; fixed
	size int64  // pool bytes, a multiple of mem.PageSize; fixed

	free extent.Set        // free extents, coalesced; Take on Alloc, Insert on Free
	live slot.Table[block] // live allocations by handle

	allocated int64 // Σ live sizes; +Alloc, -Free
	requested int64 // Σ live requests; +Alloc, -Free
	peakAlloc int64 // max of allocated; only grows
	allocs    int64 // successful Alloc calls; only grows
	frees     int64 // successful Free calls; only grows
	ooms      int64 // failed Alloc calls; only grows
}

var (
	_ alloc.Allocator = (*Allocator)(nil)
	_ alloc.Relocator = (*Allocator)(nil)
)

// Validate reports a config that New cannot use.
func (c Config) Validate() error {
	if c.Size < 0 || c.Size == 0 && !(c.Fraction > 0 && c.Fraction <= 1) {
		return fmt.Errorf("%w: arena needs a size > 0 or a fraction in (0, 1], got %+v", alloc.ErrBadSpec, c)
	}
	return nil
}

// New reserves the pool on dev as one raw device allocation. It fails,
// wrapping alloc.ErrBadSpec, when the pool rounds down to zero pages or does
// not fit in the device's free memory.
func New(dev *mem.Device, cfg Config) (*Allocator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := dev.CheckUnused("arena"); err != nil {
		return nil, err
	}
	size := cfg.poolSize(dev)
	switch {
	case size <= 0 && cfg.Size > 0:
		return nil, fmt.Errorf("%w: arena of %s is less than one %s driver page",
			alloc.ErrBadSpec, mem.FormatBytes(cfg.Size), mem.FormatBytes(mem.PageSize))
	case size <= 0:
		return nil, fmt.Errorf("%w: arena fraction %s of the %s free is less than one %s driver page",
			alloc.ErrBadSpec, cfg, mem.FormatBytes(dev.Free()), mem.FormatBytes(mem.PageSize))
	case !dev.Reserve(size):
		return nil, fmt.Errorf("%w: arena of %s does not fit: the device has %s free",
			alloc.ErrBadSpec, mem.FormatBytes(size), mem.FormatBytes(dev.Free()))
	}
	base, ok := dev.TryReserveVA(size)
	if !ok {
		dev.Unreserve(size)
		return nil, fmt.Errorf("%w: no virtual address range of %s left on the device for the arena", alloc.ErrBadSpec, mem.FormatBytes(size))
	}
	a := &Allocator{dev: dev, cfg: cfg, base: base, size: size}
	a.free.Init(a.base, size)
	a.free.Insert(a.base, size)
	a.check()
	return a, nil
}

// FromSpec builds an arena from the arguments after "arena:".
func FromSpec(dev *mem.Device, args string) (alloc.Allocator, error) {
	cfg, err := ParseConfig(args)
	if err != nil {
		return nil, err
	}
	return New(dev, cfg)
}

// Spec is "arena" for the default config, otherwise "arena:" + the config.
func (a *Allocator) Spec() string {
	if a.cfg == DefaultConfig() {
		return Name
	}
	return Name + ":" + a.cfg.String()
}

// Config returns the configuration the arena was built with.
func (a *Allocator) Config() Config { return a.cfg }

// Alloc serves size bytes best fit. The stream is ignored (see the package
// doc).
func (a *Allocator) Alloc(size int64, stream int) (alloc.Block, error) {
	if size <= 0 {
		return alloc.Block{}, fmt.Errorf("%w: %d", alloc.ErrInvalidSize, size)
	}
	// 1. Round the request up to the alignment granule.
	rounded := mem.RoundUpSat(size, Align)
	// 2. Best fit: the smallest free extent that holds it, lowest address
	//    among equals; the block is its low end, the rest stays free.
	addr, ok := a.free.TakeBestFit(rounded)
	if !ok {
		// 3. No extent is large enough. The pool never grows, so this is an
		//    OOM even when the free extents add up to more than the request.
		a.ooms++
		return alloc.Block{}, &alloc.OOMError{
			Requested: size, AllocSize: rounded,
			Capacity: a.dev.Capacity(), DeviceFree: a.dev.Free(),
			Allocated: a.allocated, Reserved: a.size,
		}
	}
	// 4. Hand out a handle and update the counters.
	h := a.live.Put(block{addr: addr, size: rounded, requested: size})
	a.allocated += rounded
	a.requested += size
	a.peakAlloc = max(a.peakAlloc, a.allocated)
	a.allocs++
	a.check()
	return alloc.Block{Handle: h, Addr: addr, Size: rounded}, nil
}

// Free returns a live block to the pool, merging it with free neighbours.
func (a *Allocator) Free(h alloc.Handle) error {
	b := a.live.Get(h)
	if b == nil {
		return alloc.ErrInvalidHandle
	}
	a.free.Insert(b.addr, b.size)
	a.allocated -= b.size
	a.requested -= b.requested
	a.frees++
	a.live.Delete(h)
	a.check()
	return nil
}

// Relocation (alloc.Relocator): the one pool is never returned;
// a block may move over its own range (a memmove).
func (*Allocator) Relocation() alloc.Relocation {
	return alloc.Relocation{Memmove: true}
}

// Relocate moves live block h to dst. The destination must be Align-aligned
// within the pool and [dst, dst+size) must lie in free memory, where the
// block's own current range counts as free (the move is a memmove, so source
// and destination may overlap). Otherwise it returns alloc.ErrBadMove and
// changes nothing; an unknown handle gives alloc.ErrInvalidHandle.
func (a *Allocator) Relocate(h alloc.Handle, dst uint64) (alloc.Block, error) {
	b := a.live.Get(h)
	if b == nil {
		return alloc.Block{}, alloc.ErrInvalidHandle
	}
	if dst < a.base || (dst-a.base)%Align != 0 {
		return alloc.Block{}, fmt.Errorf("%w: %s is not a %d-byte aligned address in the arena",
			alloc.ErrBadMove, mem.FormatAddr(dst), Align)
	}
	if dst == b.addr {
		return alloc.Block{Handle: h, Addr: b.addr, Size: b.size}, nil
	}
	// Free the block's range, then take the destination: the two may
	// overlap. On failure take the old range back, which restores the same
	// set of extents (a coalesced set is determined by its free bytes).
	a.free.Insert(b.addr, b.size)
	if !a.free.Take(dst, b.size) {
		a.free.Take(b.addr, b.size)
		return alloc.Block{}, fmt.Errorf("%w: [%s, +%s) is not free", alloc.ErrBadMove,
			mem.FormatAddr(dst), mem.FormatBytesExact(b.size))
	}
	b.addr = dst
	a.check()
	return alloc.Block{Handle: h, Addr: dst, Size: b.size}, nil
}

// EmptyCache does nothing: the pool is never returned to the device.
func (a *Allocator) EmptyCache() {}

// MaxAllocatable is the largest free extent rounded down to Align: best fit
// serves exactly that request, and nothing larger fits anywhere.
func (a *Allocator) MaxAllocatable() int64 {
	e, ok := a.free.Largest()
	if !ok {
		return 0
	}
	return e.Size &^ (Align - 1)
}

// Clone returns an independent copy on a clone of the device.
func (a *Allocator) Clone() alloc.Allocator {
	c := *a
	c.dev = a.dev.Clone()
	c.free = a.free.Clone()
	c.live = a.live.Clone()
	return &c
}

// check panics on a broken invariant in builds with invariants enabled.
func (a *Allocator) check() {
	if invariants.Enabled {
		if err := a.CheckInvariants(); err != nil {
			panic(err)
		}
	}
}
