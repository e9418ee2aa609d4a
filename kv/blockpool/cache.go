// Prefix cache: the hash chain over full blocks and the hash-to-block index.
// See doc.go for the overview.

package blockpool

import (
	"fmt"

	"github.com/gpufrag/gpufrag/internal/invariants"
)

// BlockHash is the prefix-cache key of a full block. The pool treats it as an
// opaque 64-bit key: HashBlock computes one, but an engine may supply its own
// (for instance the first 8 bytes of a SHA-256, or the hash_ids of a Mooncake
// trace).
type BlockHash uint64

// NoParent is the parent hash of a sequence's first block.
const NoParent BlockHash = 0

// FNV-1a 64-bit parameters (FNV's published offset basis and prime).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// HashBlock returns the prefix-cache key of one full block: the 64-bit FNV-1a
// hash of the byte string
//
//	parent (8 bytes, little-endian) ‖ extra (8 bytes, little-endian) ‖
//	each token (4 bytes, little-endian, in order)
//
// so a block's key depends on every token before it through parent, as in
// vLLM's hash_block_tokens (parent hash, block tokens, extra keys). Pass
// NoParent for a sequence's first block. extra separates caches that must not
// share blocks even for equal tokens: fold the LoRA adapter id, multimodal
// input hashes or a cache salt into it.
//
// HashBlock is deterministic across runs and platforms (the same bytes as
// hash/fnv.New64a over that string). It is not collision resistant against an
// adversary, which is why vLLM offers SHA-256 (research note §1): an engine
// serving mutually untrusted tenants should supply its own keys.
//
// Collisions: the pool stores no tokens, so a lookup trusts the key, as vLLM
// does. Two different prefixes with the same key would share KV, a wrong
// answer rather than a crash; for n distinct cached blocks the chance of any
// collision among random 64-bit keys is about n²/2⁶⁵ (3·10⁻⁸ for a million).
func HashBlock(parent BlockHash, tokens []int32, extra uint64) BlockHash {
	h := uint64(fnvOffset64)
	for i := 0; i < 8; i++ {
		h = (h ^ uint64(byte(parent>>(8*i)))) * fnvPrime64
	}
	for i := 0; i < 8; i++ {
		h = (h ^ uint64(byte(extra>>(8*i)))) * fnvPrime64
	}
	for _, t := range tokens {
		u := uint32(t)
		h = (h ^ uint64(byte(u))) * fnvPrime64
		h = (h ^ uint64(byte(u>>8))) * fnvPrime64
		h = (h ^ uint64(byte(u>>16))) * fnvPrime64
		h = (h ^ uint64(byte(u>>24))) * fnvPrime64
	}
	return BlockHash(h)
}

// HashChain appends to dst the keys of the full blocks of tokens, chained from
// parent (NoParent for a whole sequence), and returns the extended slice: key i
// covers tokens[i*blockSize : (i+1)*blockSize] and has key i−1 as parent. A
// trailing partial block gets no key: only full blocks are cached.
func HashChain(dst []BlockHash, parent BlockHash, tokens []int32, blockSize int, extra uint64) []BlockHash {
	if blockSize < 1 {
		return dst
	}
	for len(tokens) >= blockSize {
		parent = HashBlock(parent, tokens[:blockSize], extra)
		dst = append(dst, parent)
		tokens = tokens[blockSize:]
	}
	return dst
}

// CacheFullBlock registers a held, full block under its key, so later requests
// with the same prefix can hit it (vLLM's cache_full_blocks). Call it once the
// block's last slot is written; the content must not change afterwards
// (CopyOnWrite copies a cached block). Several blocks may carry the same key
// (two requests that computed the same prefix at once): vLLM keeps all of
// them, because a block table never changes an id once written, and so does
// the pool; a lookup returns the oldest. With prefix caching disabled it does
// nothing.
func (p *Pool) CacheFullBlock(id BlockID, hash BlockHash) error {
	if !p.caching {
		return nil
	}
	b, err := p.check(id)
	if err != nil {
		return err
	}
	if b.ref == 0 {
		return fmt.Errorf("%w: cache block %d", ErrNotAllocated, id)
	}
	if b.cached() {
		return fmt.Errorf("%w: block %d has key %#x", ErrAlreadyCached, id, uint64(p.keys[id]))
	}
	p.hash(id, hash)
	if invariants.Enabled {
		p.mustCheck()
	}
	return nil
}

// hash registers block id under key at the tail of the key's chain (a new
// chain, headed by id, when the key is new).
func (p *Pool) hash(id BlockID, key BlockHash) {
	b := &p.blocks[id]
	p.keys[id] = key                            // and hnext below, which says the block is cached
	if i, ok := p.index.find(p.keys, key); ok { // insert at the tail of the chain
		head := p.index.slots[i].id
		h := &p.blocks[head]
		tail := h.hprev
		b.hprev, b.hnext = tail, head
		p.blocks[tail].hnext = id
		h.hprev = id
	} else {
		b.hprev, b.hnext = id, id
		p.index.insertAt(i, key, id)
	}
	p.numCached++
}

// unhash removes a block from the prefix cache. A block that is not its
// chain's head leaves the index alone: chains are short, and the head is
// the oldest registration, which most evictions (LRU) reach first.
func (p *Pool) unhash(id BlockID) {
	b := &p.blocks[id]
	key := p.keys[id]
	switch {
	case b.hnext == id:
		i, _ := p.index.find(p.keys, key)
		p.index.removeAt(i)
	default:
		if i, _ := p.index.find(p.keys, key); p.index.slots[i].id == id {
			p.index.slots[i].id = b.hnext
		}
		p.blocks[b.hprev].hnext = b.hnext
		p.blocks[b.hnext].hprev = b.hprev
	}
	b.hprev, b.hnext = 0, 0 // not cached
	p.keys[id] = 0
	p.numCached--
}

// Lookup returns the block cached under hash, if any, without changing
// anything (vLLM's get_cached_block). The block may be held or evictable.
func (p *Pool) Lookup(hash BlockHash) (BlockID, bool) {
	if !p.caching {
		return NullBlock, false
	}
	return p.index.get(p.keys, hash)
}

// CachedHash returns a block's key and whether it is in the prefix cache.
func (p *Pool) CachedHash(id BlockID) (BlockHash, bool) {
	if uint(id) >= uint(len(p.blocks)) || !p.blocks[id].cached() {
		return 0, false
	}
	return p.keys[id], true
}

// NumCached is the number of blocks in the prefix cache, held or evictable.
func (p *Pool) NumCached() int { return p.numCached }

// LongestPrefix appends to dst the cached blocks for the longest prefix of
// hashes, a sequence's key chain, stopping at the first miss, and returns the
// extended slice (vLLM's find_longest_cache_hit). It does not take the blocks:
// Touch them once the request is admitted, before allocating its other blocks,
// so that allocation cannot evict them. It counts len(hashes) prefix queries
// and one hit per block found (vLLM counts the same in tokens). The caller
// decides how much of a prompt to look up; vLLM leaves the last prompt token
// out, so that a fully cached prompt still computes one token.
func (p *Pool) LongestPrefix(dst []BlockID, hashes []BlockHash) []BlockID {
	return p.LongestPrefixHint(dst, hashes, nil)
}

// LongestPrefixHint is LongestPrefix with hints: hint[i], where given, is
// a block that may still hold hashes[i] (the block that held it when the
// caller last saw it). A block that holds it alone in its chain is the one
// the index holds for it, so the lookup is skipped; any other hint is
// looked up as LongestPrefix does. The result and the counters are
// LongestPrefix's, whatever the hints.
func (p *Pool) LongestPrefixHint(dst []BlockID, hashes []BlockHash, hint []BlockID) []BlockID {
	if !p.caching {
		return dst
	}
	p.queries += int64(len(hashes))
	for i, h := range hashes {
		id, ok := p.hinted(h, hint, i)
		if !ok {
			if id, ok = p.index.get(p.keys, h); !ok {
				break
			}
		}
		dst = append(dst, id)
		p.hits++
	}
	return dst
}

// hinted returns hint[i] when it is the block the index holds for h
// without a lookup: it holds h alone in its chain.
func (p *Pool) hinted(h BlockHash, hint []BlockID, i int) (BlockID, bool) {
	if i >= len(hint) {
		return NullBlock, false
	}
	id := hint[i]
	if uint(id) >= uint(len(p.blocks)) || p.keys[id] != h {
		return NullBlock, false
	}
	b := &p.blocks[id]
	return id, b.hnext == id
}

// GetCached looks up one key and, on a hit, takes the block: its reference
// count goes up and, if it was waiting in the free queue, it leaves the queue
// and can no longer be evicted. It counts one prefix query and, on a hit, one
// hit. It is Lookup followed by Touch.
func (p *Pool) GetCached(hash BlockHash) (BlockID, bool) {
	if !p.caching {
		return NullBlock, false
	}
	p.queries++
	id, ok := p.index.get(p.keys, hash)
	if !ok {
		return NullBlock, false
	}
	p.hits++
	p.touch(id)
	if invariants.Enabled {
		p.mustCheck()
	}
	return id, true
}

// ResetPrefixCache drops every key, as vLLM's reset_prefix_cache does after a
// weight update. Like vLLM it refuses, returning false, while any block is
// held, since held blocks may be registered again by their requests.
func (p *Pool) ResetPrefixCache() bool {
	if p.NumUsed() != 0 {
		return false
	}
	for id := range p.blocks {
		b := &p.blocks[id]
		b.hprev, b.hnext = 0, 0
	}
	clear(p.keys)
	p.index.reset()
	p.numCached, p.evictable = 0, 0
	if invariants.Enabled {
		p.mustCheck()
	}
	return true
}
