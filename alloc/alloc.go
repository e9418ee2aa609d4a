package alloc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/mem"
)

// Handle names one live allocation inside one allocator. The zero Handle is
// never valid. Handles carry a generation, so a handle that was freed (or that
// belongs to another allocator instance) is rejected rather than freeing an
// unrelated block that happens to reuse the same slot.
type Handle uint64

// Block is what Alloc returns: the allocation's handle, where it lives and how
// many bytes it occupies (at least the requested size).
type Block struct {
	Handle Handle
	Addr   uint64
	Size   int64
}

// Allocator is a GPU memory allocator over a modelled device. Implementations
// are deterministic and not safe for concurrent use.
type Allocator interface {
	// Spec is the allocator's configuration in the form Parse accepts
	// ("caching:expandable_segments:True").
	Spec() string
	// Alloc serves a request of size bytes (size > 0) on stream. When memory
	// cannot be found it returns an *OOMError (errors.Is ErrOutOfMemory) and
	// the state is as the allocator's own out-of-memory path leaves it (the
	// caching allocator, for example, may have released cached segments).
	Alloc(size int64, stream int) (Block, error)
	// Free releases a live allocation. A handle that is not live in this
	// allocator (never issued, freed already, or another allocator's) returns
	// ErrInvalidHandle and changes nothing.
	Free(h Handle) error
	// EmptyCache returns cached memory that is wholly free to the device, as
	// torch.cuda.empty_cache() does. Allocators without a cache do nothing.
	EmptyCache()
	// Stats returns counters kept incrementally; they always equal a recount
	// of Layout.
	Stats() Stats
	// Layout returns a copy of every segment and block. It costs O(blocks).
	Layout() mem.Layout
	// MaxAllocatable is the largest single request on stream 0 that would
	// succeed now, counting memory the allocator would release on its way to
	// an out-of-memory error.
	MaxAllocatable() int64
	// Clone returns an independent copy with its own device, for what-if
	// questions ("would this request succeed?") and for planning.
	Clone() Allocator
}

// Relocator is the optional hook defragmentation uses: move a live allocation
// to another address of the same allocator. The handle stays valid; its
// address changes. dst must lie inside free memory of the same pool and
// stream that can hold the block; otherwise ErrBadMove is returned and
// nothing changes. The cost of copying the bytes is the caller's to account.
type Relocator interface {
	Relocate(h Handle, dst uint64) (Block, error)
	// Relocation describes where Relocate may move blocks and how the
	// layout behaves (Caps.Relocation); it never changes.
	Relocation() Relocation
}

// Syncer is implemented by allocators whose behaviour depends on stream
// synchronisation (the stream-ordered async pool trims itself at sync points).
type Syncer interface {
	Sync()
}

// Stamper is implemented by allocators that can say cheaply that their
// memory has not changed since a caller last looked (see "Optional
// capabilities" in doc.go).
type Stamper interface {
	// Stamp returns the allocator's mutation stamp. Two equal stamps of one
	// allocator mean that Layout and MaxAllocatable return equal values (and
	// so the Stats that recount Layout: Reserved, Allocated, Requested,
	// Segments, LiveBlocks), and a caller may keep what it derived from them.
	// Nothing else is promised: the counters and peaks of Stats and the
	// handles Alloc issues may differ. A stamp may come back (a closed round
	// trip returns the allocator to a state it had, see TripRecorder), but
	// never with another Layout. Stamps of two allocators, a Clone included,
	// are not comparable.
	Stamp() uint64
}

// TripRecorder is implemented by allocators that can stand in for a round
// trip a caller repeats: a batch of n Allocs and n Frees of exactly those
// blocks, in any order, with no other call to the allocator in between (a
// serving engine's per-step activation buffers). See "Optional
// capabilities" in doc.go.
type TripRecorder interface {
	// BeginTrip records the state before a batch.
	BeginTrip() Trip
	// EndTrip is called right after the batch, which made n allocations
	// and n frees. It reports whether the allocator confirms that the batch
	// returned it to the state BeginTrip saw (the same Layout and
	// MaxAllocatable, no out-of-memory error, no retry, and no device call
	// but memory mapped and unmapped again within the batch, where the
	// allocator can repeat that) and that the same batch from that state
	// would again do exactly the same; then t is closed (repeatable),
	// otherwise it is not. EndTrip changes nothing else.
	EndTrip(t *Trip, n int64) bool
	// RepeatTrip stands in for times runs of the closed trip t when the
	// allocator is in the state t started in (nothing but closed trips has
	// changed it since; for a TripRoom, grows too): it counts the runs'
	// allocations and frees in Stats (and their device calls, where the
	// trip made some) and returns true. The peaks need no update, as t
	// reached them from this state (a TripRoom raises them as the runs
	// would after grows). Otherwise it changes nothing and returns false,
	// and the caller makes the calls. times 0 only asks.
	//
	// The caller promises that the batch it skips is the one t recorded (the
	// same sizes and streams, in the same order): RepeatTrip cannot see it.
	// A repeat differs from running the batch only in handle values: the
	// handles Alloc issues afterwards may not be the ones it would have
	// issued (handles are opaque; see Stamper).
	RepeatTrip(t *Trip, times int64) bool
}

// FreeSummarizer is implemented by allocators that can give the two figures
// of the health ratio without building their Layout (a serving engine
// samples them every simulated second). See "Optional capabilities" in
// doc.go.
type FreeSummarizer interface {
	// FreeSummary returns the largest free block inside any segment and the
	// cached free bytes (the segments' bytes that are not allocated):
	// exactly frag.Compute(Layout()).LargestFreeBlock and CachedFree.
	FreeSummary() (largest, cachedFree int64)
}

// TripRoom is implemented by TripRecorders whose closed trips stay
// repeatable across Grow calls (Grower) made between runs, while the memory
// and the fresh address space a run takes are there: vmm, on which a
// serving engine's steps allocate their activation buffers between the
// grows of their KV ranges. See "Optional capabilities" in doc.go.
type TripRoom interface {
	// TripRoom returns what repeating the closed trip t from now needs:
	// need, the MaxAllocatable each run needs (the most it holds at once;
	// grows before a run lower MaxAllocatable), and times, the most runs
	// RepeatTrip may stand in for from here (the fresh address space they
	// take); times 0 when RepeatTrip would refuse t now.
	TripRoom(t *Trip) (need, times int64)
}

// Trip is a TripRecorder's record of one round trip. Its fields belong to
// the allocator that made it: a caller keeps the value between BeginTrip,
// EndTrip and RepeatTrip and reads or writes nothing in it. The zero Trip is
// not repeatable.
type Trip struct {
	Mark  uint64 // the allocator's state at BeginTrip (its Stamp, for a Stamper)
	Calls uint64 // the allocator's count of state-changing calls at BeginTrip
	Stats Stats  // Stats at BeginTrip
	N     int64  // allocations (and frees) of the batch; > 0 only once closed
	Aux   int64  // an allocator's own figure at BeginTrip (async: its bytes free for all streams)
	// Set when a trip of an allocator whose batches map and unmap device
	// memory (vmm) closes:
	Pages int64  // pages one run maps and unmaps (Stats.DeviceAllocs, DeviceFrees)
	Peak  int64  // the most bytes one run holds at once: the MaxAllocatable it needs
	VA    uint64 // fresh virtual address space one run reserves and gives back
}

// Grower is implemented by allocators that can grow a live allocation in
// place: more memory mapped at its end, the address unchanged and nothing
// copied (vAttention's ranges on the vmm allocator). See "Optional
// capabilities" in doc.go.
type Grower interface {
	// Grow makes the live allocation h at least newSize bytes, in place, and
	// returns it with its new Size: newSize rounded up to GrowUnit. newSize
	// must be at least the bytes requested so far and at most MaxGrowSize.
	// The grow needs the new Size minus the old in device memory; when that
	// is at most MaxAllocatable it succeeds, so grows that need at most
	// MaxAllocatable bytes together all succeed one after the other. It
	// fails with ErrInvalidHandle, an *OOMError (counted in Stats.OOMs) or
	// the allocator's own error for a size out of range, and then changes
	// nothing else. A grow is not an Alloc: only the block's size and
	// request, Reserved, Allocated, Requested, the peaks and DeviceAllocs
	// move.
	Grow(h Handle, newSize int64) (Block, error)
	// GrowUnit is the granularity of a grown block's Size (the page size).
	GrowUnit() int64
	// MaxGrowSize is the largest newSize Grow accepts for any block (the
	// virtual space reserved for each allocation).
	MaxGrowSize() int64
}

// Stats are an allocator's counters. Byte counts follow DESIGN.md §4.
type Stats struct {
	Capacity int64 // device memory
	OtherUse int64 // weights, CUDA context

	Reserved  int64 // Σ segment sizes (memory held from the device)
	Allocated int64 // Σ live block sizes
	Requested int64 // Σ bytes callers asked for, over live blocks

	PeakReserved  int64
	PeakAllocated int64

	Segments   int // current segments (mapped runs for expandable/VMM memory)
	LiveBlocks int // current live allocations

	Allocs       int64 // successful Alloc calls
	Frees        int64 // successful Free calls
	OOMs         int64 // requests (Alloc, or an allocator's own growth call) that failed for lack of memory
	DeviceAllocs int64 // raw device allocations and page mappings
	DeviceFrees  int64 // raw device frees and page unmappings
	Retries      int64 // times the release-cached-memory-and-retry path ran (PyTorch's num_alloc_retries)
}

// CachedFree is reserved − allocated: PyTorch's "reserved but unallocated".
func (s Stats) CachedFree() int64 { return s.Reserved - s.Allocated }

// String renders the stats as an aligned two-column table for people and
// golden files.
func (s Stats) String() string {
	var sb strings.Builder
	row := func(k string, v any) { fmt.Fprintf(&sb, "%-14s %v\n", k, v) }
	row("reserved", mem.FormatBytesExact(s.Reserved))
	row("allocated", mem.FormatBytesExact(s.Allocated))
	row("requested", mem.FormatBytesExact(s.Requested))
	row("cached_free", mem.FormatBytesExact(s.CachedFree()))
	row("peak_reserved", mem.FormatBytesExact(s.PeakReserved))
	row("peak_alloc", mem.FormatBytesExact(s.PeakAllocated))
	row("segments", s.Segments)
	row("live_blocks", s.LiveBlocks)
	fmt.Fprintf(&sb, "%-14s allocs=%d frees=%d ooms=%d device_allocs=%d device_frees=%d retries=%d\n",
		"counters", s.Allocs, s.Frees, s.OOMs, s.DeviceAllocs, s.DeviceFrees, s.Retries)
	return sb.String()
}

// Sentinel errors.
var (
	// ErrOutOfMemory is matched (errors.Is) by every *OOMError.
	ErrOutOfMemory = errors.New("alloc: out of memory")
	// ErrInvalidHandle: Free or Relocate of a handle that is not live here.
	ErrInvalidHandle = errors.New("alloc: invalid handle (not live in this allocator: double free or foreign block)")
	// ErrInvalidSize: a request of zero or negative bytes.
	ErrInvalidSize = errors.New("alloc: request size must be positive")
	// ErrBadSpec: an allocator spec or setting that cannot be parsed or is out of range.
	ErrBadSpec = errors.New("bad allocator spec")
	// ErrBadMove: a relocation whose destination is not free memory that fits.
	ErrBadMove = errors.New("alloc: bad relocation")
)

// OOMError carries the fields of PyTorch's out-of-memory message, so a user
// can compare our model's failure with the one in their logs.
type OOMError struct {
	Requested int64 // bytes the caller asked for
	// AllocSize is what the allocator tried to obtain from the device: the
	// segment size for the caching allocator (PyTorch prints this as "Tried to
	// allocate"), otherwise the rounded request.
	AllocSize  int64
	Capacity   int64 // device total
	DeviceFree int64 // free device memory at the time of failure
	Allocated  int64 // allocated by this allocator
	Reserved   int64 // reserved by this allocator
}

// ReservedUnallocated is PyTorch's "reserved by PyTorch but unallocated".
func (e *OOMError) ReservedUnallocated() int64 { return e.Reserved - e.Allocated }

// Error follows PyTorch's wording (c10/cuda/CUDACachingAllocator.cpp).
func (e *OOMError) Error() string {
	return fmt.Sprintf("out of memory: tried to allocate %s (request %s); device has a total capacity of %s of which %s is free; "+
		"%s is allocated and %s is reserved but unallocated",
		mem.FormatBytes(e.AllocSize), mem.FormatBytes(e.Requested), mem.FormatBytes(e.Capacity),
		mem.FormatBytes(e.DeviceFree), mem.FormatBytes(e.Allocated), mem.FormatBytes(e.ReservedUnallocated()))
}

// Is makes errors.Is(err, ErrOutOfMemory) true.
func (e *OOMError) Is(target error) bool { return target == ErrOutOfMemory }
