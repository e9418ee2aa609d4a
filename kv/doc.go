// Package kv is the home of gpufrag's KV-cache strategies: the ways an
// inference engine maps a sequence's growing key/value cache onto GPU memory
// (DESIGN.md §3: contiguous-max, contiguous-grow, paged(B), vmm(P)).
//
// The package itself holds no code yet. Its sub-packages are libraries that a
// Go inference engine may import directly:
//
//   - kv/blockpool: the paged(B) strategy's block pool, with vLLM v1's
//     semantics (null block, LRU free-block queue, reference counts, prefix
//     caching over full blocks by a hash chain, copy-on-write) and the
//     counters that split KV memory into the vLLM paper's categories.
package kv
