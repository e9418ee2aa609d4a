// Package alloctest is the test kit every allocator passes: a conformance
// suite of property tests against a naive reference model (Conformance), a
// datadriven script runner for commented scenarios (RunScripts), and shared
// benchmarks (BenchAllocFree). It is used from the allocators' own _test.go
// files, as rafttest is used by raft.
//
// The reference model is deliberately dumb: a map from handle to the block the
// allocator returned. After every operation the suite checks that
//
//   - the layout is well formed (mem.Layout.Check: segments disjoint, blocks
//     tile their segment, memory classes add up to the capacity);
//   - Stats equal a recount of the layout (reserved, allocated, requested,
//     segments, live blocks) and peaks never fall below current values;
//   - every live handle appears exactly once, at the address and size the
//     allocator returned (or moved it to), and no two live blocks overlap;
//   - a double free and a foreign handle are rejected with ErrInvalidHandle
//     and leave layout and stats unchanged;
//   - an out-of-memory answer is an *alloc.OOMError naming the request;
//   - MaxAllocatable() is honest: a clone serves a request of exactly that size;
//   - the same operations replayed on a fresh allocator give the same layout
//     (determinism).
package alloctest
