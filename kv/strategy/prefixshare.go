// What live requests share through the prefix cache, for an engine that
// admits by what the pool really holds (SGLang's PrefillAdder).
// See doc.go for the overview.

package strategy

import (
	"fmt"

	"github.com/gpufrag/gpufrag/kv/blockpool"
)

// PrefixSharing is implemented by strategies whose prefix cache lets live
// requests hold the same blocks (paged). An engine that counts a pool's
// occupancy per request (prompt and output tokens of each) counts a block
// that k requests hold k times; SharedTokens is what to take off, and
// PrefixCached splits what a waiting request would find in the cache into
// what live requests already hold and what it would newly take out of the
// free queue.
//
// SGLang's PrefillAdder (python/sglang/srt/managers/schedule_policy.py)
// counts the same: rem_total_tokens from the pool's available and
// evictable sizes, a running request's shared prefix once (radix-tree
// nodes, locked by every request that matched them), and a new request's
// cost as extend_input_len plus the evictable part of its matched prefix
// that its lock takes (_lock_node, inc_lock_ref).
type PrefixSharing interface {
	// PrefixCached returns how many of r's prompt tokens Admit would find
	// in the prefix cache now (hit), and how many of those lie in blocks
	// no live sequence holds (idle: cached and free, evictable). It
	// changes nothing and counts nothing.
	PrefixCached(r Request) (hit, idle int)
	// SharedTokens is the tokens of blocks that more than one live request
	// holds, each counted once per holder after the first: the sum of the
	// live requests' tokens less SharedTokens counts every held block once.
	SharedTokens() int64
}

// PrefixCached implements PrefixSharing: the match Admit makes (the same
// keys, the same longest prefix, the block of the last prompt token left
// out), looked up without the lookups' counters.
func (p *paged) PrefixCached(r Request) (hit, idle int) {
	if p.pool == nil || p.env.NoPrefixCaching || len(r.PrefixIDs) == 0 || r.PrefixSpan <= 0 || r.Prompt <= 0 {
		return 0, 0
	}
	best, _, common := p.memo.match(r.PrefixIDs, r.PrefixSpan)
	keys, reuse := p.prefixKeys(p.keys[:0], r, best, common)
	if best == nil || reuse < len(keys) {
		p.keys = keys // the scratch buffer, grown (Admit overwrites it)
	}
	use := min(len(keys), (r.Prompt-1)/p.bs)
	for _, k := range keys[:use] {
		id, ok := p.pool.Lookup(k)
		if !ok {
			break
		}
		hit += p.bs
		if p.pool.RefCount(id) == 0 {
			idle += p.bs
		}
	}
	return hit, idle
}

// SharedTokens implements PrefixSharing.
func (p *paged) SharedTokens() int64 { return int64(p.cross) * int64(p.bs) }

// crossAdmitted counts the blocks a new request found in the prefix cache
// that other live requests hold: each has one more holder. The request's
// first sample holds them already (ref ≥ 1); its other samples do not yet.
func (p *paged) crossAdmitted(found []blockpool.BlockID) {
	for _, id := range found {
		if p.pool.RefCount(id) > 1 {
			p.cross++
		}
	}
}

// crossDropped counts the cached blocks of a request about to be released
// that other live requests hold too: each loses a holder. Its n samples
// hold each of its full prompt blocks once (forked, never copied), so a
// block held more than n times has another holder.
func (p *paged) crossDropped(ps *pagedSeq) {
	if ps.cached == 0 || p.pool == nil {
		return
	}
	n := len(ps.samples)
	for _, id := range ps.samples[0].Blocks()[:ps.cached] {
		if p.pool.RefCount(id) > n {
			p.cross--
		}
	}
}

// maxCrossCheck bounds the live requests over which checkCross recounts
// (a map over every held block per admission and release): the tests'
// pools, not a long trace's under -race.
const maxCrossCheck = 64

// mustCheckCross panics when checkCross fails (invariants.Enabled only).
func (p *paged) mustCheckCross() {
	if p.pool == nil || p.seqs.len() > maxCrossCheck {
		return
	}
	if err := p.checkCross(); err != nil {
		panic(err)
	}
}

// crossScratch is checkCross's maps, kept across calls so that a check
// allocates nothing once they have grown.
type crossScratch struct {
	holders map[blockpool.BlockID]int  // requests holding each block
	mine    map[blockpool.BlockID]bool // the blocks of one request
}

// checkCross recounts the blocks live requests share from their block
// tables: Σ over held blocks of (requests holding it − 1) is p.cross.
func (p *paged) checkCross() error {
	sc := &p.crossCheck
	if sc.holders == nil {
		sc.holders, sc.mine = map[blockpool.BlockID]int{}, map[blockpool.BlockID]bool{}
	}
	clear(sc.holders)
	count := func(ps *pagedSeq) {
		clear(sc.mine)
		for _, s := range ps.samples {
			for _, b := range s.Blocks() {
				if !sc.mine[b] {
					sc.mine[b] = true
					sc.holders[b]++
				}
			}
		}
	}
	for _, ps := range p.seqs.dense {
		if ps != nil {
			count(ps)
		}
	}
	for _, ps := range p.seqs.sparse {
		count(ps)
	}
	want := 0
	for _, k := range sc.holders {
		want += k - 1
	}
	if p.cross != want {
		return fmt.Errorf("strategy: paged counts %d blocks shared between live requests, their block tables %d", p.cross, want)
	}
	return nil
}
