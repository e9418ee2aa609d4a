// Pool statistics and the KV slot breakdown.
// See doc.go for the overview.

package blockpool

import "fmt"

// Stats is a snapshot of a pool's gauges and counters. It is a plain value:
// package frag computes ratios from it, and exporters turn it into metrics.
//
// The five slot fields split the pool's BlockSize × (NumBlocks − 1) token
// slots exactly, into the categories of the vLLM paper's Fig. 2 plus the
// cached-but-idle class of the research note (§4 "Bar for the Go project" 2):
//
//	TokenSlots + ReservedSlots + InternalSlots + CachedIdleSlots + FreeSlots
//	    == BlockSize × (NumBlocks − 1)
//
// Held blocks are counted through their fill (SetFill, or Sequence): slots
// written are token states; a held block with nothing written is reserved (an
// engine that allocates ahead); the empty slots of a partly filled held block
// are internal fragmentation. Free-queue blocks are cached-idle if they still
// carry a key, else free. A paged pool has no external fragmentation: any free
// block serves any request.
type Stats struct {
	NumBlocks int     // pool size including the null block (vLLM num_gpu_blocks)
	BlockSize int     // token slots per block
	Free      int     // free-queue length: free plus evictable cached blocks
	Used      int     // held blocks (ref > 0), null block excluded
	Cached    int     // blocks with a key, held or evictable
	Evictable int     // cached blocks in the free queue (ref 0)
	Usage     float64 // 1 − Free/(NumBlocks − 1), vllm:kv_cache_usage_perc

	TokenSlots      int64 // written slots of held blocks: token states
	ReservedSlots   int64 // slots of held blocks with nothing written
	InternalSlots   int64 // empty slots of partly or fully written held blocks
	CachedIdleSlots int64 // slots of evictable cached blocks
	FreeSlots       int64 // slots of free blocks that hold no key

	Allocs        int64 // blocks handed out by Allocate, Sequence and CopyOnWrite
	Frees         int64 // blocks returned to the free queue
	Copies        int64 // copy-on-write copies
	Evictions     int64 // cached blocks whose key was dropped on reuse (LRU eviction)
	PrefixQueries int64 // block keys looked up by LongestPrefix and GetCached
	PrefixHits    int64 // of which found
}

// Stats returns the pool's current statistics. It is O(1).
func (p *Pool) Stats() Stats {
	bs := int64(p.blockSize)
	used := p.NumUsed()
	return Stats{
		NumBlocks: len(p.blocks),
		BlockSize: p.blockSize,
		Free:      p.numFree(),
		Used:      used,
		Cached:    p.numCached,
		Evictable: p.evictable,
		Usage:     p.Usage(),

		TokenSlots:      p.heldSlots,
		ReservedSlots:   int64(used-p.heldFilled) * bs,
		InternalSlots:   int64(p.heldFilled)*bs - p.heldSlots,
		CachedIdleSlots: int64(p.evictable) * bs,
		FreeSlots:       int64(p.numFree()-p.evictable) * bs,

		Allocs:        p.allocs,
		Frees:         p.frees,
		Copies:        p.copies,
		Evictions:     p.evictions,
		PrefixQueries: p.queries,
		PrefixHits:    p.hits,
	}
}

// String renders the statistics on three lines: blocks, slots, counters.
func (s Stats) String() string {
	return fmt.Sprintf("blocks=%d size=%d free=%d used=%d cached=%d evictable=%d usage=%.4f\n"+
		"slots: tokens=%d reserved=%d internal=%d cached-idle=%d free=%d\n"+
		"counters: allocs=%d frees=%d copies=%d evictions=%d prefix-queries=%d prefix-hits=%d",
		s.NumBlocks, s.BlockSize, s.Free, s.Used, s.Cached, s.Evictable, s.Usage,
		s.TokenSlots, s.ReservedSlots, s.InternalSlots, s.CachedIdleSlots, s.FreeSlots,
		s.Allocs, s.Frees, s.Copies, s.Evictions, s.PrefixQueries, s.PrefixHits)
}
