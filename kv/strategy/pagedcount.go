// Paged without block ids: the counts a pool without a prefix cache needs.
// See doc.go for the overview.

package strategy

import (
	"fmt"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/kv/blockpool"
)

// blockCounts is paged's pool when it counts its blocks (Env.CountBlocks
// with prefix caching off): the figures blockpool.Pool.Stats reports of a
// pool none of whose blocks is ever cached, without the blocks. Without a
// prefix cache the free queue's order decides only which ids a sequence
// gets, never whether it gets them, and nothing reads the ids.
//
// A request's samples hold the same tokens t in pagedSeq.blocks = ⌈t/B⌉
// blocks each, of which the first pagedSeq.shared are held by all of them
// at once (the prompt's blocks after Fork, until the first grow copies a
// shared partly filled last block); so the request holds shared + n ×
// (blocks − shared) blocks, and its written slots count a shared block
// once.
//
// Invariants (checkCounts, after every change when invariants.Enabled):
//
//	free + Σ held blocks over live requests == numBlocks − 1
//	heldSlots == Σ written slots over live requests
//	a request's blocks == ⌈tokens/B⌉; 0 ≤ shared ≤ blocks, 0 for one sample
type blockCounts struct {
	numBlocks             int   // including the null block, as blockpool's NumBlocks
	free                  int   // blocks no request holds
	heldSlots             int64 // written slots of held blocks, a shared block once
	allocs, frees, copies int64 // blockpool.Stats' counters
}

// countHeld is the blocks a counted request holds and their written slots.
func (p *paged) countHeld(ps *pagedSeq) (blocks int, slots int64) {
	sharedSlots := min(ps.tokens, ps.shared*p.bs)
	return ps.shared + ps.n*(ps.blocks-ps.shared),
		int64(sharedSlots) + int64(ps.n)*int64(ps.tokens-sharedSlots)
}

// admitCount is Admit of a valid new request r in a counted pool: the
// prompt's blocks, shared by all samples.
func (p *paged) admitCount(id SeqID, r Request) error {
	c := p.counts
	nb := (r.Prompt + p.bs - 1) / p.bs
	if nb > c.free {
		p.st.AdmitFailures++
		return noMemory("admit", id, blockpool.ErrOutOfBlocks)
	}
	c.free -= nb
	c.allocs += int64(nb)
	c.heldSlots += int64(r.Prompt)
	ps := &pagedSeq{tokens: r.Prompt, n: r.N, blocks: nb}
	if r.N > 1 {
		ps.shared = nb
	}
	p.seqs.put(id, ps)
	p.st.Live++
	p.st.Tokens += int64(r.N) * int64(r.Prompt)
	p.st.Admits++
	if invariants.Enabled {
		p.mustCheckCounts()
	}
	return nil
}

// growCount is Grow of k > 0 tokens within the context to every sample of
// a counted request. A partly filled last block that all n > 1 samples
// still share is copied by each sample but the last, which then writes
// into it alone (blockpool.Sequence.Append's copy on write); the blocks
// the copies and the appends need are counted against the free ones first,
// as growSamples does.
func (p *paged) growCount(id SeqID, ps *pagedSeq, k int) error {
	c := p.counts
	room := ps.blocks*p.bs - ps.tokens // in the last block; no division on the way of a grow within it
	cows := 0
	if ps.shared == ps.blocks && room != 0 && ps.n > 1 {
		cows = ps.n - 1
	}
	more := 0 // blocks per sample
	if k > room {
		more = (k - room + p.bs - 1) / p.bs
	}
	need := ps.n*more + cows
	if need > c.free {
		p.st.GrowFailures++
		return noMemory("grow", id, fmt.Errorf("%w: need %d blocks, %d free", blockpool.ErrOutOfBlocks, need, c.free))
	}
	c.free -= need
	c.allocs += int64(need)
	c.copies += int64(cows)
	c.heldSlots += int64(ps.n) * int64(k)
	if cows > 0 {
		r := int64(p.bs - room)        // the last block's written slots
		c.heldSlots += int64(cows) * r // each copy holds them too
		p.st.CopiedBytes += int64(cows) * r * p.bpt
		ps.shared--
	}
	ps.tokens += k
	ps.blocks += more
	p.st.Tokens += int64(ps.n) * int64(k)
	p.st.Grows++
	if invariants.Enabled {
		p.mustCheckCounts()
	}
	return nil
}

// dropCount returns a counted request's blocks; the caller deletes it.
func (p *paged) dropCount(ps *pagedSeq) {
	c := p.counts
	blocks, slots := p.countHeld(ps)
	c.free += blocks
	c.frees += int64(blocks)
	c.heldSlots -= slots
	p.st.Tokens -= int64(ps.n) * int64(ps.tokens)
}

// numFree is the pool's free blocks.
func (p *paged) numFree() int {
	if p.counts != nil {
		return p.counts.free
	}
	return p.pool.NumFree()
}

// poolStats is the pool's Stats, or the same figures of the counts.
func (p *paged) poolStats() blockpool.Stats {
	if p.counts == nil {
		return p.pool.Stats()
	}
	c := p.counts
	bs := int64(p.bs)
	used := c.numBlocks - 1 - c.free
	var usage float64 // blockpool.Pool.Usage
	if total := c.numBlocks - 1; total > 0 {
		usage = 1 - float64(c.free)/float64(total)
	}
	return blockpool.Stats{
		NumBlocks:     c.numBlocks,
		BlockSize:     p.bs,
		Free:          c.free,
		Used:          used,
		Usage:         usage,
		TokenSlots:    c.heldSlots,
		InternalSlots: int64(used)*bs - c.heldSlots,
		FreeSlots:     int64(c.free) * bs,
		Allocs:        c.allocs,
		Frees:         c.frees,
		Copies:        c.copies,
	}
}

// checkCounts recounts the held blocks and slots over the live requests.
func (p *paged) checkCounts() error {
	c := p.counts
	blocks, slots := 0, int64(0)
	add := func(ps *pagedSeq) error {
		if ps.blocks != (ps.tokens+p.bs-1)/p.bs || ps.shared < 0 || ps.shared > ps.blocks || (ps.n == 1 && ps.shared != 0) {
			return fmt.Errorf("strategy: paged counts: a request of %d samples of %d tokens in %d blocks, %d shared",
				ps.n, ps.tokens, ps.blocks, ps.shared)
		}
		b, s := p.countHeld(ps)
		blocks, slots = blocks+b, slots+s
		return nil
	}
	for _, ps := range p.seqs.dense {
		if ps != nil {
			if err := add(ps); err != nil {
				return err
			}
		}
	}
	for _, ps := range p.seqs.sparse {
		if err := add(ps); err != nil {
			return err
		}
	}
	if c.free < 0 || c.free+blocks != c.numBlocks-1 || slots != c.heldSlots {
		return fmt.Errorf("strategy: paged counts: %d free + %d held blocks, want %d; %d held slots, recount %d",
			c.free, blocks, c.numBlocks-1, c.heldSlots, slots)
	}
	return nil
}

func (p *paged) mustCheckCounts() {
	if err := p.checkCounts(); err != nil {
		panic(err)
	}
}
