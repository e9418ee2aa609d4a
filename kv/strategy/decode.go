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
// the same blocks taken from the pool in the same order, the same
// allocator state and counters (Stats.Grows counts done grows per id). It
// does only steps in which every grow would succeed without moving
// anything (no reallocation, no copy) and after whose grows the
// allocator's MaxAllocatable is still at least keep (the room an engine's
// activation buffers of the step need; only vmm's grows take memory from
// the allocator in a run, the others leave it as it was before the call,
// which the caller checks), and returns 0, changing nothing, when it cannot
// promise one (an unknown id or one given twice, and per strategy below).
// Every strategy implements it:
//
//   - contiguous-max and its variants: a reservation never grows, so the
//     steps up to the smallest room left are free.
//   - contiguous-grow: the steps before the first sequence's next
//     reallocation (that grow, with its copy, is a normal Grow).
//   - paged: the blocks are taken step by step in ids order, as the
//     one-token grows take them; not for a sequence of several samples or
//     a shared or cached partly filled last block (the next grow copies).
//   - vmm: the steps whose pages the device has free, keep bytes aside,
//     each range grown once to its final size (see
//     vmmStrategy.DecodeSteps).
//
// An engine uses it to run a stretch of steps in which nothing happens but
// one more token per running request.
type DecodeStepper interface {
	DecodeSteps(ids []SeqID, k int, keep int64) int
}

// DecodeSteps implements DecodeStepper. Within a sequence's capacity a
// grow changes its token count, the counters and, past the true output the
// engine announced, the part of the reservation it will use: k grows of one
// token add to each what one grow of k adds, so the steps up to the least
// room left over ids are done at once, whatever the sequences' samples.
// contiguous-grow's next grow past the capacity reallocates: the steps stop
// before it.
func (c *contiguous) DecodeSteps(ids []SeqID, k int, keep int64) int {
	if k <= 0 || len(ids) == 0 {
		return 0
	}
	seqs, ok := lookupOnce(&c.dseqs, c.seqs, ids, &c.epoch)
	for _, s := range seqs {
		k = min(k, s.capacity-s.tokens) // capacity ≤ MaxContext
	}
	if !ok || k <= 0 {
		return 0
	}
	for _, s := range seqs {
		n := int64(len(s.blocks))
		c.st.Tokens += n * int64(k)
		s.tokens += k
		if s.tokens > s.final {
			old := s.use()
			s.final = s.tokens
			c.willUse += n * int64(s.use()-old) * c.bpt
		}
	}
	c.st.Grows += int64(len(ids)) * int64(k)
	return k
}

var _ DecodeStepper = (*contiguous)(nil)

// decodeSeq is the per-sequence state of a strategy whose DecodeSteps
// looks its ids up with lookupOnce.
type decodeSeq interface {
	// seen is the DecodeSteps call that looked the sequence up last.
	seen() *uint64
}

func (s *contiguousSeq) seen() *uint64 { return &s.mark }
func (s *vmmSeq) seen() *uint64        { return &s.mark }

// lookupOnce returns the sequences of ids, in *scratch, marking them with
// a new epoch; false when an id is unknown or given twice.
func lookupOnce[T decodeSeq](scratch *[]T, seqs map[SeqID]T, ids []SeqID, epoch *uint64) ([]T, bool) {
	*epoch++
	dst := (*scratch)[:0]
	defer func() { *scratch = dst }()
	for _, id := range ids {
		s, ok := seqs[id]
		if !ok || *s.seen() == *epoch {
			return dst, false
		}
		*s.seen() = *epoch
		dst = append(dst, s)
	}
	return dst, true
}

// DecodeSteps implements DecodeStepper. A range of t tokens maps a page
// when its bytes pass a page boundary; the grows of the first j steps need
// need(j) pages in all, a count that never falls as j grows, and they all
// succeed exactly when need(j) pages are free at the start: Grow checks
// each grow against MaxAllocatable, which the pages mapped before it
// lower by their bytes. So the steps are cut at the last j whose pages
// fit with keep bytes to spare (and at the context and MaxGrowSize), and
// each range is grown once, to its final size: the vmm allocator's state
// after grows to s1 and then s2 is that after one grow to s2 (its counters
// add the pages and bytes, its peaks are maxima of totals that only rise),
// and no other call comes in between.
func (v *vmmStrategy) DecodeSteps(ids []SeqID, k int, keep int64) int {
	if k <= 0 || len(ids) == 0 {
		return 0
	}
	maxTok := v.env.MaxContext
	if g := v.a.MaxGrowSize() / v.bpt; g < int64(maxTok) {
		maxTok = int(g)
	}
	seqs, ok := lookupOnce(&v.dseqs, v.seqs, ids, &v.epoch)
	for _, s := range seqs {
		k = min(k, maxTok-s.tokens)
	}
	if !ok || k <= 0 {
		return 0
	}
	room := v.a.MaxAllocatable() - keep
	if room < 0 {
		return 0
	}
	free := room / v.page
	if v.pagesNeeded(seqs, k) > free {
		lo, hi := 0, k // need(lo) ≤ free < need(hi)
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if v.pagesNeeded(seqs, mid) <= free {
				lo = mid
			} else {
				hi = mid
			}
		}
		if k = lo; k == 0 {
			return 0
		}
	}
	for _, s := range seqs {
		v.growRanges(s, s.tokens+k, "a decode run")
	}
	v.st.Grows += int64(len(ids)) * int64(k)
	return k
}

// pagesNeeded is the pages that j more tokens in every sample of seqs map.
func (v *vmmStrategy) pagesNeeded(seqs []*vmmSeq, j int) int64 {
	var n int64
	for _, s := range seqs {
		n += int64(len(s.blocks)) * (v.pagesFor(s.tokens+j) - v.pagesFor(s.tokens))
	}
	return n
}

var _ DecodeStepper = (*vmmStrategy)(nil)

// DecodeSteps implements DecodeStepper. A sequence holding t tokens takes a
// new block in step j when t+j−1 is a multiple of the block size; the steps
// stop before the first one whose new blocks the free queue cannot supply.
// Blocks are taken step by step in ids order, as the one-token grows would
// take them; the tokens in between only fill blocks already held, which
// touches nothing but the fill counters.
func (p *paged) DecodeSteps(ids []SeqID, k int, keep int64) int {
	if k <= 0 || p.closed || len(ids) == 0 {
		return 0
	}
	bs := p.bs
	p.dseqs, p.dcounted = p.dseqs[:0], p.dcounted[:0]
	if cap(p.dcount) < bs {
		p.dcount = make([]int, bs)
	}
	count := p.dcount[:bs]
	clear(count)
	p.epoch++
	for _, id := range ids {
		ps, ok := p.seqs.get(id)
		if !ok || ps.mark == p.epoch {
			return 0
		}
		ps.mark = p.epoch
		var t int
		if p.counts != nil {
			if ps.n != 1 {
				return 0
			}
			t = ps.tokens
			p.dcounted = append(p.dcounted, ps)
		} else {
			if len(ps.samples) != 1 {
				return 0
			}
			s := ps.samples[0]
			t = s.Tokens()
			if t%bs != 0 {
				last := lastBlock(s)
				if _, cached := p.pool.CachedHash(last); cached || p.pool.RefCount(last) > 1 {
					return 0 // the next grow copies on write
				}
			}
			p.dseqs = append(p.dseqs, s)
		}
		k = min(k, p.env.MaxContext-t)
		// Its first new block comes in step (bs − t mod bs) mod bs + 1,
		// then every bs steps: class c = that step − 1.
		count[(bs-t%bs)%bs]++
	}
	if k <= 0 {
		return 0
	}
	// Order the sequences by class, ids order within a class (a counting
	// sort). start[c] is the first position of class c, and so also the
	// blocks the first c steps of a cycle of bs take: the first j steps
	// take ⌊j/bs⌋×n + start[j mod bs] blocks, every sequence one a cycle.
	if cap(p.dstart) < bs+1 {
		p.dstart = make([]int, bs+1)
	}
	start := p.dstart[:bs+1]
	start[0] = 0
	classes := p.dclass[:0] // the classes with a sequence, in order
	for c := range bs {
		start[c+1] = start[c] + count[c]
		if count[c] > 0 {
			classes = append(classes, c)
		}
	}
	p.dclass = classes
	n := len(ids)
	taken := func(j int) int { return j/bs*n + start[j%bs] }
	// Cut k before the first step whose new blocks are not free.
	if free := p.numFree(); taken(k) > free {
		lo, hi := 0, k // taken(lo) ≤ free < taken(hi)
		for hi-lo > 1 {
			if mid := lo + (hi-lo)/2; taken(mid) <= free {
				lo = mid
			} else {
				hi = mid
			}
		}
		if k = lo; k == 0 {
			return 0
		}
	}
	if p.counts != nil {
		// Counted: the blocks are numbers, the steps' order does not matter.
		c := p.counts
		for _, ps := range p.dcounted {
			ps.tokens += k
			ps.blocks = (ps.tokens + bs - 1) / bs
		}
		c.free -= taken(k)
		c.allocs += int64(taken(k))
		c.heldSlots += int64(n) * int64(k)
		p.st.Tokens += int64(n) * int64(k)
		p.st.Grows += int64(n) * int64(k)
		if invariants.Enabled {
			p.mustCheckCounts()
		}
		return k
	}
	if cap(p.dorder) < n {
		p.dorder = make([]int32, n)
	}
	order := p.dorder[:n]
	pos := count // reuse: next free position per class
	copy(pos, start[:bs])
	for i, s := range p.dseqs {
		c := (bs - s.Tokens()%bs) % bs
		order[pos[c]] = int32(i)
		pos[c]++
	}
	if cap(p.ddone) < n {
		p.ddone = make([]int, n)
	}
	done := p.ddone[:n]
	clear(done)
	free0 := p.pool.NumFree()
	// Take the blocks step by step: the steps of class c are c + 1, c + 1
	// + bs, ...; steps of no class take none.
	for base := 0; base < k; base += bs {
		for _, c := range classes {
			j := base + c + 1
			if j > k {
				break
			}
			for _, i := range order[start[c]:start[c+1]] {
				// Fill up to the end of its last block and take the next one.
				if err := p.dseqs[i].Append(j - done[i]); err != nil {
					panic(fmt.Errorf("strategy: paged decode step %d after counting the free blocks: %w", j, err))
				}
				done[i] = j
			}
		}
	}
	for i, s := range p.dseqs {
		if err := s.Append(k - done[i]); err != nil {
			panic(fmt.Errorf("strategy: paged decode run within held blocks: %w", err))
		}
	}
	if invariants.Enabled && free0-p.pool.NumFree() != taken(k) {
		panic(fmt.Errorf("strategy: paged decode run counted %d blocks, took %d", taken(k), free0-p.pool.NumFree()))
	}
	p.st.Tokens += int64(len(ids)) * int64(k)
	p.st.Grows += int64(len(ids)) * int64(k)
	return k
}

var _ DecodeStepper = (*paged)(nil)

// decodeScratch is DecodeSteps' reusable scratch space.
type decodeScratch struct {
	dseqs    []*blockpool.Sequence
	dcounted []*pagedSeq // counted pools' (blockCounts)
	dcount   []int
	dstart   []int
	dorder   []int32
	dclass   []int
	ddone    []int
	epoch    uint64 // DecodeSteps calls (pagedSeq.mark)
}
