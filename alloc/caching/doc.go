// Package caching models PyTorch's CUDA caching allocator
// (c10/cuda/CUDACachingAllocator.cpp) faithfully enough to replay real
// allocation traces address for address. The specification is
// ../shared/research/pytorch-allocator.md; section numbers below refer to it.
//
// # Model
//
//   - Sizes round to 512 B, or to roundup_power2_divisions steps (§1).
//   - Rounded requests ≤ 1 MiB use the small pool, larger ones the large pool.
//   - A new segment is 2 MiB (small), 20 MiB (requests below 10 MiB) or the
//     request rounded to 2 MiB (get_allocation_size).
//   - Free blocks of a pool are kept ordered by (stream, size, address); a
//     request takes the smallest that fits, lowest address on ties (best fit
//     across all segments), from its low end (§3.1).
//   - A block is split if the pool is small or expandable segments are on and
//     at least 512 B remain, or in the large pool if the request is below
//     max_split_size and more than 1 MiB remains (§3.2).
//   - Freed blocks merge with free neighbours of the same segment only; memory
//     returns to the device only through empty_cache, the out-of-memory ladder
//     and garbage collection (§3.4–3.6).
//   - max_split_size_mb (M) and max_non_split_rounding_mb (R): a request
//     below M never takes a block of M or more; a request of M or more takes
//     a block only if it is smaller than request + R (§3.1).
//   - The out-of-memory ladder: free cached oversize blocks (finite M only),
//     then every wholly free segment, retry, then fail with PyTorch's message
//     fields (§3.4).
//   - garbage_collection_threshold with a per-process memory fraction frees
//     the oldest unsplit cached large blocks before cudaMalloc (§3.5).
//   - expandable_segments: one virtual range per stream and pool (1⅛ of the
//     device), mapped in 2 MiB (small) or 20 MiB (large) pages at the lowest
//     address that fits; whole free pages are unmapped only by empty_cache and
//     the out-of-memory path; each mapped run is reported as a segment (§4).
//   - Private pools (CUDA-graph pools and torch.cuda.MemPool, PyTorch's
//     PrivatePool, named by a PoolID as MempoolId_t names them): AllocIn
//     routes a request to the pool's own small and large BlockPool, as
//     get_pool does while a capture or MemPool context is underway, and
//     every rule above applies within that pool only (private.go). The
//     ladder stops before release_cached_blocks for such a request (PyTorch
//     skips it while captures are underway). A pool has a use count
//     (RetainPool, ReleasePool); empty_cache and the ladder release the
//     wholly free segments of the default pools and of pools no capture
//     uses, and delete such a pool once it holds no segment. Garbage
//     collection acts on the default large pool only.
//
// Not modelled: cross-stream uses (record_stream) and their pending frees,
// IPC, the free-memory callbacks, a capture's stream filter (the caller
// names the pool of each request), checkpointing a private pool's state
// (setCheckpointPoolState), and newer PyTorch's MemPools marked use_on_oom,
// which the ladder tries first. None of them changes single-stream
// default-pool behaviour (§10). Behaviour read from
// c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch, revision
// 001074d25084): get_pool, alloc_block and release_block (cudaMalloc_count),
// release_cached_blocks (graph_pools_freeable), beginAllocateToPool,
// releasePool, garbage_collect_cached_blocks, snapshot (segment_pool_id).
//
// # Complexity
//
// Alloc and Free do a handful of operations on the pool's free set for the
// stream (ordset.Classed: a flat bin of (address, id) per 512-byte size
// class below 2.8 MiB under a bitmap, the larger sizes in an ordset.Binned,
// so best fit is a bitmap step and the last entry of one bin; a bin's
// insert or delete shifts at most its entries, and a bin past 512 entries
// moves into the Binned) and allocate nothing in steady state: block
// records live in a slice and are reused, a handle names its record (id
// and the record's generation: no handle table), and tryMerge reads a
// neighbour's allocated/mapped bits from a byte array (Allocator.state)
// instead of its record, a cache miss at 10,000 live blocks.
// Layout, MaxAllocatable and CheckInvariants are O(blocks). What PyTorch
// finds by walking every free block or segment is kept in indexes instead,
// built on first use so that an allocator that never needs them pays one
// compare per free-set change (index.go): empty_cache, the out-of-memory
// ladder and garbage collection cost what they release (the pools' queues
// of whole segments and of expandable blocks with whole pages),
// ReleaseSegment a map lookup, and LargestFreeBlock O(log streams) per free
// set changed since it last answered. Without them a snapshot replay over
// 45,000 segments, or a what-if whose allocations fail one after another,
// was quadratic.
//
// # Round trips
//
// A caller that makes the same closed batch of calls again and again (a
// serving engine's per-step activation buffers: every block allocated is
// freed again) can record it with BeginTrip and EndTrip and have later
// repeats counted by RepeatTrip instead of run, when the allocator is in the
// state the batch left it in (alloc.TripRecorder). Stamp tells a caller that
// the Layout has not changed since it last looked (alloc.Stamper). Callers
// reach both through those interfaces, never through this package (trip.go).
//
// Invariants: see Allocator.
package caching
