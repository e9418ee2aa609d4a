// Package alloc defines the interface every modelled GPU memory allocator
// implements, and this overview of them all (in the manner of the Go
// runtime's malloc.go). Each allocator lives in its own package; each of its
// files points back here.
//
// # The hierarchy
//
//	mem.Device      the GPU: capacity, other use, 2 MiB physical pages, a
//	                virtual address space handed out fresh while it lasts
//	  ↑ Reserve/Release (physical bytes), ReserveVA/ReleaseVA (ranges)
//	Allocator       one of the packages below, serving Alloc/Free requests
//	  ↑ Alloc(size, stream) → Block{Handle, Addr, Size}; Free(Handle)
//	caller          the replay driver (optrace), the serving simulator (sim),
//	                the what-if analyses and defrag planners
//
// What an allocator holds is a list of segments (contiguous virtual ranges it
// obtained from the device), each tiled by blocks that are active (held by a
// caller) or free (cached for reuse). Layout returns that picture as a plain
// value; package frag computes every fragmentation metric from it.
//
// # The allocators
//
//	caching    PyTorch's CUDA caching allocator: small (≤ 1 MiB) and large
//	           pools, 2 MiB / 20 MiB / rounded segments, best fit by (stream,
//	           size, address), split and merge within a segment, max_split_size,
//	           roundup_power2_divisions, garbage collection, the out-of-memory
//	           ladder and expandable segments.
//	sizeclass  pools of fixed-size slots per size class (e.g. 8/64/512 MiB),
//	           larger requests served directly.
//	arena      one pool reserved up front (TensorRT-LLM sizes it as a fraction
//	           of free memory), best fit with coalescing, never grows.
//	async      a stream-ordered pool in the manner of cudaMallocAsync: one
//	           virtual range mapped in 2 MiB pages, reuse on the same stream at
//	           once and across streams after a sync, trimmed to a release
//	           threshold at sync points.
//	direct     one raw device allocation per request: the baseline.
//	vmm        one virtual range per request backed by pages of a chosen size
//	           mapped on demand: no external fragmentation, page-granular
//	           internal waste.
//
// # The allocation path (common shape)
//
//  1. Reject a size ≤ 0 (ErrInvalidSize).
//  2. Round the request to the allocator's granularity (512 B, a size class,
//     a page).
//  3. Look for a free block that fits in the allocator's cache (best fit,
//     free list or slot), honouring the stream.
//  4. Otherwise obtain memory from the device (a new segment, a slab, more
//     pages); if the device has too few free pages, release what the
//     allocator's rules allow and retry.
//  5. Otherwise fail with an *OOMError carrying PyTorch's message fields.
//  6. Cut the block (split, or take a slot), hand out a generation-checked
//     Handle and update the incremental Stats.
//
// # The free path
//
//  1. Resolve the handle; a stale, double or foreign handle is rejected with
//     ErrInvalidHandle and nothing changes.
//  2. Return the block to the cache (merging with free neighbours where the
//     allocator coalesces), or to the device (direct, vmm, oversize direct
//     requests of sizeclass).
//  3. Cached memory goes back to the device only through EmptyCache, an
//     allocator's out-of-memory path, garbage collection or sync-time trimming.
//
// # Contracts every allocator keeps
//
// Checked after every operation by package alloctest (property tests with
// pgregory.net/rapid against a naive reference, and datadriven scripts):
//
//   - the memory classes of Layout add up to the device capacity;
//   - Stats equal a recount of Layout;
//   - live blocks never overlap, and each is where Alloc (or Relocate) put it;
//   - MaxAllocatable is honest: a clone serves a request of exactly that size;
//   - the same operations on a fresh allocator give the same layout.
//
// # Optional capabilities
//
// Some allocators can do more than Allocator asks; a caller finds out with a
// type assertion and works without the capability when it is missing, so
// that no caller needs to import an allocator package (internal/lint holds
// sim, advise and experiments to alloc and alloc/registry, and kv/strategy and
// defrag to alloc alone). Caps lists the capabilities an allocator has
// (CapsOf a built one); Described is an allocator known by a parsed spec
// (alloc/registry.Spec), which capability-driven packages take instead of the
// registry.
//
//	Relocator     move a live block to another free address (defrag):
//	              caching, sizeclass, arena
//	Syncer        stream synchronisation points (async trims its pool)
//	Stamper       a mutation stamp: equal stamps mean the same Layout and
//	              MaxAllocatable, so what a caller derived from them (the
//	              fragmentation metrics of a sample) can be kept: caching,
//	              async
//	TripRecorder  stand in for a repeated round trip of allocations that
//	              are all freed again (a step's activation buffers): caching,
//	              async, vmm
//	TripRoom      a TripRecorder whose trips stay repeatable across grows
//	              between them, given the memory and address space a run
//	              takes: vmm
//	Grower        grow a live block in place, page by page (vAttention's
//	              KV ranges): vmm
//	FreeSummarizer  the largest free block and the cached free bytes
//	              without a Layout (the health of a sample): caching, vmm
//	PoolAllocator route a request to a private pool (CUDA-graph pools,
//	              MemPool; op traces' "pool" field): caching
//
// The fast paths built on them change no result: sim/fastpath_test.go runs
// the engine with and without them and compares everything, and the
// trip_test.go of caching, async and vmm run twin allocators, one
// repeating trips, against each other (alloctest.TripsRepeat, with grows
// of other blocks between trips on a Grower).
//
// Trips and grows. caching and async close a trip only when it made no
// device call, and repeat it only from the very state it started in. A vmm
// trip maps pages and unmaps them, and reserves virtual ranges and gives
// them back; a serving engine grows its KV ranges (Grow) between steps. Its
// trips stay repeatable across those grows because a vmm allocation's
// outcome depends on nothing a grow changes but the device's free memory:
// its range is its own (fresh addresses, or the lowest released range once
// the fresh ones run out, neither of which a grow touches) and its pages
// map when that many are free. So a closed trip records what a run takes
// (the pages it maps and unmaps, the most bytes it holds at once, the
// fresh address space it uses), and a run after grows does the same calls
// to the same end as long as that many bytes are free and the fresh space
// holds it (TripRoom); its peak is the bytes mapped then plus the most it
// holds. An engine that grows ranges in bulk between repeated trips (sim's
// decode runs) keeps that many bytes free after its grows
// (strategy.DecodeStepper) and asks TripRoom how many runs the address
// space holds.
//
// The stamp promises the Layout, not the whole state: a closed round trip
// returns the stamp to its value at BeginTrip although the handle table's
// generations have moved on (and the Allocs and Frees counters, and possibly
// the peaks). Handles are opaque and Layout does not show them, so nothing a
// caller derives from Layout can tell the two states apart; a stamp is never
// given to a state with another Layout, including the states inside a trip.
//
// Allocators are deterministic and single-threaded: no clock, no global
// random source, no goroutines (enforced by internal/lint). Expensive
// self-checks (CheckInvariants) run after every operation when built with
// -tags invariants or -race.
package alloc
