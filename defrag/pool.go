// Paged KV pools: shrink by moving the highest blocks down (vllm-gaudi), and
// page-aware packing for VMM-backed pools.
// See doc.go for the overview.

package defrag

import (
	"fmt"
	"slices"

	"github.com/gpufrag/gpufrag/kv/blockpool"
)

// BlockMove copies the content of KV block From into the free block To and
// frees From; every block table entry that held From must then hold To.
type BlockMove struct {
	From, To int
}

// PoolOptions tune the pool planners.
type PoolOptions struct {
	// Reserved is the number of lowest block ids that never move and are
	// never targets: 1 for a vLLM-style pool, whose block 0 is the null block.
	Reserved int
	// MaxMoves caps the moves of one pass (0: no cap). The vllm-gaudi
	// defragmenter does at most 512 swaps per pass, padded to power-of-two
	// buckets so its graphs stay static.
	MaxMoves int
	// Threshold is the vllm-gaudi trigger (VLLM_DEFRAG_THRESHOLD, 32 there):
	// PlanPool acts only when highest used id − Threshold > used blocks.
	// 0 always acts.
	Threshold int
}

// PoolPlan is a plan for a paged pool.
type PoolPlan struct {
	Moves []BlockMove
	// LowerBound is the number of moves any plan reaching the same result
	// (the same high-water mark, or the same number of freed pages) must make.
	LowerBound int
	Used       int // blocks in use (Reserved ones excluded)
	// HighBefore and HighAfter are one past the highest id in use, before and
	// after: the pool can shrink to HighAfter blocks.
	HighBefore, HighAfter int
	// FreedPages is, for PlanPoolPages, the pages that hold no block in use
	// after the moves and did before (they can be unmapped).
	FreedPages int
	Notes      []string
}

// Relocations converts the plan's moves for blockpool.RelocateBlocks, which
// performs them on a vLLM-style pool and rewrites the sequences' block tables.
func (p PoolPlan) Relocations() []blockpool.Relocation {
	out := make([]blockpool.Relocation, len(p.Moves))
	for i, m := range p.Moves {
		out[i] = blockpool.Relocation{From: blockpool.BlockID(m.From), To: blockpool.BlockID(m.To)}
	}
	return out
}

// PlanPool plans the compaction of a paged KV pool as the vllm-gaudi online
// defragmenter does (research/kv-managers.md, "Online defragmenter in
// vllm-gaudi"): pair the highest used ids with the lowest free ids and move
// each down while the free id is below the used one, so that the used blocks
// end up in the lowest ids and the pool can shrink. used[i] says whether block
// i holds data. used is not modified.
//
// Every move is necessary: a block above the final high-water mark must move
// for the pool to shrink to it, and each move takes one such block below it,
// so the plan's move count equals its LowerBound (the number of used blocks at
// or above HighAfter before the plan).
func PlanPool(used []bool, o PoolOptions) PoolPlan {
	var p PoolPlan
	res := min(max(o.Reserved, 0), len(used))
	for i := res; i < len(used); i++ {
		if used[i] {
			p.Used++
			p.HighBefore = i + 1
		}
	}
	p.HighBefore = max(p.HighBefore, res)
	p.HighAfter = p.HighBefore
	if o.Threshold > 0 && !(p.HighBefore-1-o.Threshold > p.Used) {
		p.Notes = append(p.Notes, fmt.Sprintf("below the trigger: highest used id %d − threshold %d ≤ %d used blocks",
			p.HighBefore-1, o.Threshold, p.Used))
		return p
	}
	lo, hi := res, p.HighBefore-1
	for {
		for lo < len(used) && used[lo] {
			lo++
		}
		for hi >= res && !used[hi] {
			hi--
		}
		if lo >= hi || (o.MaxMoves > 0 && len(p.Moves) == o.MaxMoves) {
			break
		}
		p.Moves = append(p.Moves, BlockMove{From: hi, To: lo})
		lo++
		hi--
	}
	// After the moves, the highest used id is the highest not moved.
	p.HighAfter = res
	moved := make(map[int]bool, len(p.Moves))
	for _, m := range p.Moves {
		moved[m.From] = true
		p.HighAfter = max(p.HighAfter, m.To+1)
	}
	for i := p.HighBefore - 1; i >= res; i-- {
		if used[i] && !moved[i] {
			p.HighAfter = max(p.HighAfter, i+1)
			break
		}
	}
	for i := p.HighAfter; i < len(used); i++ {
		if used[i] {
			p.LowerBound++
		}
	}
	return p
}

// PlanPoolPages plans page-aware packing for a KV pool backed by VMM pages
// (kvcached, vAttention): blocksPerPage consecutive block ids share one
// physical page, which can be unmapped only when none of its blocks is in
// use. It keeps the fullest pages, fills their free blocks (lowest ids first)
// with the blocks of the emptiest pages, and so frees the most pages with the
// fewest moves. Pages holding a Reserved block are always kept.
//
// Lower bound: a plan that frees F pages that were in use must move every
// block of them, so it moves at least the sum of the F smallest page counts;
// the planner evacuates exactly the F emptiest pages, so it meets the bound
// (LowerBound is that sum, computed independently).
func PlanPoolPages(used []bool, blocksPerPage int, o PoolOptions) PoolPlan {
	var p PoolPlan
	if blocksPerPage <= 0 {
		blocksPerPage = 1
	}
	res := min(max(o.Reserved, 0), len(used))
	npages := (len(used) + blocksPerPage - 1) / blocksPerPage
	type page struct {
		id, used, slots int
		pinned          bool
	}
	pages := make([]page, npages)
	for i := range pages {
		pages[i].id = i
		pages[i].slots = min(blocksPerPage, len(used)-i*blocksPerPage)
	}
	for i, u := range used {
		pg := &pages[i/blocksPerPage]
		if i < res {
			pg.pinned = true
			pg.slots--
			continue
		}
		if u {
			pg.used++
			p.Used++
			p.HighBefore = i + 1
		}
	}
	// Keep pinned pages, then the fullest, until the kept pages have room
	// for every block in use.
	order := slices.Clone(pages)
	slices.SortFunc(order, func(a, b page) int {
		switch {
		case a.pinned != b.pinned:
			if a.pinned {
				return -1
			}
			return 1
		case a.used != b.used:
			return b.used - a.used
		}
		return a.id - b.id
	})
	keep := make([]bool, npages)
	room := 0
	var evac []page
	for _, pg := range order {
		if pg.pinned || room < p.Used {
			keep[pg.id] = true
			room += pg.slots
			continue
		}
		if pg.used > 0 {
			evac = append(evac, pg)
		}
	}
	// Evacuate the emptiest first, so a move cap keeps the cheapest pages.
	slices.SortFunc(evac, func(a, b page) int {
		if a.used != b.used {
			return a.used - b.used
		}
		return b.id - a.id
	})
	dst := res
	nextFree := func() int {
		for dst < len(used) && (!keep[dst/blocksPerPage] || used[dst]) {
			dst++
		}
		d := dst
		dst++
		return d
	}
	for _, pg := range evac {
		if o.MaxMoves > 0 && len(p.Moves)+pg.used > o.MaxMoves {
			break
		}
		for i := pg.id * blocksPerPage; i < pg.id*blocksPerPage+blocksPerPage && i < len(used); i++ {
			if used[i] && i >= res {
				p.Moves = append(p.Moves, BlockMove{From: i, To: nextFree()})
			}
		}
		p.FreedPages++
	}
	// The bound: the FreedPages smallest counts among pages in use that
	// hold no reserved block.
	var counts []int
	for _, pg := range pages {
		if !pg.pinned && pg.used > 0 {
			counts = append(counts, pg.used)
		}
	}
	slices.Sort(counts)
	for _, c := range counts[:p.FreedPages] {
		p.LowerBound += c
	}
	p.HighAfter = res
	after := slices.Clone(used)
	for _, m := range p.Moves {
		after[m.From], after[m.To] = false, true
	}
	for i := len(after) - 1; i >= res; i-- {
		if after[i] {
			p.HighAfter = i + 1
			break
		}
	}
	return p
}
