// Block pool: blocks, reference counts, allocate and free.
// See doc.go for the overview.

package blockpool

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpufrag/gpufrag/internal/invariants"
)

// BlockID names one block of the pool: an index in [0, NumBlocks). It is the
// number a block table holds and the attention kernel reads.
type BlockID int32

// NullBlock is block 0. It is never handed out and never freed; as in vLLM it
// may stand in a block table for a slot that holds no KV (a skipped
// sliding-window block), and Free, Touch and Share ignore it.
const NullBlock BlockID = 0

// Sentinel errors. Misuse errors (ErrBadBlock, ErrNotAllocated, ErrBadCount,
// ErrNotEmpty) are wrapped with the offending value; check them with
// errors.Is.
var (
	// ErrBadConfig is returned by New for a block count or block size out of
	// range.
	ErrBadConfig = errors.New("blockpool: bad config")
	// ErrOutOfBlocks means the free queue (free plus evictable cached blocks)
	// holds fewer blocks than asked for. Nothing was allocated: allocation is
	// all-or-nothing. It is returned unwrapped so that the failure path, which
	// a scheduler hits on every preemption, allocates nothing; NumFree says
	// how many blocks there were.
	ErrOutOfBlocks = errors.New("blockpool: out of blocks")
	// ErrBadBlock means a block id is out of range, or is the null block
	// where a real block is needed.
	ErrBadBlock = errors.New("blockpool: bad block id")
	// ErrNotAllocated means the block has reference count 0: a double free,
	// or sharing, caching or writing a block nobody holds (or touching a free
	// block that holds no cached prefix).
	ErrNotAllocated = errors.New("blockpool: block not allocated")
	// ErrAlreadyCached means CacheFullBlock was called on a block that is
	// already registered under a hash (vLLM asserts the same).
	ErrAlreadyCached = errors.New("blockpool: block already cached")
	// ErrBadCount means a negative count, or a token fill outside
	// [0, BlockSize].
	ErrBadCount = errors.New("blockpool: bad count")
	// ErrNotEmpty means a prefix match was asked of a sequence that already
	// holds tokens: prefix hits only start a sequence.
	ErrNotEmpty = errors.New("blockpool: sequence not empty")
)

// Options configure a Pool. The zero value is vLLM v1's default: prefix
// caching on.
type Options struct {
	// DisablePrefixCaching turns prefix caching off, as vLLM's
	// --no-enable-prefix-caching does: CacheFullBlock does nothing, lookups
	// always miss, and the free queue is a plain FIFO of free blocks.
	DisablePrefixCaching bool
}

// block is the per-block state the hot paths touch, 16 bytes; the key lives
// apart, in Pool.keys, so that more blocks share a cache line, and so do the
// free queue's links, in Pool.links. All blocks are
// made in New and the pool never allocates afterwards (except when the prefix
// cache's index doubles: index.go).
type block struct {
	// hprev and hnext link the block into the circular chain of blocks that
	// share its hash, while it is cached (hashed), and are 0 otherwise: a
	// chain holds real blocks only, so hnext != 0 says the block is cached
	// (block.cached). The index holds the chain's head, the oldest
	// registration, which is the one a lookup returns (as vLLM's
	// BlockHashToBlockMap returns the first inserted).
	hprev, hnext BlockID
	// ref is the number of holders: block tables that contain the block.
	// A real block (not the null block, whose ref is always 0) is in the
	// free queue exactly when its ref is 0: no flag says so apart.
	ref int32
	// fill is the number of token slots written (0..BlockSize). It survives
	// a free, so an evictable cached block still reports its content, and is
	// reset when the block is popped for reuse.
	fill int32
}

// cached says the block is registered in the prefix cache (hashed).
func (b *block) cached() bool { return b.hnext != 0 }

// link is a block's place in the free queue while it is queued. Block 0
// (the null block) is the queue's sentinel: links[0].next is the head (next
// to be allocated, least recently freed) and links[0].prev the tail (most
// recently freed).
type link struct {
	prev, next BlockID
}

// Pool is a fixed set of KV blocks of BlockSize token slots each, with vLLM
// v1's free-block queue, reference counts and prefix cache. A Pool is not safe
// for concurrent use; an engine's scheduler owns it.
//
// Invariants (checked by CheckInvariants, after every mutation when
// invariants.Enabled):
//
//	block 0 is the null block: ref 0, never queued, never hashed
//	every other block is queued exactly when its ref is 0
//	numFree() == length of the free queue; prev/next links agree both ways
//	a block is hashed iff it is in exactly one hash chain, the chain of its hash,
//	  and the index holds one head per distinct hash (keyIndex)
//	numCached == hashed blocks; evictable == queued hashed blocks
//	heldSlots == Σ fill over held blocks; heldFilled == held blocks with fill > 0
type Pool struct {
	blocks    []block     // indexed by BlockID; fixed length NumBlocks
	links     []link      // links[id]: block id's place in the free queue while queued (queue.go)
	keys      []BlockHash // keys[id] is block id's prefix-cache key while it is hashed, else 0
	blockSize int         // token slots per block; fixed
	caching   bool        // prefix caching on; fixed

	index      keyIndex // key -> head of its chain; an entry added on CacheFullBlock, removed on eviction
	numCached  int      // hashed blocks, held or queued
	evictable  int      // hashed blocks in the free queue (ref 0)
	heldSlots  int64    // Σ fill over held blocks (token states)
	heldFilled int      // held blocks with fill > 0; the others are reserved (nothing written)

	// Monotonic counters, reported by Stats. The free queue's length is not
	// kept apart: every block leaves the queue by an allocation or by an
	// unlink (a prefix hit) and enters it by a free, so numFree derives it
	// from allocs, frees and base, NumBlocks − 1 less the unlinks. An
	// allocation and a free each move one counter.
	allocs, frees, copies, evictions int64
	queries, hits                    int64
	base                             int64 // NumBlocks − 1 − unlinks

	mutations uint64 // mustCheck calls, for sampling checks of large pools
}

// MaxBlocks is the largest pool New makes. New allocates every block's state
// at once (BytesPerBlock each), so the bound is a bound on memory: 2^24 blocks
// are 537 MB of state, and the prefix cache's index (index.go) grows with
// the distinct keys cached to at most 32 bytes a block (16 once it has
// doubled past half the blocks). It is above any real pool: a 0.5B-parameter model with
// 12 KiB of KV per token in blocks of one token on a 192 GB B200 is 15.6M
// blocks; Llama-3-8B in vLLM's default 16-token blocks on an H200 is 67k.
// A larger count comes from a model config far smaller than any real model
// (one layer of hidden size 1, say), which a larger block size serves.
const MaxBlocks = 1 << 24

// BytesPerBlock is the state New allocates per block: a block (16 bytes),
// its links in the free queue (8) and its prefix-cache key (8).
const BytesPerBlock = 32

// New returns a pool of numBlocks blocks of blockSize token slots. Block 0 is
// the null block, so numBlocks−1 blocks can be handed out; vLLM's
// num_gpu_blocks is numBlocks. At the start the free queue holds blocks 1..N−1
// in id order, so the first allocations return the lowest ids, as in vLLM.
func New(numBlocks, blockSize int, opts Options) (*Pool, error) {
	if numBlocks < 1 || numBlocks > MaxBlocks {
		return nil, fmt.Errorf("%w: numBlocks=%d, want 1..%d (block 0 is the null block; the pool keeps %d bytes of state per block, made at once)",
			ErrBadConfig, numBlocks, MaxBlocks, BytesPerBlock)
	}
	if blockSize < 1 || blockSize > math.MaxInt32 {
		return nil, fmt.Errorf("%w: blockSize=%d, want >= 1", ErrBadConfig, blockSize)
	}
	p := &Pool{
		blocks:    make([]block, numBlocks),
		links:     make([]link, numBlocks),
		keys:      make([]BlockHash, numBlocks),
		blockSize: blockSize,
		caching:   !opts.DisablePrefixCaching,
	}
	for id := 1; id < numBlocks; id++ {
		p.pushBack(BlockID(id))
	}
	p.frees, p.base = 0, int64(numBlocks-1) // the initial fill of the queue is not a free
	if invariants.Enabled {
		p.mustCheck()
	}
	return p, nil
}

// NumBlocks is the pool size including the null block (vLLM's num_gpu_blocks).
func (p *Pool) NumBlocks() int { return len(p.blocks) }

// BlockSize is the number of token slots per block.
func (p *Pool) BlockSize() int { return p.blockSize }

// NumFree is the length of the free queue: free blocks plus evictable cached
// blocks (ref 0), as vLLM's get_num_free_blocks.
func (p *Pool) NumFree() int { return p.numFree() }

// numFree is the length of the free queue.
func (p *Pool) numFree() int { return int(p.base + p.frees - p.allocs) }

// NumUsed is the number of held blocks (ref > 0), not counting the null block.
func (p *Pool) NumUsed() int { return len(p.blocks) - 1 - p.numFree() }

// RefCount returns a block's reference count (0 for the null block and for
// ids out of range).
func (p *Pool) RefCount(id BlockID) int {
	if uint(id) >= uint(len(p.blocks)) {
		return 0
	}
	return int(p.blocks[id].ref)
}

// Usage is the KV-cache usage gauge exactly as vLLM v1 computes it
// (BlockPool.get_usage, exported as vllm:kv_cache_usage_perc):
//
//	1 − NumFree / (NumBlocks − 1)
//
// The null block is excluded from the total, and evictable cached blocks count
// as free, so a pool full of idle prefix cache reads 0. A pool with no block
// besides the null block reads 0.
func (p *Pool) Usage() float64 {
	total := len(p.blocks) - 1
	if total == 0 {
		return 0
	}
	return 1 - float64(p.numFree())/float64(total)
}

// check returns the block for id, or an error if id is out of range or the
// null block.
func (p *Pool) check(id BlockID) (*block, error) {
	if id == NullBlock || uint(id) >= uint(len(p.blocks)) {
		return nil, fmt.Errorf("%w: %d (pool has blocks 1..%d)", ErrBadBlock, id, len(p.blocks)-1)
	}
	return &p.blocks[id], nil
}

// Allocate pops n blocks from the head of the free queue, appends their ids to
// dst and returns the extended slice; each new block has ref 1 and fill 0. A
// popped block that still carries a prefix-cache hash loses it: that is the
// LRU eviction (vLLM's _maybe_evict_cached_block). If fewer than n blocks are
// free it returns dst unchanged and ErrOutOfBlocks. Give dst enough capacity
// and Allocate does not allocate.
func (p *Pool) Allocate(dst []BlockID, n int) ([]BlockID, error) {
	if n <= 0 {
		if n < 0 {
			return dst, fmt.Errorf("%w: allocate %d blocks", ErrBadCount, n)
		}
		return dst, nil
	}
	if n > p.numFree() {
		return dst, ErrOutOfBlocks
	}
	if n == 1 {
		dst = append(dst, p.takeOne(0))
	} else {
		dst = p.take(dst, n, 0, 0)
	}
	if invariants.Enabled {
		p.mustCheck()
	}
	return dst, nil
}

// AllocateOne is Allocate of one block without a slice: it pops the head of
// the free queue (evicting its prefix-cache key, if any) and returns it with
// ref 1 and fill 0, or NullBlock and ErrOutOfBlocks when no block is free.
// It is the hot path of a scheduler that takes one block at a time (a
// decode step crossing a block boundary); FreeOne is its counterpart.
func (p *Pool) AllocateOne() (BlockID, error) {
	// pop, written out: no call on the way unless the queue is empty (the
	// sentinel links to itself: the null block, never cached, is the head)
	// or the head holds a key to evict.
	links := p.links
	id := links[0].next
	b := &p.blocks[id]
	if b.cached() || id == NullBlock {
		return p.allocateOneSlow()
	}
	next := links[id].next
	links[0].next = next
	links[next].prev = 0
	b.ref, b.fill = 1, 0 // held with nothing written: no slot counter moves
	p.allocs++
	if invariants.Enabled {
		p.mustCheck()
	}
	return id, nil
}

// allocateOneSlow is AllocateOne when the queue is empty or its head is
// cached.
func (p *Pool) allocateOneSlow() (BlockID, error) {
	if p.numFree() == 0 {
		return NullBlock, ErrOutOfBlocks
	}
	id := p.pop()
	if invariants.Enabled {
		p.mustCheck()
	}
	return id, nil
}

// pop takes the head of the free queue, evicts its key if it has one, and
// hands it out with ref 1 and fill 0. The queue must not be empty.
func (p *Pool) pop() BlockID {
	return p.takeOne(0)
}

// take pops the first n blocks of the free queue (0 < n <= NumFree) in queue
// order, evicting the keys of cached ones, and appends them to dst held
// (ref 1) with fill full, except the last, which gets fill last. It walks
// the queue once and splices the run off its head in one step, instead of
// unlinking block by block. The caller adds the fills to the slot counters
// (heldSlots, heldFilled); take counts allocs.
func (p *Pool) take(dst []BlockID, n int, full, last int32) []BlockID {
	at := len(dst)
	dst = slices.Grow(dst, n)[:at+n]
	out := dst[at:]
	blocks, links := p.blocks, p.links
	id := links[0].next
	for i := range out {
		out[i] = id
		id = links[id].next
	}
	for _, id := range out {
		b := &blocks[id]
		if b.cached() {
			p.evict(id)
		}
		b.ref, b.fill = 1, full // its links are stale until it is queued again
	}
	blocks[out[n-1]].fill = last
	links[0].next = id // the sentinel when the queue is now empty
	links[id].prev = 0
	p.allocs += int64(n)
	return dst
}

// takeOne is take of one block, without a slice: it pops the head of the
// free queue, which must not be empty, and returns it held with the given
// fill. The caller adds the fill to the slot counters.
func (p *Pool) takeOne(fill int32) BlockID {
	links := p.links
	id := links[0].next
	next := links[id].next
	links[0].next = next
	links[next].prev = 0
	b := &p.blocks[id]
	if b.cached() {
		p.evict(id)
	}
	b.ref, b.fill = 1, fill
	p.allocs++
	return id
}

// evict drops the key of a cached block just popped from the free queue: the
// LRU eviction.
func (p *Pool) evict(id BlockID) {
	p.evictable--
	p.unhash(id)
	p.evictions++
}

// requeue returns a block whose reference count just reached 0 to the tail of
// the free queue. It keeps its hash and fill: it stays a prefix-cache hit
// until it is popped again.
func (p *Pool) requeue(id BlockID) {
	b := &p.blocks[id]
	p.unhold(b)
	p.pushBack(id)
	if b.cached() {
		p.evictable++
	}
}

// Free drops one reference to each block of ids, a block table in table
// order, and returns the blocks that reach 0 to the tail of the free queue in
// reverse table order: the table's last block is appended first and so is
// evicted first, and its first blocks, the prefix other requests are most
// likely to share, stay cached longest (vLLM's KVCacheManager.free passes
// reversed(blocks) to BlockPool.free_blocks). Freed blocks keep their hash and
// fill, so they remain prefix-cache hits until evicted. The null block is
// skipped. Free is all-or-nothing: on an id out of range or a block with no
// reference left (a double free) it changes nothing and returns ErrBadBlock or
// ErrNotAllocated.
func (p *Pool) Free(ids []BlockID) error {
	if len(ids) == 1 {
		return p.FreeOne(ids[0]) // one pass, no undo
	}
	tail0 := p.links[0].prev
	rest := p.freeHeldOnce(ids)
	if rest == 0 {
		return nil
	}
	if rest == len(ids) {
		return p.freeShared(ids)
	}
	// ids[rest:] is queued: the blocks the general path would queue first
	// (last table entry first). Queue what ids[:rest] frees after them,
	// unless that fails: then the general path over the whole table
	// returns its error, having changed nothing.
	if p.freeShared(ids[:rest]) != nil {
		p.unfreeHeldOnce(ids[rest:], tail0)
		return p.freeShared(ids)
	}
	return nil
}

// freeHeldOnce is Free of the longest run at the end of a table whose
// blocks are real blocks held only by it (ref 1), all of the table for
// every request without forks or prefix hits: one pass over ids, last
// entry first, that drops each reference and links the block after the
// previous one, then one splice of the run onto the tail of the free
// queue. It returns the length of the rest, ids[:rest], whose last entry
// is the null block, out of range, or not held exactly once (a shared
// block, a double free, an id twice in ids); Free frees that rest with
// the general path, freeShared, after the run, as freeShared over the
// whole table would. A run of one block is not freed: the rest is then
// the whole table.
func (p *Pool) freeHeldOnce(ids []BlockID) (rest int) {
	blocks, links := p.blocks, p.links
	tail0 := links[0].prev
	tail := tail0
	var slots int64
	filled, evictable := 0, 0
	for i := len(ids) - 1; i >= 0; i-- {
		id := ids[i]
		if uint(id)-1 >= uint(len(blocks))-1 || blocks[id].ref != 1 { // not 0 < id < len, or shared or free
			if i >= len(ids)-2 {
				p.undoHeldOnce(ids[i+1:], tail0)
				return len(ids)
			}
			ids, rest = ids[i+1:], i+1
			break
		}
		b := &blocks[id]
		b.ref = 0
		links[id].prev = tail
		links[tail].next = id // the sentinel's next when the queue was empty
		tail = id
		slots += int64(b.fill)
		if b.fill != 0 {
			filled++
		}
		if b.cached() {
			evictable++
		}
	}
	links[tail].next = 0
	links[0].prev = tail
	n := len(ids) // the run
	p.heldSlots -= slots
	p.heldFilled -= filled
	p.evictable += evictable
	p.frees += int64(n)
	if invariants.Enabled && rest == 0 {
		p.mustCheck()
	}
	return rest
}

// unfreeHeldOnce undoes freeHeldOnce's run, run, queued after tail0: its
// blocks are held once again, with their fills, and the queue ends at
// tail0 again.
func (p *Pool) unfreeHeldOnce(run []BlockID, tail0 BlockID) {
	for _, id := range run {
		b := &p.blocks[id]
		b.ref = 1
		p.hold(b)
		if b.cached() {
			p.evictable--
		}
	}
	p.links[tail0].next = 0
	p.links[0].prev = tail0
	p.frees -= int64(len(run))
}

// undoHeldOnce undoes freeHeldOnce's pass over done (the ids it queued, in
// table order): they are held once again and the queue ends at tail0 again.
func (p *Pool) undoHeldOnce(done []BlockID, tail0 BlockID) {
	for _, id := range done {
		p.blocks[id].ref = 1
	}
	p.links[tail0].next = 0
	p.links[0].prev = tail0
}

// freeShared is Free of any table: blocks held by other tables too, the
// null block, and the errors, all-or-nothing.
func (p *Pool) freeShared(ids []BlockID) error {
	// Pass 1: drop the references, undoing them if an id is bad. Dropping
	// all of them before queueing any is what vLLM does, and it makes an id
	// that appears twice in ids safe.
	blocks := p.blocks
	for i, id := range ids {
		if id == NullBlock {
			continue
		}
		if uint(id) >= uint(len(blocks)) || blocks[id].ref == 0 {
			return p.undoFree(ids, i)
		}
		blocks[id].ref--
	}
	// Pass 2: queue the blocks that reached 0, last table entry first
	// (requeue and pushBack, unrolled for the hot path). A block queued
	// here is marked with ref −1 until pass 3, so that a later entry of
	// the same id (a block the table holds twice) is not queued again.
	queued := 0
	for i := len(ids) - 1; i >= 0; i-- {
		id := ids[i]
		b := &blocks[id]
		if id == NullBlock || b.ref != 0 {
			continue
		}
		b.ref = -1
		p.heldSlots -= int64(b.fill)
		if b.fill != 0 {
			p.heldFilled--
		}
		if b.cached() {
			p.evictable++
		}
		tail := p.links[0].prev
		p.links[id] = link{tail, 0}
		p.links[tail].next = id
		p.links[0].prev = id
		queued++
	}
	// Pass 3: the queued blocks' ref back to 0.
	if queued != 0 {
		for _, id := range ids {
			if blocks[id].ref < 0 {
				blocks[id].ref = 0
			}
		}
	}
	p.frees += int64(queued)
	if invariants.Enabled {
		p.mustCheck()
	}
	return nil
}

// FreeOne is Free of a block table of one block, without a slice: it drops
// one reference to id and returns the block to the tail of the free queue if
// that was the last. It returns the errors Free returns (ErrBadBlock,
// ErrNotAllocated) and then changes nothing; NullBlock is skipped. The
// common case, the last reference, makes no call.
func (p *Pool) FreeOne(id BlockID) error {
	blocks, i := p.blocks, int(id)
	if uint(i) >= uint(len(blocks)) || i == 0 || blocks[i].ref != 1 {
		return p.freeOneSlow(id) // out of range, the null block, or not the last reference
	}
	// release, written out: no call on the way.
	b := &blocks[i]
	b.ref = 0
	if f := b.fill; f != 0 {
		p.heldSlots -= int64(f)
		p.heldFilled--
	}
	if b.cached() {
		p.evictable++
	}
	links := p.links[:len(blocks)] // one length: i is in range for both
	tail := links[0].prev
	lt := &links[tail]
	links[i] = link{tail, lt.next} // lt.next is 0, the sentinel: a copy from a register costs fewer instructions than the constant
	lt.next = id                   // the sentinel's next when the queue was empty
	links[0].prev = id
	p.frees++
	if invariants.Enabled {
		p.mustCheck()
	}
	return nil
}

// freeOneSlow is FreeOne of the null block, a bad id, or a block with more
// than one reference (FreeOne itself drops the last one).
func (p *Pool) freeOneSlow(id BlockID) error {
	if id == NullBlock {
		return nil
	}
	if uint(id) >= uint(len(p.blocks)) || p.blocks[id].ref == 0 {
		return p.badFree(id)
	}
	p.blocks[id].ref--
	if invariants.Enabled {
		p.mustCheck()
	}
	return nil
}

// undoFree restores the references Free dropped from ids[:i] and returns the
// error for ids[i].
func (p *Pool) undoFree(ids []BlockID, i int) error {
	for _, id := range ids[:i] {
		if id != NullBlock {
			p.blocks[id].ref++
		}
	}
	return p.badFree(ids[i])
}

// badFree is the error for freeing id, out of range or with no reference.
func (p *Pool) badFree(id BlockID) error {
	if uint(id) >= uint(len(p.blocks)) {
		return fmt.Errorf("%w: free %d (pool has blocks 1..%d)", ErrBadBlock, id, len(p.blocks)-1)
	}
	return fmt.Errorf("%w: free of block %d with no reference (double free?)", ErrNotAllocated, id)
}

// Touch adds one reference to each block of ids, taking a block with ref 0 (a
// cached prefix block waiting in the free queue) out of the queue, so it can
// no longer be evicted: vLLM's BlockPool.touch, applied to the blocks of a
// prefix hit before new blocks are allocated. A block with ref 0 must be
// cached; touching a plain free block is ErrNotAllocated (use Allocate). The
// null block is skipped. Touch is all-or-nothing.
func (p *Pool) Touch(ids []BlockID) error {
	for _, id := range ids {
		if id == NullBlock {
			continue
		}
		b, err := p.check(id)
		if err != nil {
			return err
		}
		if b.ref == 0 && !b.cached() {
			return fmt.Errorf("%w: touch of free block %d, which holds no cached prefix", ErrNotAllocated, id)
		}
	}
	for _, id := range ids {
		if id != NullBlock {
			p.touch(id)
		}
	}
	if invariants.Enabled {
		p.mustCheck()
	}
	return nil
}

// touch adds a reference to a held or cached block.
func (p *Pool) touch(id BlockID) {
	b := &p.blocks[id]
	if b.ref == 0 {
		p.unlink(id)
		if b.cached() {
			p.evictable--
		}
		p.hold(b)
	}
	b.ref++
}

// Share adds one reference to each held block of ids: a forked sequence
// (parallel sampling, beam search) that starts with the same block table. It
// is Touch restricted to blocks that are held, so a stale table cannot revive
// a freed block. The null block is skipped. Share is all-or-nothing.
func (p *Pool) Share(ids []BlockID) error {
	for _, id := range ids {
		if id == NullBlock {
			continue
		}
		b, err := p.check(id)
		if err != nil {
			return err
		}
		if b.ref == 0 {
			return fmt.Errorf("%w: share of block %d", ErrNotAllocated, id)
		}
	}
	for _, id := range ids {
		if id != NullBlock {
			p.blocks[id].ref++
		}
	}
	if invariants.Enabled {
		p.mustCheck()
	}
	return nil
}

// CopyOnWrite prepares a held block for writing by one of its holders. If the
// caller is the only holder and the block is not in the prefix cache, it may
// write in place: CopyOnWrite returns (id, false, nil). Otherwise the block is
// shared (a fork's prompt block) or cached (full blocks are immutable, other
// requests may hit them): a new block is allocated with the same fill, the
// caller's reference moves to it, and CopyOnWrite returns (newID, true, nil);
// the caller must copy the KV content and replace id by newID in its table.
// This is vLLM v0's copy-on-write for parallel sampling and beam search
// (v1 dropped it, research note §1 "CoW fork"). It returns ErrOutOfBlocks when
// a copy is needed and no block is free.
func (p *Pool) CopyOnWrite(id BlockID) (BlockID, bool, error) {
	b, err := p.check(id)
	if err != nil {
		return id, false, err
	}
	if b.ref == 0 {
		return id, false, fmt.Errorf("%w: write into block %d", ErrNotAllocated, id)
	}
	if b.ref == 1 && !b.cached() {
		return id, false, nil
	}
	if p.numFree() == 0 {
		return id, false, ErrOutOfBlocks
	}
	nid := p.pop()
	p.setFill(&p.blocks[nid], b.fill)
	p.copies++
	if b.ref--; b.ref == 0 { // the sole holder of a cached block
		p.requeue(id)
	}
	if invariants.Enabled {
		p.mustCheck()
	}
	return nid, true, nil
}

// SetFill records that the first n token slots of a held block are written.
// The pool does not need it to hand out blocks; it feeds the slot breakdown in
// Stats (token states, reserved, internal waste). Sequence calls it as tokens
// are appended. All holders of a shared block see the same fill: they share
// its content.
func (p *Pool) SetFill(id BlockID, n int) error {
	b, err := p.check(id)
	if err != nil {
		return err
	}
	if b.ref == 0 {
		return fmt.Errorf("%w: set fill of block %d", ErrNotAllocated, id)
	}
	if n < 0 || n > p.blockSize {
		return fmt.Errorf("%w: fill %d for block %d, want 0..%d", ErrBadCount, n, id, p.blockSize)
	}
	p.setFill(b, int32(n))
	if invariants.Enabled {
		p.mustCheck()
	}
	return nil
}

// Fill returns the number of token slots written in a block (0 for ids out of
// range). A freed cached block keeps its fill until it is reused.
func (p *Pool) Fill(id BlockID) int {
	if uint(id) >= uint(len(p.blocks)) {
		return 0
	}
	return int(p.blocks[id].fill)
}

// setFill changes a held block's fill and the held-slot counters.
func (p *Pool) setFill(b *block, n int32) {
	p.unhold(b)
	b.fill = n
	p.hold(b)
}

// hold adds a block that becomes held (ref 0 → 1) to the slot counters.
func (p *Pool) hold(b *block) {
	p.heldSlots += int64(b.fill)
	if b.fill != 0 {
		p.heldFilled++
	}
}

// unhold removes a block that stops being held (ref 1 → 0) from the slot
// counters.
func (p *Pool) unhold(b *block) {
	p.heldSlots -= int64(b.fill)
	if b.fill != 0 {
		p.heldFilled--
	}
}
