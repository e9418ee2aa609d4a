// Stream-ordered pool: state, the alloc and free paths, Sync and trimming.
// See package alloc for the overview.

package async

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/internal/extent"
	"github.com/gpufrag/gpufrag/alloc/internal/slot"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/mem"
)

// Name is the allocator's name in specs.
const Name = "async"

// Align is the granularity of every block: requests are rounded up to a
// multiple of 512 bytes and blocks start at multiples of 512 from the
// pool's base. 512 B is PyTorch's kMinBlockSize (research/pytorch-allocator.md
// §1), which keeps internal waste comparable across our allocators, and a
// multiple of the 256 B alignment CUDA guarantees for device allocations.
const Align = 512

// vaNum/vaDen is the virtual range reserved at New as a multiple of the
// device capacity: 9/8, the 1⅛ × totalGlobalMem that PyTorch's expandable
// segments reserve (research/pytorch-allocator.md §4). Mapped bytes can never
// exceed the capacity, but live blocks pin pages at scattered addresses; the
// extra eighth of address space, which costs nothing physical, leaves room
// to grow past them before the address space, rather than the device, runs
// out.
const vaNum, vaDen = 9, 8

// block is one live allocation.
type block struct {
	addr      uint64
	size      int64 // rounded size the block occupies
	requested int64 // bytes the caller asked for
	stream    int   // the stream it was allocated on, where it is freed
}

// Allocator is the stream-ordered pool. See the package doc for the model
// and the invariants. It is not safe for concurrent use.
type Allocator struct {
	dev    *mem.Device
	cfg    Config
	base   uint64 // first address of the reserved virtual range; fixed
	vaSize int64  // bytes of virtual range, whole pages; fixed

	unmapped extent.Set        // virtual range with no physical pages, page aligned
	ready    extent.Set        // free mapped bytes usable by every stream
	readyIx  readyIndex        // ready by (size, address), tagged with the streams whose pending frees touch each extent
	streams  map[int]*stream   // by id; a stream is added at its first Alloc
	busy     []*stream         // the streams with pending frees, in no particular order
	live     slot.Table[block] // live allocations by handle
	scratch  []extent.Extent   // reused by Sync; holds nothing between calls

	// pendStart and pendEnd map the first address of each pending extent,
	// and the address just past it, to its stream (free.go), while tracked:
	// from the moment a second stream has pending frees until none has.
	pendStart, pendEnd map[uint64]int
	tracked            bool
	spareSets          []*extent.Set // cleared per-stream sets for reuse

	mapped    int64 // vaSize - unmapped.Total(): physical bytes held; +map, -unmap
	allocated int64 // Σ live sizes; +Alloc, -Free
	requested int64 // Σ live requests; +Alloc, -Free

	peakMapped, peakAlloc int64 // only grow
	allocs, frees, ooms   int64 // only grow
	pagesMapped           int64 // pages mapped over the pool's life; only grows
	pagesUnmapped         int64 // pages unmapped over the pool's life; only grows
	retries               int64 // allocations that needed the trim-and-retry path; only grows

	// mut counts the calls that may change the state (Alloc, Free, Sync,
	// EmptyCache) and gives the stamp. See trip.go.
	mut alloc.Mutations
}

var (
	_ alloc.Allocator = (*Allocator)(nil)
	_ alloc.Syncer    = (*Allocator)(nil)
)

// New reserves the pool's virtual range on dev. No physical memory is taken
// until the first allocation.
func New(dev *mem.Device, cfg Config) (*Allocator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := dev.CheckUnused("async"); err != nil {
		return nil, err
	}
	c := dev.Capacity()
	vaSize := mem.RoundUp(c/vaDen*vaNum+(c%vaDen*vaNum+vaDen-1)/vaDen, mem.PageSize)
	base, ok := dev.TryReserveVA(vaSize)
	if !ok {
		return nil, fmt.Errorf("%w: async: no virtual address range of %s left on the device for the pool", mem.ErrConfig, mem.FormatBytes(vaSize))
	}
	a := &Allocator{dev: dev, cfg: cfg, vaSize: vaSize, base: base,
		streams: map[int]*stream{}, pendStart: map[uint64]int{}, pendEnd: map[uint64]int{}}
	a.unmapped.Init(a.base, vaSize)
	a.unmapped.Insert(a.base, vaSize)
	a.ready.Init(a.base, vaSize)
	a.check()
	return a, nil
}

// FromSpec builds a pool from the arguments after "async:".
func FromSpec(dev *mem.Device, args string) (alloc.Allocator, error) {
	cfg, err := ParseConfig(args)
	if err != nil {
		return nil, err
	}
	return New(dev, cfg)
}

// Spec is "async" for the default config, otherwise "async:" + the config.
func (a *Allocator) Spec() string {
	if a.cfg == DefaultConfig() {
		return Name
	}
	return Name + ":" + a.cfg.String()
}

// Config returns the configuration the pool was built with.
func (a *Allocator) Config() Config { return a.cfg }

// Alloc serves size bytes on stream.
//
//  1. Round the request up to Align.
//  2. Best fit among the free extents the stream may use (ready memory and
//     its own pending frees): the smallest that holds the request, lowest
//     address among equals, carved from its low end.
//  3. Otherwise grow: map pages at the lowest address where the request
//     fits in usable free memory and unmapped address space together.
//  4. If the device lacks the pages (or no such place exists), trim every
//     whole free page of ready memory, count a retry, and try 2–3 again.
//  5. Still nothing: an *alloc.OOMError.
func (a *Allocator) Alloc(size int64, streamID int) (alloc.Block, error) {
	if size <= 0 {
		return alloc.Block{}, fmt.Errorf("%w: %d", alloc.ErrInvalidSize, size)
	}
	a.mut.Mutated()
	rounded := mem.RoundUpSat(size, Align)
	st := a.streamFor(streamID)
	addr, ok := a.tryAlloc(st, rounded)
	if !ok {
		a.retries++
		a.trimTo(0)
		addr, ok = a.tryAlloc(st, rounded)
	}
	if !ok {
		a.ooms++
		a.check()
		return alloc.Block{}, &alloc.OOMError{
			Requested: size, AllocSize: rounded,
			Capacity: a.dev.Capacity(), DeviceFree: a.dev.Free(),
			Allocated: a.allocated, Reserved: a.mapped,
		}
	}
	h := a.live.Put(block{addr: addr, size: rounded, requested: size, stream: streamID})
	a.allocated += rounded
	a.requested += size
	a.peakAlloc = max(a.peakAlloc, a.allocated)
	a.allocs++
	a.check()
	return alloc.Block{Handle: h, Addr: addr, Size: rounded}, nil
}

// tryAlloc is steps 2 and 3 of Alloc. It changes nothing when it fails.
func (a *Allocator) tryAlloc(st *stream, size int64) (uint64, bool) {
	u := usable{a: a, st: st}
	if e, ok := u.BestFit(size); ok {
		a.carve(st, e.Addr, size)
		return e.Addr, true
	}
	x, ok := a.placement(u, size)
	if !ok || a.pagesToMap(x, size)*mem.PageSize > a.dev.Free() {
		return 0, false
	}
	a.mapRange(x, size)
	if e, ok := u.Find(x); !ok || e.End()-x < uint64(size) {
		panic(fmt.Sprintf("async: grown range of %d bytes at %s is not free for stream %d", size, mem.FormatAddr(x), st.id))
	}
	a.carve(st, x, size)
	return x, true
}

// carve allocates [addr, addr+size), which lies in one usable extent of
// st, piece by piece: out of st's pending frees, or out of ready memory.
func (a *Allocator) carve(st *stream, addr uint64, size int64) {
	for at, end := addr, addr+uint64(size); at < end; {
		if st.pending != nil {
			if e, ok := st.pending.Find(at); ok {
				n := int64(min(e.End(), end) - at)
				a.takePending(st, e, at, n)
				at += uint64(n)
				continue
			}
		}
		e, ok := a.ready.Find(at)
		if !ok {
			panic(fmt.Sprintf("async: byte %s of stream %d's free memory is neither ready nor pending", mem.FormatAddr(at), st.id))
		}
		n := int64(min(e.End(), end) - at)
		a.takeReady(at, n)
		at += uint64(n)
	}
}

// Free returns a live block to its stream's pending set: reusable by that
// stream at once, by the others after the next Sync.
func (a *Allocator) Free(h alloc.Handle) error {
	b := a.live.Get(h)
	if b == nil {
		return alloc.ErrInvalidHandle
	}
	a.mut.Mutated()
	a.addPending(a.streamFor(b.stream), b.addr, b.size)
	a.allocated -= b.size
	a.requested -= b.requested
	a.frees++
	a.live.Delete(h)
	a.check()
	return nil
}

// Sync is a device-wide synchronisation: every pending free has completed,
// so its memory becomes usable by every stream; then, if the unused mapped
// bytes exceed the release threshold, whole free pages are unmapped, highest
// addresses first, until they no longer do (cudaMemPoolAttrReleaseThreshold).
func (a *Allocator) Sync() {
	a.mut.Mutated()
	a.completePending()
	a.trimTo(a.cfg.ReleaseThreshold)
	a.check()
}

// EmptyCache is cudaMemPoolTrimTo(pool, 0): it unmaps every whole free page
// of ready memory. Frees still pending on a stream are not released: CUDA
// counts frees whose completion the host has not observed as outstanding.
func (a *Allocator) EmptyCache() {
	a.mut.Mutated()
	a.trimTo(0)
	a.check()
}

// trimTo unmaps whole pages of ready memory, highest addresses first, while
// the unused mapped bytes (mapped - allocated) exceed keep.
func (a *Allocator) trimTo(keep int64) {
	cursor := a.base + uint64(a.vaSize)
	for a.mapped-a.allocated > keep {
		e, ok := a.ready.Prev(cursor)
		if !ok {
			return
		}
		cursor = e.Addr
		lo := mem.RoundUp(int64(e.Addr-a.base), mem.PageSize)
		hi := int64(e.End()-a.base) / mem.PageSize * mem.PageSize
		if hi <= lo {
			continue // no whole page in this extent
		}
		excess := a.mapped - a.allocated - keep
		n := min(hi-lo, mem.RoundUp(excess, mem.PageSize))
		a.unmap(a.base+uint64(hi-n), n)
	}
}

// unmap releases the pages of [addr, addr+size), which lie in ready memory.
func (a *Allocator) unmap(addr uint64, size int64) {
	a.takeReady(addr, size)
	a.unmapped.Insert(addr, size)
	a.dev.ReleasePages(size/mem.PageSize, mem.PageSize)
	a.mapped -= size
	a.pagesUnmapped += size / mem.PageSize
}

// check panics on a broken invariant in builds with invariants enabled.
func (a *Allocator) check() {
	if invariants.Enabled {
		if err := a.CheckInvariants(); err != nil {
			panic(err)
		}
	}
}
