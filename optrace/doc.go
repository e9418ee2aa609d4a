// Package optrace reads, writes, checks and replays allocation op traces:
// the sequence of alloc, free and empty_cache calls a program made, one
// operation per line of JSON (JSON Lines). A trace replayed through several
// allocators shows how each would have laid out the same requests: peak and
// final memory, out-of-memory failures and fragmentation (package frag).
//
// # Format
//
// One JSON object per line; blank lines are allowed and ignored:
//
//	{"op":"alloc","id":"a1","size":16777216,"stream":0}
//	{"op":"free","id":"a1"}
//	{"op":"empty_cache"}
//	{"op":"sync"}
//
// The fields each op takes:
//
//   - alloc: id (a non-empty string naming the allocation) and size (bytes,
//     a positive integer of at most MaxSize) are required; stream (a
//     non-negative integer, default 0) is optional, and so is pool: the
//     private pool the request was routed to, a pair of non-negative
//     integers as PyTorch's MempoolId_t (a CUDA-graph capture's pool or a
//     torch.cuda.MemPool; [0,0] or absent: the default pools). Allocators
//     with private pools (alloc.PoolAllocator: caching) serve the request
//     from that pool only; the others serve it from their default pools
//     and count it (Result.UnroutedPoolAllocs). Write omits it for
//     the default pools, so traces without pools read and write as before.
//   - free: id, which must name a live allocation.
//   - empty_cache: torch.cuda.empty_cache(); no other fields.
//   - sync: an extension to the format: a device-wide stream
//     synchronisation (torch.cuda.synchronize()). Stream-ordered allocators
//     (alloc.Syncer, such as the cudaMallocAsync-style pool) trim their cache
//     at sync points; the others ignore it. No other fields.
//
// The reader is strict, because a trace that is silently misread gives
// plausible but wrong numbers: keys are matched exactly (case matters), an
// unknown or repeated key, a field that the op does not take, a size that is
// not a positive integer (16777216.0, 1.6e7 and "16777216" are refused),
// anything after the object on the same line and a line longer than
// MaxLineBytes are errors. Ids must make sense in order: a free names an id
// that is live, and an alloc does not reuse an id that is still live (an id
// may be reused after its free). A trace must hold at least one op (an
// empty or blank file is an error, not a replay of nothing), and its first
// 4 KiB must be UTF-8 text (untrusted.CheckText). Every error is an *Error naming the file,
// the line and, where there is one, the field:
//
//	ops.jsonl: line 12: field "size": must be a positive integer (got -5)
//
// # Replay
//
// Replay applies a trace to one allocator; ReplayAll to several, built by a
// caller's function from specs (the command line uses package alloc/registry).
// Both are pure and deterministic: no clock, no randomness, no I/O. An alloc that fails with out-of-memory is counted and
// the trace goes on; later ops naming its id are skipped and counted, as a
// program that caught the error and dropped the tensor would do. The trace
// is validated and its ids numbered once (dense slots, so a replay keeps
// handles in a slice, not a map of strings), before any allocator sees an
// op; ReplayAll shares that between its allocators.
//
// Invariants:
//
//   - Read returns only traces that Validate accepts, and Write writes every
//     such trace so that Read gives it back (the round trip FuzzRead checks).
//   - Replay's peak metrics describe the state after the op at which reserved
//     bytes first reached their maximum, so Result.AtPeak.Reserved ==
//     Result.PeakReservedBytes.
package optrace
