// Package arena models a pre-reserved memory pool with best fit and
// coalescing, as TensorRT-LLM sizes and holds its KV-cache pool: one raw
// device allocation made up front, carved into blocks for the rest of the
// process's life, never grown and never returned.
//
// # Model
//
//   - Size. "arena" takes 0.9 of the device's free memory at creation,
//     "arena:0.8" another fraction in (0, 1], "arena:64GiB" a fixed size.
//     The fraction mirrors TensorRT-LLM's free_gpu_memory_fraction
//     (kv_cache_free_gpu_mem_fraction on its command-line tools), which
//     defaults to 0.9 of *free* memory after the weights are loaded — vLLM's
//     gpu_memory_utilization is a fraction of *total* memory instead
//     (../shared/research/kv-managers.md §2.3). The size is rounded down to
//     whole 2 MiB driver pages and reserved with one raw allocation at New;
//     a pool that rounds to nothing or does not fit fails New with
//     alloc.ErrBadSpec.
//   - Allocation. A request is rounded up to a multiple of Align (512 B)
//     and served best fit: from the smallest free extent that holds it, the
//     one at the lowest address among equals, taking the extent's low end.
//     Streams are ignored: the pool is one address range shared by every
//     stream, and ordering its reuse across streams is the caller's business,
//     as with any user-managed arena.
//   - Free. A freed block merges with the free extents on either side, so
//     free space is always a set of maximal, non-adjacent extents.
//   - Out of memory. The pool never grows, so a request fails with an
//     *alloc.OOMError (AllocSize = the rounded size) as soon as no single
//     extent holds it, even when the free bytes add up to far more. That
//     external fragmentation is what this model exists to show; EmptyCache
//     does nothing because there is no cache to give back.
//   - Relocation. Relocate moves a live block to any free range that holds
//     it, the block's own current range counting as free (a memmove), which
//     is how a compacting defragmenter closes the holes.
//   - Layout. One segment, pool "arena", stream 0, tiled by live blocks and
//     free extents in address order. MaxAllocatable is the largest free
//     extent rounded down to Align, exactly what a clone would serve.
//
// Free extents live in an extent.Set (best fit and coalescing in O(log n)),
// live blocks in a slot.Table (generation-checked handles); a free+alloc
// pair costs a few hundred nanoseconds (figures in bench_test.go) and
// allocates nothing once warm.
//
// Invariants (checked by CheckInvariants after every mutating operation when
// invariants.Enabled):
//
//	allocated + free.Total() == size, the pool size; reserved == size always
//	live blocks and free extents are disjoint and tile [base, base+size)
//	every block and extent starts at base + a multiple of Align
//	no two free extents are adjacent (the set is coalesced)
//	allocated == Σ live block sizes, requested == Σ live requests
//	device used == size: the pool is the only thing this allocator holds
package arena
