// Buddy allocator: the pool on the device, the alloc and free paths.
// See package alloc for the overview.

package buddy

import (
	"fmt"
	"math"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/slot"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/mem"
)

// block is one live allocation.
type block struct {
	off       uint64 // offset from the pool's base, a multiple of its size
	order     uint8  // the block is min << order bytes
	requested int64  // bytes the caller asked for
}

// Allocator is the buddy pool. See the package doc for the model and the
// invariants. It is not safe for concurrent use.
type Allocator struct {
	dev  *mem.Device
	cfg  Config // normalized: Min set
	base uint64 // first address of the pool; fixed

	pool pool              // free blocks by order; take on Alloc, put on Free
	live slot.Table[block] // live allocations by handle

	allocated int64 // Σ live block sizes; +Alloc, -Free
	requested int64 // Σ live requests; +Alloc, -Free
	peakAlloc int64 // max of allocated; only grows
	allocs    int64 // successful Alloc calls; only grows
	frees     int64 // successful Free calls; only grows
	ooms      int64 // failed Alloc calls; only grows
}

var _ alloc.Allocator = (*Allocator)(nil)

// New reserves the pool on dev as one raw device allocation and frees its
// top-level blocks. It fails, wrapping alloc.ErrBadSpec, when the config is
// invalid, the pool rounds down to nothing or does not fit in the device's
// free memory.
func New(dev *mem.Device, cfg Config) (*Allocator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.normalized()
	if err := dev.CheckUnused(Name); err != nil {
		return nil, err
	}
	size := cfg.poolSize(dev)
	unit := cfg.poolUnit()
	switch {
	case size <= 0 && cfg.Size > 0:
		return nil, fmt.Errorf("%w: buddy pool of %s is less than one %s unit (the larger of a driver page and min; min itself when it is no power of two)",
			alloc.ErrBadSpec, formatSize(cfg.Size), formatSize(unit))
	case size <= 0:
		return nil, fmt.Errorf("%w: buddy fraction %s of the %s free is less than one %s unit (the larger of a driver page and min; min itself when it is no power of two)",
			alloc.ErrBadSpec, formatFraction(cfg.Fraction), mem.FormatBytes(dev.Free()), formatSize(unit))
	case !dev.Reserve(size):
		return nil, fmt.Errorf("%w: buddy pool of %s does not fit: the device has %s free",
			alloc.ErrBadSpec, mem.FormatBytes(size), mem.FormatBytes(dev.Free()))
	}
	base, ok := dev.TryReserveVA(size)
	if !ok {
		dev.Unreserve(size)
		return nil, fmt.Errorf("%w: no virtual address range of %s left on the device for the buddy pool",
			alloc.ErrBadSpec, mem.FormatBytes(size))
	}
	a := &Allocator{dev: dev, cfg: cfg, base: base}
	a.pool.init(size, cfg.Min)
	a.check()
	return a, nil
}

// FromSpec builds a buddy allocator from the arguments after "buddy:".
func FromSpec(dev *mem.Device, args string) (alloc.Allocator, error) {
	cfg, err := ParseConfig(args)
	if err != nil {
		return nil, err
	}
	return New(dev, cfg)
}

// Spec is "buddy" for the default config, otherwise "buddy:" + the config.
func (a *Allocator) Spec() string {
	if a.cfg == DefaultConfig() {
		return Name
	}
	return Name + ":" + a.cfg.String()
}

// Config returns the configuration the allocator was built with, Min set.
func (a *Allocator) Config() Config { return a.cfg }

// PoolSize is the pool's size in bytes: what New reserved.
func (a *Allocator) PoolSize() int64 { return a.pool.size }

// TopBlocks returns the sizes of the pool's top-level blocks, largest
// first: one per set bit of PoolSize/Min. No block, and so no request, is
// larger than the first.
func (a *Allocator) TopBlocks() []int64 {
	var out []int64
	for k := a.pool.top; k >= 0; k-- {
		if a.pool.units>>k&1 != 0 {
			out = append(out, a.pool.blockSize(k))
		}
	}
	return out
}

// Alloc serves size bytes from the smallest free block that holds it (see
// the package doc). The stream is ignored.
func (a *Allocator) Alloc(size int64, stream int) (alloc.Block, error) {
	if size <= 0 {
		return alloc.Block{}, fmt.Errorf("%w: %d", alloc.ErrInvalidSize, size)
	}
	// 1. Round the request up to a block: the smallest order that holds it.
	k, ok := a.pool.orderFor(size)
	if !ok {
		// Larger than the largest top-level block: no state can serve it.
		return alloc.Block{}, a.oom(size, roundPow2(size, a.cfg.Min))
	}
	// 2. Best fit: the lowest free block of the smallest order ≥ k, split
	//    down to order k.
	off, ok := a.pool.take(k)
	if !ok {
		return alloc.Block{}, a.oom(size, a.pool.blockSize(k))
	}
	// 3. Hand out a handle and update the counters.
	bs := a.pool.blockSize(k)
	h := a.live.Put(block{off: off, order: uint8(k), requested: size})
	a.allocated += bs
	a.requested += size
	a.peakAlloc = max(a.peakAlloc, a.allocated)
	a.allocs++
	a.check()
	return alloc.Block{Handle: h, Addr: a.base + off, Size: bs}, nil
}

// oom counts a failed request and builds its error; allocSize is the block
// the request rounded to.
func (a *Allocator) oom(size, allocSize int64) error {
	a.ooms++
	return &alloc.OOMError{
		Requested: size, AllocSize: allocSize,
		Capacity: a.dev.Capacity(), DeviceFree: a.dev.Free(),
		Allocated: a.allocated, Reserved: a.pool.size,
	}
}

// roundPow2 is n rounded up to min << k, saturating at math.MaxInt64 for
// n above 2^62 (the error message of a request that large only needs to
// say that it is).
func roundPow2(n, min int64) int64 {
	if n > 1<<62 {
		return math.MaxInt64
	}
	r := min
	for r < n {
		r <<= 1
	}
	return r
}

// Free returns a live block to the pool, merging it with its buddy as far
// as the buddies are free.
func (a *Allocator) Free(h alloc.Handle) error {
	b := a.live.Get(h)
	if b == nil {
		return alloc.ErrInvalidHandle
	}
	bs := a.pool.blockSize(int(b.order))
	a.pool.put(b.off, int(b.order))
	a.allocated -= bs
	a.requested -= b.requested
	a.frees++
	a.live.Delete(h)
	a.check()
	return nil
}

// EmptyCache does nothing: the pool is never returned to the device.
func (a *Allocator) EmptyCache() {}

// MaxAllocatable is the size of the largest free block: a request of
// exactly that size rounds to it and is served, and nothing larger fits.
func (a *Allocator) MaxAllocatable() int64 {
	k, ok := a.pool.largest()
	if !ok {
		return 0
	}
	return a.pool.blockSize(k)
}

// Clone returns an independent copy on a clone of the device.
func (a *Allocator) Clone() alloc.Allocator {
	c := *a
	c.dev = a.dev.Clone()
	c.pool = a.pool.clone()
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
