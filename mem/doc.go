// Package mem holds the leaf types every other gpufrag package shares: byte
// sizes with units, the modelled GPU device, the memory layout an allocator
// exposes, and the memory classes that split a device's capacity exactly.
//
// # The device model
//
// A GPU has a capacity C. Part of it is in "other use" (model weights, the CUDA
// context, other processes) and is never available to the allocator under
// study. The driver hands out physical memory in 2 MiB pages (PageSize): a raw
// device allocation (cudaMalloc) of s bytes takes ceil(s / 2 MiB) pages and
// succeeds while that many pages are free. Physical contiguity is not needed,
// because the driver maps the pages into a fresh virtual range. External
// fragmentation therefore does not live at the driver: it lives inside
// allocator caches (segments that are partly used and cannot be returned,
// split blocks that cannot serve a larger request) and inside per-request
// reservations. VMM-style allocators (expandable segments, vAttention) map
// physical memory in pages of their own size through Device.Reserve.
//
// Capacities stop at MaxCapacity (1 PiB) and the sizes allocators compute
// with at MaxRequest (4 PiB), so no address or size arithmetic on a device
// can overflow; a virtual address space that runs out (TryReserveVA: fresh
// ranges, then the ones given back with ReleaseVA) is an out-of-memory
// error, not a panic.
//
// # Memory classes
//
// Classes splits capacity into other use, live bytes (what callers asked for),
// internal waste (rounding inside allocated blocks), cached free bytes
// (reserved by the allocator but not allocated) and device free bytes. The five
// always add up to the capacity; package frag derives every ratio from them.
//
// Invariants (checked by mem.Layout.Check and by alloctest after every operation):
//
//	OtherUse + Used + Free == Capacity, with Used, Free >= 0
//	for a Layout: Σ segment sizes == reserved, and each segment's blocks tile it
package mem
