// Sequence: one request's block table over a Pool.
// See doc.go for the overview.

package blockpool

import (
	"fmt"
	"slices"

	"github.com/gpufrag/gpufrag/internal/invariants"
)

// Sequence is one request's (or one sample's, or one beam's) block table and
// token count over a Pool: vLLM's req_to_blocks entry, plus the fork and
// copy-on-write that parallel sampling and beam search need. Its table is
// append-only: a block id, once in the table, stays at its position until
// Release, except that copy-on-write replaces the last block. Make one with
// NewSequence; the zero value has no pool.
//
// Invariants:
//
//	len(Blocks()) == ceil(Tokens() / BlockSize)
//	block i has fill min(BlockSize, Tokens() − i·BlockSize)
//	the sequence holds one reference to each of its blocks
type Sequence struct {
	pool      *Pool
	blocks    []BlockID // the block table
	tokens    int       // tokens held; grows on Append, 0 after Release
	numCached int       // leading full blocks already in the prefix cache
}

// NewSequence returns an empty sequence over p.
func NewSequence(p *Pool) *Sequence { return &Sequence{pool: p} }

// Blocks returns the block table. The slice is the sequence's own: do not
// modify it, and do not keep it past the next call that changes the sequence.
func (s *Sequence) Blocks() []BlockID { return s.blocks }

// Tokens is the number of tokens the sequence holds.
func (s *Sequence) Tokens() int { return s.tokens }

// FullBlocks is the number of full blocks, the ones that can be cached.
func (s *Sequence) FullBlocks() int { return s.tokens / s.pool.blockSize }

// Waste is the internal fragmentation of the sequence: the empty slots of its
// last, partly filled block (0 when the last block is full).
func (s *Sequence) Waste() int { return len(s.blocks)*s.pool.blockSize - s.tokens }

// Append adds n tokens, allocating a block each time the count crosses a
// block boundary (vLLM allocates on demand, one block at a time, so a sequence
// wastes less than one block). If the last block is partly filled and shared
// with a fork, or cached, the sequence first takes a private copy of it
// (CopyOnWrite), since it is about to write into it. Append is all-or-nothing:
// if the pool cannot supply the copy and the new blocks, it returns
// ErrOutOfBlocks and changes nothing (a scheduler then preempts someone).
func (s *Sequence) Append(n int) error {
	if n <= 0 {
		if n < 0 {
			return fmt.Errorf("%w: append %d tokens", ErrBadCount, n)
		}
		return nil
	}
	p := s.pool
	bs := p.blockSize
	total := s.tokens + n
	if r := s.tokens % bs; r != 0 {
		b := &p.blocks[s.blocks[len(s.blocks)-1]]
		if b.ref != 1 || b.cached() {
			// Shared with a fork or cached: copy it before writing.
			return s.appendCopy(n)
		}
		if r+n <= bs {
			// Within the last block (a decode step's token, mostly): no
			// new block, so only its fill changes.
			p.heldSlots += int64(n) // setFill from a fill > 0
			b.fill += int32(n)
			s.tokens = total
			if invariants.Enabled {
				p.mustCheck()
				s.mustCheck()
			}
			return nil
		}
		need := (total+bs-1)/bs - len(s.blocks)
		if need > p.numFree() {
			return ErrOutOfBlocks
		}
		// Fill the last block, then take the new ones.
		p.heldSlots += int64(bs - r)
		b.fill = int32(bs)
		s.takeBlocks(need, total)
	} else {
		need := (total+bs-1)/bs - len(s.blocks)
		if need > p.numFree() {
			return ErrOutOfBlocks
		}
		s.takeBlocks(need, total)
	}
	s.tokens = total
	if invariants.Enabled {
		p.mustCheck()
		s.mustCheck()
	}
	return nil
}

// takeBlocks appends the need ≥ 1 blocks that take the sequence's full
// blocks to total tokens (the last new block holds the rest) in one call to
// the pool: the same blocks, in the same order, with the same fills, as
// need pops and fills one by one.
func (s *Sequence) takeBlocks(need, total int) {
	p := s.pool
	bs := p.blockSize
	from := len(s.blocks) * bs // the first new block's first token
	// One block is a decode step crossing a block boundary.
	if need == 1 {
		s.blocks = append(s.blocks, p.takeOne(int32(total-from)))
	} else {
		s.blocks = p.take(s.blocks, need, int32(bs), int32(total-from-(need-1)*bs))
	}
	p.heldSlots += int64(total - from)
	p.heldFilled += need // every new block holds a token at least
}

// appendCopy is Append when the last block is partly filled and shared or
// cached: it takes a private copy of it (CopyOnWrite) and then the new
// blocks, block by block.
func (s *Sequence) appendCopy(n int) error {
	p := s.pool
	bs := p.blockSize
	total := s.tokens + n
	need := (total+bs-1)/bs - len(s.blocks) + 1 // and the copy
	if need > p.numFree() {
		return ErrOutOfBlocks
	}
	last := len(s.blocks) - 1
	nid, _, err := p.CopyOnWrite(s.blocks[last])
	if err != nil {
		panic(fmt.Errorf("blockpool: copy-on-write after the free check: %w", err))
	}
	s.blocks[last] = nid
	need--
	if need > 1 {
		s.blocks = slices.Grow(s.blocks, need) // a prompt's blocks: one growth, not one per doubling
	}
	for range need {
		s.blocks = append(s.blocks, p.pop())
	}
	s.tokens = total
	for i := last; i < len(s.blocks); i++ {
		p.setFill(&p.blocks[s.blocks[i]], int32(min(bs, total-i*bs)))
	}
	if invariants.Enabled {
		p.mustCheck()
		s.mustCheck()
	}
	return nil
}

// MatchPrefix starts an empty sequence from the prefix cache: it takes the
// cached blocks of the longest prefix of hashes (the sequence's key chain, see
// HashChain) with Touch, so they leave the free queue and cannot be evicted,
// and sets the token count to the blocks found times BlockSize. It returns the
// number of blocks found. Append the rest of the prompt afterwards. Pass only
// the keys the engine may reuse: vLLM leaves out the block holding the last
// prompt token, which must be computed.
func (s *Sequence) MatchPrefix(hashes []BlockHash) (int, error) {
	return s.MatchPrefixHint(hashes, nil)
}

// MatchPrefixHint is MatchPrefix with the lookup's hints
// (Pool.LongestPrefixHint): the same blocks and counters, fewer lookups
// when hint[i] is the block that still holds hashes[i].
func (s *Sequence) MatchPrefixHint(hashes []BlockHash, hint []BlockID) (int, error) {
	if s.tokens != 0 {
		return 0, fmt.Errorf("%w: match a prefix on a sequence of %d tokens", ErrNotEmpty, s.tokens)
	}
	p := s.pool
	if !p.caching {
		hashes = nil
	}
	// LongestPrefixHint, Touch and SetFill of each block found, in one pass
	// (touching a block changes no lookup), with the prompt's blocks room.
	p.queries += int64(len(hashes))
	s.blocks = slices.Grow(s.blocks[:0], len(hashes)+1)
	bs := int32(p.blockSize)
	for i, h := range hashes {
		id, ok := p.hinted(h, hint, i)
		if !ok {
			if id, ok = p.index.get(p.keys, h); !ok {
				break
			}
		}
		p.hits++
		s.blocks = append(s.blocks, id)
		p.touchFull(id, bs)
	}
	k := len(s.blocks)
	s.tokens = k * p.blockSize
	s.numCached = k
	if invariants.Enabled {
		p.mustCheck()
		s.mustCheck()
	}
	return k, nil
}

// MatchAppend starts an empty sequence with a prompt of tokens tokens whose
// full blocks have the keys hashes: MatchPrefixHint(hashes, hint), then
// Append of the tokens the blocks found do not hold. It appends the blocks
// found to found and returns it. It is all-or-nothing: when the rest of the
// prompt does not fit, it returns ErrOutOfBlocks and leaves the sequence
// empty and the pool as MatchPrefixHint, the failed Append and Release
// would have left it: the prefix queries and hits counted, and the blocks
// found that were waiting in the free queue moved to its tail, the table's
// last first (touched and freed: their LRU refresh). That is what an engine
// does on every step while the request at the head of its waiting queue
// does not fit, and MatchAppend does it without holding the blocks found:
// when they already end the free queue in that order (nothing was freed
// since the last try) nothing moves. tokens must be at least
// len(hashes)·BlockSize + 1, as a prompt whose last token is computed is
// (else ErrBadCount, and nothing changes).
func (s *Sequence) MatchAppend(found []BlockID, hashes []BlockHash, hint []BlockID, tokens int) ([]BlockID, error) {
	if s.tokens != 0 {
		return found, fmt.Errorf("%w: match a prefix on a sequence of %d tokens", ErrNotEmpty, s.tokens)
	}
	p := s.pool
	bs := p.blockSize
	if tokens <= len(hashes)*bs {
		return found, fmt.Errorf("%w: a prompt of %d tokens after %d block keys of %d tokens", ErrBadCount, tokens, len(hashes), bs)
	}
	if !p.caching {
		hashes = nil
	}
	// Look the blocks up (LongestPrefixHint) without taking them. The
	// free ones are marked with ref −1 meanwhile, to count each once: a
	// chain's keys are distinct, but a table given here need not be.
	p.queries += int64(len(hashes))
	s.blocks = slices.Grow(s.blocks[:0], len(hashes)+1)
	free, repeat := 0, false
	for i, h := range hashes {
		id, ok := p.hinted(h, hint, i)
		if !ok {
			if id, ok = p.index.get(p.keys, h); !ok {
				break
			}
		}
		s.blocks = append(s.blocks, id)
		switch b := &p.blocks[id]; b.ref {
		case 0:
			b.ref = -1
			free++
		case -1:
			repeat = true
		}
	}
	for _, id := range s.blocks {
		if b := &p.blocks[id]; b.ref < 0 {
			b.ref = 0
		}
	}
	k := len(s.blocks)
	p.hits += int64(k)
	found = append(found, s.blocks...)
	// Touching the blocks found takes the free ones off the queue; the rest
	// of the prompt needs blocks after them.
	if (tokens+bs-1)/bs-k > p.numFree()-free && !repeat {
		p.refresh(s.blocks)
		s.blocks = s.blocks[:0]
		if invariants.Enabled {
			p.mustCheck()
			s.mustCheck()
		}
		return found, ErrOutOfBlocks
	}
	for _, id := range s.blocks {
		p.touchFull(id, int32(bs))
	}
	s.tokens = k * bs
	s.numCached = k
	if err := s.Append(tokens - s.tokens); err != nil { // a table with a repeat that does not fit
		if err := s.Release(); err != nil {
			panic(fmt.Errorf("blockpool: release of a prefix match: %w", err))
		}
		return found, err
	}
	return found, nil
}

// touchFull is Touch and SetFill(BlockSize) of a cached block a prefix
// lookup found: off the free queue if it waits there, one more reference,
// held full.
func (p *Pool) touchFull(id BlockID, bs int32) {
	b := &p.blocks[id]
	if b.ref == 0 {
		p.unlink(id)
		p.evictable-- // it is cached
	} else {
		p.unhold(b)
	}
	b.ref++
	b.fill = bs // a cached block is full
	p.hold(b)
}

// refresh leaves the pool as Touch(ids) and Free(ids) would, for ids the
// distinct cached blocks a prefix lookup found (held or evictable): the
// evictable ones move to the tail of the free queue, the table's last
// first, and each block's fill is BlockSize. The counters move as they
// would (frees, and the unlinks of base), which leaves NumFree as it was.
func (p *Pool) refresh(ids []BlockID) {
	bs := int32(p.blockSize)
	// Do the evictable ones already end the queue, the table's first at
	// the tail?
	links := p.links
	at, free := links[0].prev, 0
	for _, id := range ids {
		b := &p.blocks[id]
		if b.ref != 0 {
			if b.fill != bs { // as Touch and SetFill, then Free, would leave it
				p.unhold(b)
				b.fill = bs
				p.hold(b)
			}
			continue
		}
		b.fill = bs
		free++
		if at == id {
			at = links[id].prev
		} else {
			at = -1 // never a block's link
		}
	}
	if at >= 0 { // in place: no block moves, only the counters
		p.frees += int64(free)
		p.base -= int64(free)
		return
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if id := ids[i]; p.blocks[id].ref == 0 {
			p.unlink(id)
			p.pushBack(id)
		}
	}
}

// Cache registers the sequence's full blocks in the prefix cache under
// hashes[i] (the sequence's key chain), from the first block not yet
// registered up to the last full block that has a key. Blocks that already
// carry a key (prefix hits, blocks shared with a fork that cached them) are
// skipped. It returns the number of blocks newly registered.
func (s *Sequence) Cache(hashes []BlockHash) (int, error) {
	p := s.pool
	if !p.caching {
		return 0, nil
	}
	end := min(len(hashes), s.FullBlocks())
	n := 0
	for ; s.numCached < end; s.numCached++ {
		id := s.blocks[s.numCached]
		if p.blocks[id].cached() {
			continue
		}
		// CacheFullBlock without its checks: the sequence holds the
		// block (a real block, ref ≥ 1), which is not cached.
		p.hash(id, hashes[s.numCached])
		n++
	}
	if invariants.Enabled {
		p.mustCheck()
		s.mustCheck()
	}
	return n, nil
}

// Fork returns a new sequence that shares all of s's blocks (each gains a
// reference): a second sample of the same prompt, or a new beam. The first
// Append to either sequence copies the shared last block if it is partly
// filled; full blocks stay shared for good.
func (s *Sequence) Fork() *Sequence {
	if err := s.pool.Share(s.blocks); err != nil {
		panic(fmt.Errorf("blockpool: fork of a sequence whose blocks are not held: %w", err))
	}
	return &Sequence{
		pool:      s.pool,
		blocks:    append([]BlockID(nil), s.blocks...),
		tokens:    s.tokens,
		numCached: s.numCached,
	}
}

// Release frees the sequence's blocks (Pool.Free: last block first into the
// free queue) and empties it; it can be reused. Its cached blocks stay in the
// prefix cache until evicted.
func (s *Sequence) Release() error {
	if err := s.pool.Free(s.blocks); err != nil {
		return err
	}
	s.blocks = s.blocks[:0]
	s.tokens, s.numCached = 0, 0
	return nil
}

// checkInvariants checks the sequence's own invariants (see Sequence).
func (s *Sequence) checkInvariants() error {
	bs := s.pool.blockSize
	if want := (s.tokens + bs - 1) / bs; len(s.blocks) != want {
		return fmt.Errorf("blockpool: sequence of %d tokens has %d blocks, want %d", s.tokens, len(s.blocks), want)
	}
	for i, id := range s.blocks {
		if uint(id) >= uint(len(s.pool.blocks)) || id == NullBlock {
			return fmt.Errorf("blockpool: sequence block %d is id %d", i, id)
		}
		b := &s.pool.blocks[id]
		if b.ref < 1 {
			return fmt.Errorf("blockpool: sequence block %d (id %d) has ref %d", i, id, b.ref)
		}
		if want := min(bs, s.tokens-i*bs); int(b.fill) != want {
			return fmt.Errorf("blockpool: sequence block %d (id %d) has fill %d, want %d", i, id, b.fill, want)
		}
	}
	return nil
}

func (s *Sequence) mustCheck() {
	if err := s.checkInvariants(); err != nil {
		panic(err)
	}
}
