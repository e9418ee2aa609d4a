// Package analysis diagnoses a PyTorch CUDA memory snapshot (package
// snapshot): where the memory of each device went, how fragmented it is and
// why, what an out-of-memory error in the trace was short of, whether our
// model of the caching allocator (alloc/caching) reproduces the recorded
// trace address for address, and what other allocator settings would have
// done with the same requests. `gpufrag analyze` prints its Report.
//
// Analyze does five things per device:
//
//  1. Diagnosis of the final state: the memory classes (reserved, allocated,
//     requested, active, cached free, reserved but unallocated), health and
//     fragmentation rate, largest free block and max allocatable (all from
//     package frag, over snapshot.Layout), the segments that waste most, the
//     size dispersion, per stream and pool, and the call sites whose live
//     blocks hold fragmented segments open.
//  2. The pre-trace state. The trace is a ring buffer that usually starts
//     after some segments (model weights) were allocated. Undoing every
//     event from the final segments backwards (an alloc frees its block, a
//     free_completed brings its block back, a segment_alloc removes its
//     segment, a segment_free restores it) leaves the segments and live
//     blocks that existed when recording began; since what it leaves at an
//     address is decided by that address's first event, one pass in order
//     finds the same (reconstruct), and the history is only ever read
//     forwards.
//  3. Replay fidelity. The pre-trace segments are seeded into a caching
//     allocator configured with the file's allocator_settings
//     (caching.Allocator.Seed), then the trace is replayed: each alloc
//     through the model, each free_completed as a free, each segment_free
//     as the release of that one segment. New segments get the address of the
//     segment_alloc recorded just before the alloc (mem.Device.SetVAHook),
//     so a match means the model chose the same segment, the same block and
//     the same split. Every alloc address and segment_alloc size is
//     compared; mismatches are listed, not hidden.
//     A device whose trace has no alloc event but whose blocks carry a
//     legacy (PyTorch ≤ 2.0) history is replayed from the histories instead
//     (Fidelity.Source is SourceHistory): the allocation order is
//     reconstructed, not recorded (segments, and blocks within each, in
//     address order; placeholders for free stretches, freed once every
//     segment is built), nothing is seeded, and each segment the model
//     obtains gets its recorded address. That tests segment sizing,
//     rounding, the split rules and the pool choice against the recorded
//     layout, not best fit among cached blocks or frees.
//  4. A timeline of reserved and allocated bytes and the fragmentation rate,
//     from that replay, and an explanation of each oom entry from the
//     model's state at that moment: fragmentation or demand, or unknown
//     once the replay has diverged (a free_completed of an address where
//     the model held no allocation), since the model's free blocks are then
//     not the recorded allocator's.
//  5. What-if: the same requests (pre-trace live blocks allocated first,
//     then the trace, each oom entry as the request that failed) through
//     alternative settings and allocators (optrace.ReplayAll over
//     alloc/registry), with peak reserved, OOMs and fragmentation each, and a
//     recommended PYTORCH_ALLOC_CONF line (PyTorch 2.8's name;
//     PYTORCH_CUDA_ALLOC_CONF still works).
//
// Private pools (CUDA graphs, MemPool): the replay routes each alloc to the
// pool PyTorch served it from (poolRouter: the entry's pool_id, else the
// recorded pool of the segment its address lies in) and seeds pre-trace
// private segments into their pools, so a trace of a server that captures
// CUDA graphs replays address for address. The what-if replays route the
// same way (buildOps names each alloc's pool, optrace.Op.Pool, and
// allocates the live blocks of pre-trace private segments in their pools):
// the caching alternatives keep each pool's memory apart; an allocator
// without private pools serves those requests from its default pools, and
// the report says which did (Alternative.UnroutedPrivate).
//
// Not modelled (and reported as such): expandable-segment traces
// (segment_map/segment_unmap), cross-stream frees that complete later
// (record_stream). A device with
// more than MaxReplayStreams streams is diagnosed but not replayed.
//
// Memory: the trace is read in order only (snapshot.Trace.All), so a
// snapshot read with snapshot.Options.PackTraces (the analyze command) is
// replayed from its packed entries (40 bytes an event) without expanding
// them, and with Options.ReleaseTraces the what-if op trace is built by
// consuming them (Trace.Consume), its ids reused once freed: a history is
// held once, packed, then as ops.
//
// Cost: replay and what-if are O(n log n) in segments and events (no work
// per event in proportion to all segments or blocks: the model's state at an
// oom entry comes from its counters and indexes, not a Layout; new segments
// are checked against the live ones in an interval tree), and the what-if
// replays share one op trace, validated and numbered once.
//
// Sizes: Device.Sizes is the one definition of a device's byte figures
// that analyze's JSON and the exporter's gpufrag_*_bytes series both
// report; device free and max allocatable depend on the capacity, which is
// a fact only when given or recorded (Device.CapacityKnown), not the
// 80 GiB default nor the reserved bytes of a --no-replay diagnosis.
//
// Beside the diagnosis, each device gets an Attribution (attrib.go): its
// live blocks, the free space they strand and their rounding, charged to
// the allocation site by one rule (frames.go: the first frame outside
// PyTorch and Python), exportable as a pprof profile (Report.Profile) or
// folded stacks. DiffReports compares two reports device by device, and
// FindOutliers names the outlier among N devices by a robust rule
// (diff.go, outlier.go; `gpufrag diff`, docs/diff.md).
//
// The package is pure: values in, values out; rendering lives in WriteText
// and the segment maps of analyze's and diff's pages (svg.go:
// SegmentMapSVG, SideBySideSegmentMaps), files and flags in
// cmd/gpufrag/internal/cli.
package analysis
