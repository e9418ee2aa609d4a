// Decode runs: several decode steps' grows in one call.
// See doc.go for the overview.

package strategy

import (
	"fmt"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/kv/blockpool"
)

// DecodeStepper is implemented by strategies that can do several decode
// steps' grows in one call. DecodeSteps grows each of ids by one token per
// step for at most k steps and returns the steps done, done in [0, k]. The
// state afterwards is that of done rounds of Grow(id, 1) over ids in order:
// the same blocks taken from the pool in the same order, the same counters
// (Stats.Grows counts done grows per id). It does only steps in which every
// grow would succeed, and returns 0, changing nothing, when it cannot
// promise that (an unknown id, a sequence of several samples, a shared or
// cached partly filled last block that the next grow would copy).
//
// An engine uses it to run a stretch of steps in which nothing happens but
// one more token per running request.
type DecodeStepper interface {
	DecodeSteps(ids []SeqID, k int) int
}

// DecodeSteps implements DecodeStepper. A sequence holding t tokens takes a
// new block in step j when t+j−1 is a multiple of the block size; the steps
// stop before the first one whose new blocks the free queue cannot supply.
// Blocks are taken step by step in ids order, as the one-token grows would
// take them; the tokens in between only fill blocks already held, which
// touches nothing but the fill counters.
func (p *paged) DecodeSteps(ids []SeqID, k int) int {
	if k <= 0 || p.closed || len(ids) == 0 {
		return 0
	}
	bs := p.bs
	p.dseqs = p.dseqs[:0]
	if cap(p.dcount) < bs {
		p.dcount = make([]int, bs)
	}
	count := p.dcount[:bs]
	clear(count)
	for _, id := range ids {
		ps, ok := p.seqs.get(id)
		if !ok || len(ps.samples) != 1 {
			return 0
		}
		s := ps.samples[0]
		t := s.Tokens()
		if t%bs != 0 {
			last := lastBlock(s)
			if _, cached := p.pool.CachedHash(last); cached || p.pool.RefCount(last) > 1 {
				return 0 // the next grow copies on write
			}
		}
		k = min(k, p.env.MaxContext-t)
		// Its first new block comes in step (bs − t mod bs) mod bs + 1,
		// then every bs steps: class c = that step − 1.
		count[(bs-t%bs)%bs]++
		p.dseqs = append(p.dseqs, s)
	}
	if k <= 0 {
		return 0
	}
	// Cut k before the first step whose new blocks are not free.
	free, taken := p.pool.NumFree(), 0
	for j := 1; j <= k; j++ {
		c := count[(j-1)%bs]
		if taken+c > free {
			k = j - 1
			break
		}
		taken += c
	}
	if k == 0 {
		return 0
	}
	// Order the sequences by class, ids order within a class (a counting
	// sort), then take the blocks step by step.
	if cap(p.dstart) < bs+1 {
		p.dstart = make([]int, bs+1)
	}
	start := p.dstart[:bs+1]
	start[0] = 0
	for c := range bs {
		start[c+1] = start[c] + count[c]
	}
	if cap(p.dorder) < len(ids) {
		p.dorder = make([]int32, len(ids))
	}
	order := p.dorder[:len(ids)]
	pos := count // reuse: next free position per class
	copy(pos, start[:bs])
	for i, s := range p.dseqs {
		c := (bs - s.Tokens()%bs) % bs
		order[pos[c]] = int32(i)
		pos[c]++
	}
	if cap(p.ddone) < len(ids) {
		p.ddone = make([]int, len(ids))
	}
	done := p.ddone[:len(ids)]
	clear(done)
	free0 := p.pool.NumFree()
	for j := 1; j <= k; j++ {
		c := (j - 1) % bs
		for _, i := range order[start[c]:start[c+1]] {
			// Fill up to the end of its last block and take the next one.
			if err := p.dseqs[i].Append(j - done[i]); err != nil {
				panic(fmt.Errorf("strategy: paged decode step %d after counting the free blocks: %w", j, err))
			}
			done[i] = j
		}
	}
	for i, s := range p.dseqs {
		if err := s.Append(k - done[i]); err != nil {
			panic(fmt.Errorf("strategy: paged decode run within held blocks: %w", err))
		}
	}
	if invariants.Enabled && free0-p.pool.NumFree() != taken {
		panic(fmt.Errorf("strategy: paged decode run counted %d blocks, took %d", taken, free0-p.pool.NumFree()))
	}
	p.st.Tokens += int64(len(ids)) * int64(k)
	p.st.Grows += int64(len(ids)) * int64(k)
	return k
}

var _ DecodeStepper = (*paged)(nil)

// decodeScratch is DecodeSteps' reusable scratch space.
type decodeScratch struct {
	dseqs  []*blockpool.Sequence
	dcount []int
	dstart []int
	dorder []int32
	ddone  []int
}
