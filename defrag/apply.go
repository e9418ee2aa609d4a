// The executor: a plan's moves through an allocator's relocation hook.
// See doc.go for the overview.

package defrag

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// Apply performs p's moves in order through r.Relocate. For each move it asks
// handleAt for the handle of the live block at Move.From (the owner's own
// address book), relocates it, and calls moved (if not nil) with the handle
// and the block at its new address, so the owner can update everything that
// points at the block: its address book (handleAt must see the new address
// for later moves), KV block tables, sequence ranges.
//
// Apply is not all-or-nothing: on the first failure it stops and returns an
// error wrapping ErrMove (and the allocator's error) that names the move's
// index, addresses and size; the moves before it have been performed and
// reported through moved, the rest have not. Unmaps need no call: the
// allocator's EmptyCache unmaps free pages itself.
func Apply(r alloc.Relocator, p Plan, handleAt func(addr uint64) (alloc.Handle, bool), moved func(h alloc.Handle, b alloc.Block)) error {
	for i, m := range p.Moves {
		h, ok := handleAt(m.From)
		if !ok {
			return fmt.Errorf("%w: move %d of %d (%s -> %s, %s): no live block at the source",
				ErrMove, i, len(p.Moves), mem.FormatAddr(m.From), mem.FormatAddr(m.To), mem.FormatBytesExact(m.Size))
		}
		b, err := r.Relocate(h, m.To)
		if err != nil {
			return fmt.Errorf("%w: move %d of %d (%s -> %s, %s): %w",
				ErrMove, i, len(p.Moves), mem.FormatAddr(m.From), mem.FormatAddr(m.To), mem.FormatBytesExact(m.Size), err)
		}
		if b.Size != m.Size {
			return fmt.Errorf("%w: move %d of %d (%s -> %s): the block holds %s, the plan says %s",
				ErrMove, i, len(p.Moves), mem.FormatAddr(m.From), mem.FormatAddr(m.To),
				mem.FormatBytesExact(b.Size), mem.FormatBytesExact(m.Size))
		}
		if moved != nil {
			moved(h, b)
		}
	}
	return nil
}

// Index is an address book of live blocks for callers that keep none of their
// own: Apply(r, p, ix.HandleAt, ix.Moved) keeps it current. The simulator can
// instead pass its own lookups.
type Index struct {
	byAddr map[uint64]alloc.Handle
	addrOf map[alloc.Handle]uint64
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{byAddr: map[uint64]alloc.Handle{}, addrOf: map[alloc.Handle]uint64{}}
}

// Add records that h lives at addr (after an Alloc).
func (ix *Index) Add(h alloc.Handle, addr uint64) {
	ix.byAddr[addr] = h
	ix.addrOf[h] = addr
}

// Remove forgets h (after a Free).
func (ix *Index) Remove(h alloc.Handle) {
	if a, ok := ix.addrOf[h]; ok {
		delete(ix.byAddr, a)
		delete(ix.addrOf, h)
	}
}

// HandleAt returns the handle of the block at addr.
func (ix *Index) HandleAt(addr uint64) (alloc.Handle, bool) {
	h, ok := ix.byAddr[addr]
	return h, ok
}

// Addr returns where h lives.
func (ix *Index) Addr(h alloc.Handle) (uint64, bool) {
	a, ok := ix.addrOf[h]
	return a, ok
}

// Moved records a relocation (the moved callback of Apply).
func (ix *Index) Moved(h alloc.Handle, b alloc.Block) {
	if a, ok := ix.addrOf[h]; ok && ix.byAddr[a] == h {
		delete(ix.byAddr, a)
	}
	ix.byAddr[b.Addr] = h
	ix.addrOf[h] = b.Addr
}

// Len is the number of blocks indexed.
func (ix *Index) Len() int { return len(ix.addrOf) }
