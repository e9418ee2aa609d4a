// Package direct is the baseline allocator: every request is one raw device
// allocation (cudaMalloc) and every free is one raw device free (cudaFree),
// with nothing cached in between. Every other allocator is measured against it.
//
// # Model
//
//  1. Alloc(size) rounds size up to whole driver pages (mem.PageRound), takes
//     that many physical bytes from the device (Device.Reserve) and a fresh
//     virtual range (Device.ReserveVA).
//  2. The allocation is a segment (pool "direct") of exactly one active block
//     of the page-rounded size whose requested size is the caller's. Page
//     rounding is the only waste, and it shows up as internal fragmentation
//     (up to 2 MiB − 1 byte per allocation).
//  3. Free releases the pages to the device at once.
//
// There is no cache: EmptyCache does nothing, cached_free is always 0 and so
// frag_rate is always 0 (health 1). An allocation fails, with an
// *alloc.OOMError whose AllocSize is the page-rounded size, exactly when the
// device lacks the pages; MaxAllocatable is therefore the device's free
// memory rounded down to whole pages. The stream of a request is recorded on
// its segment and changes nothing else: the driver does not order memory by
// stream.
//
// A raw allocation cannot move (its address is what the caller holds), so
// direct does not implement alloc.Relocator. Alloc and Free are O(1) and
// allocate nothing once the handle table has grown to its working size;
// Layout is O(n log n) in live allocations.
//
// The allocator must own its device: New refuses a device with memory already
// in use, because its accounting takes every physical byte held on the device
// to be its own (weights and the CUDA context belong in the device's other
// use).
//
// Invariants (CheckInvariants; run after every operation under the
// invariants build tag):
//
//	one segment per live allocation, holding exactly one active block
//	block size == mem.PageRound(requested) for every block
//	Reserved == Allocated == Σ block sizes == device Used
//	Allocs − Frees == LiveBlocks == Segments == live handles
//	DeviceAllocs == Allocs and DeviceFrees == Frees (one raw call each)
package direct
