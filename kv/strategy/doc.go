// Package strategy maps sequences' KV caches onto an allocator: the KV
// strategies of DESIGN.md §3, which an engine drives with Admit (prefill),
// Grow (each decode step), Release and Preempt.
//
// # Strategies and their allocator calls
//
//	spec                   Admit, per sample                     Grow by k tokens                      Release, Preempt
//	contiguous-max         Alloc(MaxContext × bpt)               nothing (ErrTooLong past it)          Free
//	contiguous-max:pow2    Alloc((prompt + pow2(out)) × bpt)     nothing                               Free
//	contiguous-max:oracle  Alloc((prompt + out) × bpt)           nothing                               Free
//	contiguous-grow        Alloc((prompt + 64) × bpt)            when full: Alloc(max(2 × capacity,    Free
//	                                                             needed) × bpt), copy, Free the old
//	paged:B                Sequence.Append(prompt), then Fork    Sequence.Append(k)                    Sequence.Release
//	vmm:P                  vmm Alloc(prompt × bpt)               vmm Grow(tokens × bpt): map pages     Free (unmap)
//
// out is the request's true output length, pow2 the next power of two at or
// above it; every reservation is capped at Env.MaxContext tokens.
// bpt is the model's KV bytes per token on one GPU (model.KVBytesPerToken).
// Every allocator call is on stream 0. contiguous-max, :pow2 and :oracle are
// the three Orca baselines of the vLLM paper (§6.1: Orca (Max) reserves the
// maximum sequence length, Orca (Pow2) over-reserves the true output up to a
// power of two, Orca (Oracle) knows it); contiguous-max follows the brief
// and FasterTransformer in reserving the model's whole context, not the
// request's max_tokens. paged:B takes one allocation of Env.PoolBytes,
// rounded down to whole blocks, from the allocator when it is built (vLLM's
// KV tensor sized by gpu_memory_utilization) and never calls the allocator
// again until Close; its samples share the prompt's blocks. Where no block
// can be cached (Env.NoPrefixCaching) an engine that reads no block ids
// lets it keep only the pool's counts (Env.CountBlocks), with the same
// results. vmm:P needs an
// allocator that grows blocks in place (alloc.Grower: the vmm allocator)
// whose page is P (Parse says so otherwise) and grows each sample's virtual
// range in place, so it never copies.
//
// A request with N samples (parallel sampling) holds N copies of the prompt
// under the contiguous and vmm strategies and one under paged, and every
// Grow adds k tokens to each sample.
//
// # The breakdown
//
// Usage splits memory as the vLLM paper does (§2.3, Fig. 2):
//
//	token states  KV of tokens really stored
//	reservation   memory held for tokens a live sequence will still write
//	internal      memory held for a sequence that it will never fill
//	external      free memory stranded in the allocator's segments
//	cached idle   evictable prefix-cache blocks (paged only)
//	free          memory the strategy holds for nobody (paged: free blocks)
//
// Per strategy (final = prompt + true output, the length the sequence ends
// at; capacity is what its block was sized for):
//
//	              token states    reservation           internal                   external            free
//	contiguous-*  tokens × bpt    (min(capacity, final) capacity beyond final,     allocator's cached  0
//	                              − tokens) × bpt       plus allocator rounding    free (reserved −
//	                                                    of each block              allocated)
//	paged:B       written slots   0 (blocks on demand)  empty slots of held        allocator's cached  free blocks, null
//	              (shared once)                         blocks (< B per sample)    free                block, pool rounding
//	vmm:P         tokens × bpt    0 (pages on demand)   unwritten part of the      0 (vmm has no
//	                                                    last page (< P per sample) cache)
//
// This is the paper's split of Orca's memory: for Orca (Max) the slots up to
// the request's real end are "reserved" and the slots beyond it, which the
// request never reaches, "internal fragmentation"; Orca (Oracle) has no
// internal fragmentation but allocator rounding.
//
// TokenStates + Reservation + Internal (Breakdown.Held) is the memory held
// for live sequences: for contiguous and vmm it equals the allocator's
// Stats.Allocated above what it held before the strategy started, and for
// paged the pool's held blocks. External is the frag package's cached free
// class (alloc.Stats.CachedFree) of the whole allocator: the holes that
// contiguous-grow's freed buffers and contiguous-max's released reservations
// leave in the caching allocator's segments.
//
// # Determinism and failure
//
// Strategies hold no clock, goroutines or randomness; walks over live
// sequences (Close) go in SeqID order. Admit and Grow are all-or-nothing:
// when memory runs out they return an error wrapping ErrNoMemory and the
// cause (*alloc.OOMError or blockpool.ErrOutOfBlocks), after freeing what
// they had allocated, so the engine may preempt someone and retry.
package strategy
