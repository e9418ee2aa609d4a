// Package buddy models a binary buddy allocator over one pre-reserved pool,
// the allocator the vLLM paper's Orca baselines (Max, Pow2, Oracle) reserve
// their KV caches with (Kwon et al., SOSP 2023, §6: they "assume the buddy
// allocation algorithm"; ../shared/research/timing.md), so that the paper's
// Fig. 2 and Fig. 13 can be set up as the paper set them up: every
// reservation rounded up to a power of two, on top of whatever rounding the
// KV strategy does itself.
//
// # Model
//
//   - Size. "buddy" takes 0.9 of the device's free memory at creation,
//     "buddy:0.8" another fraction in (0, 1], "buddy:64GiB" a fixed size,
//     as package arena does, so that "buddy" and "arena" hold the same
//     bytes. The size is rounded down to a whole number of 2 MiB driver
//     pages (and of smallest blocks, when those are larger) and reserved
//     with one raw allocation at New; a pool that rounds to nothing or does
//     not fit fails New with alloc.ErrBadSpec.
//   - Blocks. "buddy:0.9,min:4KiB" sets the smallest block, the unit: a
//     multiple of 512 B (the default, PyTorch's kMinBlockSize), usually a
//     power of two, or one token's KV ("min:819200" for OPT-13B in fp16), so
//     that blocks are powers of two of tokens as a buddy system over KV
//     slots would make them. A block of order k is 2^k units at a unit
//     offset from the pool's base that is a multiple of 2^k; its buddy is
//     the block of the same order at unit offset XOR 2^k. With a unit that
//     is no power of two the pool is a whole number of units, not of pages.
//   - A pool that is not a power of two. The pool is not cut down to the
//     largest power of two in it: it starts as several top-level blocks, one
//     per set bit of size/min, largest first (a 12 GiB pool is an 8 GiB and
//     a 4 GiB block), as a kernel's buddy allocator covers a zone that is no
//     power of two. No memory is left out, but no request can exceed the
//     largest top-level block, and top-level blocks never merge. On an
//     A100-40GB (40,536 MiB) holding OPT-13B's 25.7 GB of fp16 weights and
//     500 MiB of CUDA context, 15.16 GiB is free and "buddy" reserves
//     13.64 GiB: top-level blocks of 8 GiB, 4 GiB, 1 GiB, 512 MiB, 128 MiB
//     and smaller. An Orca-Max reservation of 2,048 tokens (1,600 MiB at
//     800 KiB a token) takes a 2 GiB block, 22% of it waste, and only six
//     fit (four in the 8 GiB block, two in the 4 GiB one), where the same
//     bytes carved by an arena hold eight (example_test.go).
//   - Allocation. A request is rounded up to the smallest block that holds
//     it (at least min) and served best fit: from the smallest free order
//     at or above it, the block at the lowest offset in that order, split in
//     halves down to the request's order, the low half kept each time and
//     the high half left free. Streams are ignored, as in arena.
//   - Free. A freed block merges with its buddy while the buddy is wholly
//     free, order by order, so free space is always fully merged: no two
//     free blocks are buddies. Free neighbours that are not buddies stay
//     separate blocks, as they are in a real buddy system.
//   - Out of memory. The pool never grows: a request fails with an
//     *alloc.OOMError (AllocSize = its power-of-two block) when no free
//     block of its order or above exists, however many bytes are free in
//     smaller blocks. EmptyCache does nothing.
//   - Layout. One segment, pool "buddy", stream 0, tiled by the blocks in
//     address order. A live block shows its whole power-of-two size and the
//     bytes requested, so the rounding is internal waste to package frag,
//     and a free block is one block of the buddy system, so frag's largest
//     free block is what the allocator can serve. MaxAllocatable is the
//     largest free block's size, exactly what a clone would serve.
//   - No optional capabilities. A block cannot move to an arbitrary address
//     (a buddy system keeps blocks aligned to their size), so there is no
//     Relocator; there is no Stamper, TripRecorder or Grower either.
//
// Free blocks are one ordered set keyed (order, offset) (pool.go): best fit
// is one lower-bound query, a split inserts one block per order descended
// and a merge deletes one buddy per order ascended, each O(log n) in the
// free blocks, at most log2(pool/min) ≤ 41 times per call. Live blocks are
// in a slot.Table (generation-checked handles). Nothing is chosen by
// iterating a map or by chance: the same calls give the same blocks.
//
// Invariants (checked by CheckInvariants after every mutating operation
// when invariants.Enabled):
//
//	live and free blocks tile [base, base+size), each aligned to its size
//	no free block's buddy is free (free space is fully merged)
//	a live block is the smallest block that holds its request
//	allocated == Σ live block sizes, requested == Σ live requests
//	allocated + Σ free block sizes == size; reserved == size always
//	device used == size: the pool is the only thing this allocator holds
package buddy
