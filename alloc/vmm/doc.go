// Package vmm models allocators built on CUDA's virtual memory management
// API (cuMemAddressReserve, cuMemCreate, cuMemMap): PyTorch's expandable
// segments, vAttention and GMLake. Each allocation is a virtually contiguous
// range backed by physical pages of P bytes that are mapped on demand, so
// there is no external fragmentation and the only waste is page-granular
// internal waste.
//
// # Model
//
//  1. Alloc(size) reserves a virtual range of Config.MaxRange bytes (or of
//     the allocation's own size, if larger) with Device.ReserveVA, and maps
//     ceil(size/P) physical pages at its start: Device.Reserve(pages×P), so
//     physical memory is accounted in units of P, not of the driver's 2 MiB.
//  2. The mapped part is one segment (pool "vmm", Expandable) of exactly one
//     active block of pages×P bytes whose requested size is the caller's:
//     rounding to P is internal waste, at most P − 1 bytes per allocation.
//  3. Grow(h, newSize) maps more pages at the end of the same range, in
//     place: the address does not change and nothing is copied (vAttention
//     grows a request's KV cache this way). It fails with an
//     *alloc.OOMError when the device lacks the pages and with
//     ErrRangeFull when the range's reserved virtual space is used up.
//  4. Free unmaps every page at once (Device.Release) and gives the range
//     back (Device.ReleaseVA); nothing is cached.
//
// Virtual address space is treated as free: reserving it costs no physical
// memory. A real GPU has 2^47 to 2^49 bytes of it (128 to 512 TiB), which at
// the default 64 GiB per range is 2,048 to 8,192 ranges at once: enough for
// a serving batch, which is why vAttention can reserve a maximum-length
// range per request up front. The model's device hands out fresh ranges
// from the 64-bit space (2^28 of 64 GiB: a serving run with activation
// buffers gets through them in about 45 million steps), then the ranges
// Free gave back, lowest first, so a run never fails for want of addresses.
//
// There is no cache: EmptyCache does nothing and cached_free is always 0, so
// frag_rate is 0. An allocation fails exactly when the device lacks
// ceil(size/P) pages of P bytes, so MaxAllocatable is the device's free
// memory rounded down to a multiple of P. Streams are recorded on segments
// and change nothing else.
//
// # Costs
//
// Mapping and unmapping are charged per page by whoever models time (the
// simulator's step time), so this package counts them: Stats.DeviceAllocs is
// the number of pages mapped and Stats.DeviceFrees the number unmapped (not
// the number of driver calls, which Device.RawAllocs and RawFrees count), and
// MapOps and UnmapOps return the same figures by name. Alloc and Grow are
// O(1), Free a search of the device's released ranges (at most one more
// than the live allocations) and none allocates in steady state; Layout is O(n log n) in live
// allocations. A batch of allocations freed again (a serving step's
// activation buffers) is a round trip (alloc.TripRecorder, trip.go) that
// can be repeated without its calls, across grows of other ranges
// (alloc.TripRoom). vmm does not implement alloc.Relocator: moving a range would
// be a remap, which nothing here needs.
//
// The allocator must own its device: New refuses a device with memory already
// in use.
//
// Invariants (CheckInvariants; run after every operation under the
// invariants build tag):
//
//	one segment per live allocation, holding exactly one active block
//	for every range: (pages−1)×P < requested ≤ pages×P ≤ reserved VA
//	Reserved == Allocated == Σ pages×P == device Used
//	DeviceAllocs − DeviceFrees == Σ pages == Reserved / P
//	Allocs − Frees == LiveBlocks == Segments == live handles
package vmm
