// Package async models a stream-ordered memory pool in the manner of
// cudaMallocAsync and cudaMemPool: one virtual address range reserved up
// front, physical 2 MiB pages mapped into it on demand, frees that become
// reusable in stream order, and a release threshold that decides how much
// unused memory the pool keeps across synchronisations.
//
// # Model
//
//   - Address space. New reserves a virtual range of 9/8 of the device
//     capacity, rounded up to whole pages, as PyTorch's expandable segments
//     do, and maps nothing. Physical memory is mapped in mem.PageSize (2 MiB)
//     pages, each one device allocation in Stats (DeviceAllocs/DeviceFrees
//     count pages mapped and unmapped).
//   - Allocation. A request is rounded up to a multiple of Align (512 B) and
//     served best fit — the smallest free extent that holds it, the lowest
//     address among equals, carved from its low end — among the free
//     extents the requesting stream may use.
//   - Streams. A block is freed on the stream it was allocated on. It is
//     reusable by that stream at once (stream order makes that safe) and by
//     other streams only after the next Sync. CUDA's reuse policies
//     (cudaMemPoolReuseFollowEventDependencies, ReuseAllowOpportunistic and
//     ReuseAllowInternalDependencies) are enabled by default and let other
//     streams reuse a free earlier when events or completed work allow; the
//     model has them off, which is the behaviour of a pool whose streams
//     share no events, and the conservative case for fragmentation. A
//     stream may use its own pending frees and memory free for all streams
//     together: an allocation can span both when they touch.
//   - Growth. When no usable extent holds the request, pages are mapped for
//     it at the lowest address where it fits in usable free memory and
//     unmapped address space together: a free extent next to unmapped space
//     is extended, and a request may bridge several mapped runs. Only the
//     unmapped pages the request touches are mapped; the rest of a fresh
//     page is free for all streams.
//   - Out of memory. If the device lacks the pages (or no place fits), the
//     pool trims once — unmaps every whole page of memory free for all
//     streams, counted in Stats.Retries — and tries again; then it fails
//     with an *alloc.OOMError (AllocSize = the rounded request).
//   - Sync (alloc.Syncer) is a device-wide synchronisation: every pending
//     free becomes usable by all streams; then, while the unused mapped bytes
//     (mapped − allocated) exceed the release threshold, whole free pages
//     are unmapped, highest addresses first. The threshold defaults to 0, as
//     cudaMemPoolAttrReleaseThreshold does, so by default Sync releases
//     every free page; "max" keeps everything (CUDA's UINT64_MAX idiom).
//   - EmptyCache is cudaMemPoolTrimTo(pool, 0): every whole free page of
//     memory free for all streams is unmapped; frees still pending on a
//     stream are not, because CUDA counts frees whose completion the host
//     has not observed as outstanding.
//   - Layout. One expandable segment, pool "async", stream 0, per maximal
//     mapped run, like PyTorch's expandable segments in a snapshot; blocks
//     tile each run. A free block may be pending for some streams; it is
//     still mem.Free, and touching free pieces are one block.
//   - MaxAllocatable (stream 0) is exact: the largest request best fit or
//     one growth would serve now given the device's free pages, or, failing
//     that, what the pool would serve after its implicit trim (computed on a
//     trimmed clone).
//
// Free memory is kept in extent.Sets: one for memory free for all streams
// (ready), and, for each stream with pending frees, one of those frees and
// one of its own runs (the pending frees merged with the ready extents they
// touch). A size index over ready memory (readyix.go) tags each ready
// extent with the at most two streams whose pending frees touch it, so best
// fit for any stream is two O(log n) queries, and every operation changes
// ready memory, the size index and at most two streams' sets: no cost grows
// with the number of streams (free.go explains the structure). Unmapped
// address space is a Set too. Growth walks the mapped runs, O(runs × log n).
//
// Invariants (checked by CheckInvariants after every mutating operation when
// invariants.Enabled):
//
//	every virtual byte is in exactly one of: unmapped, ready, one stream's
//	  pending, one live block; all start at base + a multiple of Align
//	unmapped extents are whole pages; mapped == vaSize − unmapped == device used
//	own(s) == the extents of ready ∪ pending(s), coalesced, that hold a
//	  pending byte of s, for every stream s with pending frees
//	the size index holds every ready extent, tagged with the streams of
//	  the pending extents that end at its start or begin at its end
//	allocated == Σ live sizes, requested == Σ live requests
//	every live block's stream is known; peaks never fall below current values
package async
