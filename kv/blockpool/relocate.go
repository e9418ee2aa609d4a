// Relocation: moving a held block's content to a free block, for compaction.
// See doc.go for the overview.

package blockpool

import (
	"errors"
	"fmt"

	"github.com/gpufrag/gpufrag/internal/invariants"
)

// ErrNotFree means a relocation target is held (its reference count is not
// 0), so it cannot receive another block's content.
var ErrNotFree = errors.New("blockpool: block not free")

// ErrStaleOwner means RelocateBlocks was given sequences that do not hold
// every reference to a moved block: some other block table would keep
// pointing at the old id.
var ErrStaleOwner = errors.New("blockpool: a holder of the block was not given")

// Relocation moves the content of block From into the free block To.
type Relocation struct {
	From, To BlockID
}

// Relocate moves held block from into block to, which must be in the free
// queue (reference count 0), as the vllm-gaudi online defragmenter does
// (research/kv-managers.md): to takes from's reference count, fill and
// prefix-cache key, and from takes to's place in the free queue together with
// to's fill and key, so an evictable cached block that was at to stays
// cached (its content is swapped back, as vllm-gaudi does with prefix caching
// on). Counters (usage, slots, cached, evictable) do not change.
//
// The caller copies the KV content of both blocks and rewrites every block
// table that holds from (Sequence.Relocated, or RelocateBlocks for both at
// once). It returns ErrBadBlock for ids out of range, the null block or
// from == to, ErrNotAllocated when from is not held and ErrNotFree when to
// is held; on error nothing changes.
func (p *Pool) Relocate(from, to BlockID) error {
	fb, err := p.check(from)
	if err != nil {
		return err
	}
	tb, err := p.check(to)
	if err != nil {
		return err
	}
	switch {
	case from == to:
		return fmt.Errorf("%w: relocate block %d onto itself", ErrBadBlock, from)
	case fb.ref == 0:
		return fmt.Errorf("%w: relocate block %d", ErrNotAllocated, from)
	case tb.ref != 0: // a real block with ref 0 is queued
		return fmt.Errorf("%w: relocation target %d has ref %d", ErrNotFree, to, tb.ref)
	}
	fk, fh := p.keys[from], fb.cached()
	tk, th := p.keys[to], tb.cached()
	// Two blocks under the same key stay in their chain: lookups see the
	// same content under the same key either way.
	sameChain := fh && th && fk == tk
	if !sameChain {
		if fh {
			p.unhash(from)
		}
		if th {
			p.unhash(to)
		}
	}
	// from takes to's place in the queue.
	prev, next := p.links[to].prev, p.links[to].next
	p.links[from] = link{prev, next}
	p.links[prev].next = from
	p.links[next].prev = from
	fb.ref, tb.ref = tb.ref, fb.ref
	fb.fill, tb.fill = tb.fill, fb.fill
	if !sameChain {
		if fh {
			p.hash(to, fk)
		}
		if th {
			p.hash(from, tk)
		}
	}
	if invariants.Enabled {
		p.mustCheck()
	}
	return nil
}

// Relocated rewrites the sequence's block table after Pool.Relocate(from,
// to): every entry holding from now holds to. It returns the number of
// entries changed.
func (s *Sequence) Relocated(from, to BlockID) int {
	n := 0
	for i, id := range s.blocks {
		if id == from {
			s.blocks[i] = to
			n++
		}
	}
	return n
}

// RelocateBlocks performs moves in order on p and rewrites the block tables of
// seqs, which must hold every reference to each moved block: before each move
// it checks that the entries of seqs holding From add up to its reference
// count, and otherwise returns ErrStaleOwner (some other table would keep the
// old id) without performing that move. Moves before a failing one stay done.
// The error names the move.
func RelocateBlocks(p *Pool, moves []Relocation, seqs []*Sequence) error {
	for i, m := range moves {
		held := 0
		for _, s := range seqs {
			for _, id := range s.blocks {
				if id == m.From {
					held++
				}
			}
		}
		if ref := p.RefCount(m.From); held != ref {
			return fmt.Errorf("%w: move %d (%d -> %d): block %d has %d references, the sequences hold %d",
				ErrStaleOwner, i, m.From, m.To, m.From, ref, held)
		}
		if err := p.Relocate(m.From, m.To); err != nil {
			return fmt.Errorf("blockpool: move %d (%d -> %d): %w", i, m.From, m.To, err)
		}
		for _, s := range seqs {
			s.Relocated(m.From, m.To)
		}
	}
	return nil
}
