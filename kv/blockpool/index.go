// The prefix cache's index: each key to the head of its chain of blocks.
// See doc.go for the overview.

package blockpool

import "math/bits"

// keyIndex maps each distinct key in the prefix cache to the head of its
// chain (cache.go): an open-addressing table with linear probing whose
// entries are the head blocks' ids with 32 bits of their keys' mixed hash,
// so that a probe reads the key itself (Pool.keys) only when those bits
// match, and a removal finds the homes of the entries it moves without
// reading keys. It doubles when it would be more than half full, so it
// holds at most twice the pool's blocks rounded up to a power of two (chain
// heads are hashed blocks), 8 bytes a slot, and allocates nothing
// otherwise. Removal moves the later entries of a run back into the hole
// (no tombstones), so a lookup probes only the run its key's home starts.
// Where a key's entry lies depends on the keys and the order of inserts
// and removals alone: deterministic, as the pool is, and invisible
// outside it (Lookup answers the same head wherever the entry lies).
//
// Invariant (CheckInvariants, checkIndex): every entry is a hashed block
// that heads its chain, with its key's tag, reachable from its key's home
// without passing an empty slot, one per distinct key; n is their count.
type keyIndex struct {
	slots []indexSlot // a power of two long; id NullBlock (never hashed): empty
	shift uint        // 32 − log2(len(slots)): home takes the tag's top bits
	n     int         // entries
}

// indexSlot is one entry: a chain head and its key's tag.
type indexSlot struct {
	id  BlockID
	tag uint32
}

// minIndexSlots is the first size of the table.
const minIndexSlots = 64

// tag is the top 32 bits of h times 2^64 ÷ φ, which spreads keys an engine
// supplies (small integers, say) as well as FNV's; a key's home is the
// tag's top log2(len(slots)) bits.
func tag(h BlockHash) uint32 { return uint32((uint64(h) * 0x9E3779B97F4A7C15) >> 32) }

// home is the slot a probe for a key with tag g starts at.
func (x *keyIndex) home(g uint32) int { return int(g >> x.shift) }

// find returns the slot holding key h and true, or the empty slot where h
// would go and false (-1 while the table has no slots).
func (x *keyIndex) find(keys []BlockHash, h BlockHash) (int, bool) {
	if len(x.slots) == 0 {
		return -1, false
	}
	g := tag(h)
	mask := len(x.slots) - 1
	for i := x.home(g); ; i = (i + 1) & mask {
		e := x.slots[i]
		if e.id == NullBlock {
			return i, false
		}
		if e.tag == g && keys[e.id] == h {
			return i, true
		}
	}
}

// get returns the head of key h's chain.
func (x *keyIndex) get(keys []BlockHash, h BlockHash) (BlockID, bool) {
	if x.n == 0 {
		return NullBlock, false
	}
	if i, ok := x.find(keys, h); ok {
		return x.slots[i].id, true
	}
	return NullBlock, false
}

// insertAt adds block id as the head of key h, which the table does not
// hold: at slot i, where find(h) said it would go, or, when the table must
// grow first (i −1 or the table half full), where it goes then.
func (x *keyIndex) insertAt(i int, h BlockHash, id BlockID) {
	if i < 0 || 2*(x.n+1) > len(x.slots) {
		x.grow()
		i = x.free(tag(h))
	}
	x.slots[i] = indexSlot{id, tag(h)}
	x.n++
}

// free returns the first empty slot from the home of tag g.
func (x *keyIndex) free(g uint32) int {
	mask := len(x.slots) - 1
	i := x.home(g)
	for x.slots[i].id != NullBlock {
		i = (i + 1) & mask
	}
	return i
}

// grow doubles the table and places every entry again.
func (x *keyIndex) grow() {
	old := x.slots
	size := max(minIndexSlots, 2*len(old))
	x.slots = make([]indexSlot, size)
	x.shift = uint(32 - bits.TrailingZeros(uint(size)))
	for _, e := range old {
		if e.id != NullBlock {
			x.slots[x.free(e.tag)] = e
		}
	}
}

// removeAt empties slot i (found with find) and moves back each later entry
// of its run whose home does not lie cyclically in (i, j], so that every
// entry stays reachable from its home.
func (x *keyIndex) removeAt(i int) {
	mask := len(x.slots) - 1
	for j := (i + 1) & mask; x.slots[j].id != NullBlock; j = (j + 1) & mask {
		k := x.home(x.slots[j].tag)
		if (i <= j && (k <= i || k > j)) || (i > j && k <= i && k > j) {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = indexSlot{}
	x.n--
}

// reset empties the table, keeping its size.
func (x *keyIndex) reset() {
	clear(x.slots)
	x.n = 0
}
