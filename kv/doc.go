// Package kv is the home of gpufrag's KV-cache strategies: the ways an
// inference engine maps a sequence's growing key/value cache onto GPU memory
// (DESIGN.md §3: contiguous-max, contiguous-grow, paged(B), vmm(P)). Package
// kv itself holds no code; its sub-packages are libraries that a Go
// inference engine may import directly:
//
//   - kv/blockpool: the paged(B) strategy's block pool, with vLLM v1's
//     semantics (null block, LRU free-block queue, reference counts, prefix
//     caching over full blocks by a hash chain, copy-on-write) and the
//     counters that split KV memory into the vLLM paper's categories.
//   - kv/strategy: the strategies themselves (contiguous-max and its pow2
//     and oracle variants, contiguous-grow, paged:B, vmm:P) over any
//     allocator, with the vLLM paper's breakdown of KV memory (token states,
//     reservation, internal, external, cached idle).
package kv
