package alloc

// PoolID names a private pool, as PyTorch's MempoolId_t does: a pair of
// integers (CUDA-graph pools and torch.cuda.MemPool number them from
// different counters). The zero PoolID is the allocator's default pools.
type PoolID [2]int64

// PoolAllocator is implemented by allocators with private pools (caching:
// CUDA-graph pools and MemPools). AllocIn is Alloc routed to pool id: the
// request is served from that pool's own cached blocks and segments only,
// as PyTorch serves an allocation made while a capture or MemPool context
// is active. AllocIn with the zero id is Alloc. Callers holding another
// allocator call Alloc: a pool id is a PyTorch routing fact that other
// allocators have no use for.
type PoolAllocator interface {
	AllocIn(id PoolID, size int64, stream int) (Block, error)
}
