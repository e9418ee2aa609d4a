// Package blockpool is a paged KV-cache block pool with the semantics of
// vLLM's v1 engine (vllm/v1/core/block_pool.py and kv_cache_utils.py), as
// summarised in the research note shared/research/kv-managers.md §2.1. It is
// the paged(B) strategy of gpufrag's simulator (DESIGN.md §3), and a library a
// Go inference engine can use directly: deterministic, allocation-free on its
// hot paths, no goroutines, no clock, no I/O.
//
// # Model
//
// A Pool holds NumBlocks blocks of BlockSize token slots, all made up front.
// A block is identified by a BlockID, the index an attention kernel would
// read from a block table. Each block has a reference count (the number of
// block tables holding it), a fill (token slots written), and optionally a
// prefix-cache key.
//
//   - Block 0 is the null block. It is never handed out, never freed, and is
//     left out of the usage figure; block tables may hold it as a
//     placeholder.
//   - The free queue is an intrusive doubly linked list over the block array
//     (vLLM's FreeKVCacheBlockQueue): Allocate pops from the head, Free
//     appends to the tail, and a prefix hit unlinks a block from the middle,
//     all in O(1). The queue holds free blocks and evictable cached blocks
//     (ref 0, key kept), in LRU order. Its links are an array of their own,
//     8 bytes a block, apart from the blocks' state.
//   - A sequence's blocks move in runs: Sequence.Append (and Allocate) takes
//     the n blocks it needs as one walk along the queue's head and one
//     splice, setting their fills in the same pass; Free of a table whose
//     blocks it alone holds (a request without forks or prefix hits) drops
//     them in one pass and splices them onto the tail at once; of a table
//     that starts with shared blocks (prefix hits), it does so for the run
//     of blocks held once at its end and takes the general path, two
//     passes, for the shared start only. The order is
//     that of n single pops and pushes (TestRangesMatchBlockwise runs both).
//   - Free returns a block table's blocks that reach ref 0 in reverse order:
//     the last block of a sequence, the part least likely to be shared, is
//     evicted first, and its first blocks stay cached longest.
//   - Prefix caching works on full blocks only. A block's key hashes its
//     parent's key, its tokens and extra keys (HashBlock), so a key names the
//     whole prefix up to the block's end. CacheFullBlock registers a full
//     block; LongestPrefix and GetCached find the longest cached prefix of a
//     key chain (LongestPrefixHint skips the lookup of a key whose hinted
//     block, say where the caller last saw it, holds it alone); Touch takes
//     the hit blocks (ref++, out of the free queue).
//     Several blocks may share a key, as in vLLM, because block tables are
//     append-only and ids are never rewritten.
//   - Eviction is LRU through the queue: when Allocate pops a block that
//     still carries a key, the key is dropped. Nothing else evicts.
//   - Usage is vLLM's gauge: 1 − NumFree/(NumBlocks − 1), with evictable
//     cached blocks counted as free.
//   - Share and CopyOnWrite give the copy-on-write of parallel sampling and
//     beam search (vLLM v0; v1 shares prompts through the prefix cache
//     instead): forks hold the same blocks with higher reference counts, and
//     a fork about to write into a shared (or cached) block gets a private
//     copy.
//
// Sequence wraps a block table and a token count: Append allocates a block
// at each block boundary (and copies a shared last block before writing into
// it), MatchPrefix starts a sequence from the cache, MatchAppend does that
// and appends the rest of a prompt all or nothing (a prompt that does not
// fit only refreshes the LRU places of the blocks it found, as an engine's
// failed admission does), Cache registers its full blocks, Fork shares it,
// Release frees it.
//
// # Correspondence with vLLM v1
//
//	vLLM                                   blockpool
//	BlockPool(num_gpu_blocks, ...)         New(numBlocks, blockSize, Options{})
//	enable_caching=False                   Options{DisablePrefixCaching: true}
//	null_block                             NullBlock (block 0)
//	get_new_blocks(n)                      Allocate(dst, n); AllocateOne for n = 1
//	_maybe_evict_cached_block              eviction inside Allocate (Stats.Evictions)
//	free_blocks(reversed(req_blocks))      Free(table)  (reverses itself); FreeOne(id)
//	touch(blocks)                          Touch(ids)
//	get_cached_block(hash)                 Lookup(hash); GetCached = Lookup + Touch
//	find_longest_cache_hit                 LongestPrefix(dst, hashes)
//	cache_full_blocks                      CacheFullBlock(id, hash), Sequence.Cache
//	hash_block_tokens                      HashBlock (FNV-1a 64, not sha256/xxhash)
//	get_num_free_blocks / get_usage        NumFree / Usage
//	reset_prefix_cache                     ResetPrefixCache
//	prefix_cache_queries / _hits (tokens)  Stats.PrefixQueries / PrefixHits (blocks)
//
// The differences: keys are 64-bit FNV-1a rather than sha256 or xxhash (see
// HashBlock for collisions); counters count blocks, not tokens (multiply by
// BlockSize); there are no KV events and no groups of KV-cache specs (a
// hybrid model would use one Pool per group). The manager's rules (leave the
// last prompt token out of the lookup, preempt on ErrOutOfBlocks) belong to
// the caller.
//
// # Memory breakdown
//
// Stats splits the pool's token slots exactly into token states, reserved
// (held, nothing written), internal (empty slots of partly filled held
// blocks), cached-idle (evictable cached blocks) and free: the categories of
// the vLLM paper's Fig. 2 plus the research note's cached-but-idle class. The
// fill of held blocks comes from SetFill, which Sequence calls for you.
//
// # Invariants
//
//	block 0 (null) has ref 0 and is never queued or cached
//	every other block is exactly one of {in the free queue with ref 0, held with ref > 0}
//	NumFree equals the queue's length, and its links agree both ways
//	a block is cached iff it is in the index's chain for its key, exactly once
//	the gauges (cached, evictable, held slots) equal a recount
//	Stats' five slot classes sum to BlockSize × (NumBlocks − 1)
//
// CheckInvariants verifies them in O(NumBlocks). With invariants.Enabled
// (-tags invariants, or -race) every mutating method runs it and panics on a
// violation.
//
// # Errors
//
// Expected outcomes return errors: ErrOutOfBlocks (unwrapped, so the failure
// path allocates nothing; allocation is all-or-nothing). Misuse returns
// wrapped sentinels (ErrBadBlock, ErrNotAllocated for a double free,
// ErrAlreadyCached, ErrBadCount) and leaves the pool unchanged.
package blockpool
