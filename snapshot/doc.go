// Package snapshot reads PyTorch CUDA memory snapshots, the pickles written
// by torch.cuda.memory._dump_snapshot() (and by the C++
// torch::cuda::_memory_snapshot_pickled()), into typed Go values, and turns
// them into gpufrag layouts (mem.Layout).
//
// Decoding goes through package snapshot/pickle, a bounded decoder that
// refuses every opcode that could run code, so untrusted files are safe to
// read. Read accepts every format generation seen in real files:
//
//   - modern: allocator_settings and external_annotations, time_us on trace
//     entries (FormatModern);
//   - without allocator_settings, with or without time_us (FormatNoSettings;
//     TraceEntry.TimeUS is 0 when absent, Snapshot.HasTimes says which);
//   - PyTorch ≤ 2.0, whose blocks carry a history list instead of address
//     and frames (FormatLegacy): block addresses are computed by summing
//     sizes from the segment address, frames and a missing requested size
//     come from history[0], and the whole list is kept in Block.History
//     (package snapshot/analysis rebuilds an allocation order from it);
//   - a bare list of segments (FormatSegmentList);
//   - torch.cuda.memory_stats() dumped as JSON (FormatMemoryStats): counters
//     only, in Snapshot.Stats. A file whose first byte (after white space)
//     is '{' is read as JSON; no pickle starts that way. Its first 4 KiB
//     must be JSON text (untrusted.CheckJSONStart) before the rest is read; a
//     key repeated or written twice in different case, and invalid UTF-8,
//     are errors (untrusted.CheckJSON); and the counters must hold the relations
//     of a real dump, per pool and for current and peak values: requested
//     <= allocated <= active <= reserved bytes, inactive split bytes
//     within reserved - active, current <= peak, no negative byte count.
//
// Fields of private pools and newer writers: a segment's segment_pool_id
// (Segment.PoolID; (0, 0) is the default pools, otherwise a CUDA-graph or
// MemPool private pool), a trace entry's pool_id, user_metadata and
// compile_context (TraceEntry.PoolID/HasPoolID, UserMetadata,
// CompileContext), an oom entry's device_free (TraceEntry.DeviceFree), and
// pinned host memory (host_segments, host_traces: kept in Extra,
// summarized apart from device memory by Snapshot.PinnedHost).
//
// Keys other than segments are optional, unknown keys and trace actions are
// kept or ignored, never fatal; a top-level key that is not a str is
// refused (PyTorch writes none, and such a dict would read as a snapshot
// of nothing). A known key of the wrong type is an *Error
// naming the field path (segments[3].blocks[7].size) and the byte offset of
// the value in the file; so is a value that decodes but breaks an
// invariant (Validate: a device out of range, a block past its segment's
// end), the offset found after the fact (locate.go): the value's own, or
// for an entry of a streamed trace the entry's.
//
// Hostile and careless input is bounded at every step:
//
//   - the first bytes are looked at before the rest is read, so a file that
//     is no snapshot (a torch.save ZIP checkpoint, a compressed file, text,
//     /dev/zero) is refused at once, saying what it is (ErrNotSnapshot),
//     and a pickle of a protocol the decoder does not read (2 to 5 are) is
//     named as one;
//   - a pickle's first 16 KiB are decoded (pickle.CheckPrefix) before the
//     rest is read, with bytes objects capped at DefaultMaxBytesObject
//     (1 MiB; snapshots hold none), so random bytes that begin like a
//     pickle fail there, not after reading on;
//   - the pickle is decoded in one pass as it is read, never whole in
//     memory, and each device's trace entries are converted as they
//     arrive (pickle.Options.Stream), the decoder forgetting each, so a
//     file of any size is read in memory that follows its segments,
//     blocks, distinct frames and strings, plus the converted trace
//     (TraceEntry: 136 bytes an event, Frames shared; kept packed at 40
//     with Options.PackTraces, for readers that take it in order through
//     Snapshot.Trace; only its oom entries with Options.TraceOOMsOnly);
//     the input's size is not capped (Options.Pickle.MaxInputBytes can);
//   - the pickle decoder bounds depth, memo and decoded memory
//     (pickle.Options), per input byte;
//   - the typed values built are bounded by Options.MaxBuiltBytes, because
//     each memo reference to a shared value is built anew: a few bytes of
//     references cannot name gigabytes of segments;
//   - the snapshot is then checked once against the invariants the analysis
//     relies on (Snapshot.Validate: devices in range, segments disjoint and
//     below 2^64, blocks tiling their segment, and each device's trace
//     possible: allocator events no larger than mem.MaxRequest, time_us
//     stepping back a few times at most, every block event inside a
//     segment that existed while the trace ran, which holds for a ring
//     buffer that lost its oldest entries too), so every consumer gets
//     validated values.
package snapshot
