// Package sizeclass is a size-class pool allocator: fixed slot sizes
// (classes, configurable, by default 8 MiB / 64 MiB / 512 MiB), each class
// cut from slabs obtained from the device, and requests larger than every
// class served directly. It is the simplest cache that keeps blocks of one
// size together: no splitting or merging, so external fragmentation comes
// only from free slots that a request of another class cannot use.
//
// # Model
//
// A slab is one raw device allocation (a cudaMalloc) holding
// max(1, 2 MiB / class) slots of exactly the class size, rounded up to whole
// 2 MiB driver pages: classes below a page share one page, larger classes get
// a slab per slot. When the slots do not fill the slab, the end of it (the
// tail) is a permanently free block: real, unusable waste, which shows in
// cached_free and in frag_rate. A live block's size is its class size and its
// requested size the caller's, so rounding up to the class is internal waste.
//
// Allocation path, Alloc(size):
//
//  1. Pick the smallest class ≥ size. None (size above the largest class):
//     take mem.PageRound(size) bytes from the device as a segment of its
//     own (pool "direct", released on Free, as in package direct).
//  2. If the class has a free slot, take the one freed last (a LIFO list per
//     class: O(1) and deterministic; a new slab's lowest slot comes first).
//  3. Otherwise get a new slab from the device. If the device lacks the
//     pages, release every wholly free slab of every class (as PyTorch's
//     allocator does with its cache on the way to an OOM), count a retry,
//     and try once more; if that fails too, return an *alloc.OOMError whose
//     AllocSize is the slab size (the page-rounded request on the direct
//     path, which takes the same release-and-retry step).
//
// Free path: a class block's slot goes back on top of its class's free list
// and the slab stays, however empty; a direct block goes back to the device
// at once. Slabs return to the device only through EmptyCache or the
// out-of-memory path of step 3, and only when wholly free.
//
// Slabs are shared by all streams (Layout shows them on stream 0): the model
// assumes, like a pool that synchronises on free, that a freed slot may be
// reused by any stream. Pools are named by class ("8MiB"). Relocate moves a
// live class block to a free slot of its own class (compaction within a
// class); direct blocks cannot move. MaxAllocatable is exact (see its doc).
//
// Alloc and Free are O(1) and allocate nothing in steady state (a handful of
// classes are scanned linearly); a new slab is O(slots per slab); releasing
// and Layout are O(slabs + slots); Relocate is O(log slabs).
//
// # Waste of the default classes
//
// WasteTable lists, per class, the slab geometry, the tail waste per slab
// and the worst rounding waste of one block (FormatWasteTable, checked by
// ExampleWasteTable):
//
//	class       slots       slab       tail    tail%   max-rounding    round%
//	8MiB            1       8MiB         0B    0.00%        8388607   100.00%
//	64MiB           1      64MiB         0B    0.00%       58720255    87.50%
//	512MiB          1     512MiB         0B    0.00%      469762047    87.50%
//
// Classes 8× apart bound the rounding waste of a block at 7/8 of it, except
// in the first class, where a 1-byte request holds 8 MiB.
//
// Invariants (CheckInvariants; run after every operation under the
// invariants build tag):
//
//	every slot of a live slab is either live (in exactly one live handle) or
//	  free (in exactly one position of its class's free list), never both
//	a slab's live count == its live slots; wholeFree == Σ slab bytes of
//	  slabs whose live count is 0
//	a class block of class k holds requested bytes in (class k−1, class k];
//	  a direct block holds more than the largest class, in PageRound bytes
//	Reserved == Σ slab bytes + Σ direct sizes == device Used
//	Allocated == Σ class sizes of live slots + Σ direct sizes
//	Segments == live slabs + direct blocks == DeviceAllocs − DeviceFrees
//	live slabs are kept in address order, disjoint
package sizeclass
