// Pool self-checks.
// See doc.go for the overview.

package blockpool

import (
	"fmt"
	"math/bits"
)

// CheckInvariants recounts the pool from its blocks and compares the result
// with the incremental state (see the Invariants on Pool). It returns the
// first violation found, or nil. It is O(NumBlocks); the pool calls it after
// every mutation when invariants.Enabled (-tags invariants or -race), and
// tests call it directly.
func (p *Pool) CheckInvariants() error {
	n := len(p.blocks)
	null := &p.blocks[0]
	if null.ref != 0 || null.cached() || null.fill != 0 || p.keys[0] != 0 {
		return fmt.Errorf("blockpool: null block has ref=%d hashed=%t fill=%d", null.ref, null.cached(), null.fill)
	}

	// Walk the free queue forward, checking the back links.
	walked := 0
	prev := BlockID(0)
	for id := p.links[0].next; id != 0; id = p.links[id].next {
		if uint(id) >= uint(n) {
			return fmt.Errorf("blockpool: free queue links to id %d out of range", id)
		}
		if b := &p.blocks[id]; b.ref != 0 {
			return fmt.Errorf("blockpool: block %d in the free queue has ref=%d", id, b.ref)
		}
		if p.links[id].prev != prev {
			return fmt.Errorf("blockpool: block %d has prev %d, reached from %d", id, p.links[id].prev, prev)
		}
		prev = id
		if walked++; walked > n {
			return fmt.Errorf("blockpool: free queue has a cycle")
		}
	}
	if p.links[0].prev != prev {
		return fmt.Errorf("blockpool: free queue tail is %d, last block walked %d", p.links[0].prev, prev)
	}
	if walked != p.numFree() {
		return fmt.Errorf("blockpool: free queue holds %d blocks, counters say %d (base %d, frees %d, allocs %d)", walked, p.numFree(), p.base, p.frees, p.allocs)
	}

	// Every real block is queued exactly when its ref is 0 (the walk above
	// found only such blocks, so it found all of them when it found as
	// many); recount the cache and slot counters.
	queued, hashed, evictable, filled := 0, 0, 0, 0
	var slots int64
	for id := 1; id < n; id++ {
		b := &p.blocks[id]
		switch {
		case b.ref < 0:
			return fmt.Errorf("blockpool: block %d has ref %d", id, b.ref)
		case b.fill < 0 || int(b.fill) > p.blockSize:
			return fmt.Errorf("blockpool: block %d has fill %d of %d", id, b.fill, p.blockSize)
		}
		if b.ref == 0 {
			queued++
		} else {
			slots += int64(b.fill)
			if b.fill != 0 {
				filled++
			}
		}
		if !b.cached() && (p.keys[id] != 0 || b.hprev != 0) {
			return fmt.Errorf("blockpool: uncached block %d has key %#x and chain links %d/%d", id, uint64(p.keys[id]), b.hprev, b.hnext)
		}
		if b.cached() {
			hashed++
			if b.ref == 0 {
				evictable++
			}
			if _, ok := p.index.get(p.keys, p.keys[id]); !ok {
				return fmt.Errorf("blockpool: block %d has key %#x, which the index lacks", id, uint64(p.keys[id]))
			}
		}
	}
	if queued != walked {
		return fmt.Errorf("blockpool: %d blocks with ref 0, %d in the queue", queued, walked)
	}
	if hashed != p.numCached || evictable != p.evictable {
		return fmt.Errorf("blockpool: recount cached=%d evictable=%d, counters %d/%d", hashed, evictable, p.numCached, p.evictable)
	}
	if slots != p.heldSlots || filled != p.heldFilled {
		return fmt.Errorf("blockpool: recount held slots=%d filled=%d, counters %d/%d", slots, filled, p.heldSlots, p.heldFilled)
	}
	if p.allocs < 0 || p.frees < 0 || p.base > int64(n-1) {
		return fmt.Errorf("blockpool: counters allocs=%d frees=%d base=%d", p.allocs, p.frees, p.base)
	}
	if !p.caching && hashed != 0 {
		return fmt.Errorf("blockpool: %d cached blocks with prefix caching disabled", hashed)
	}

	if err := p.checkIndex(); err != nil {
		return err
	}
	// Each index entry heads a consistent circular chain of blocks with its
	// key; the chains together hold every hashed block once. Walk them in
	// block order so the first error reported does not depend on the
	// index's order.
	heads, inChains := 0, 0
	for id := 1; id < n; id++ {
		b := &p.blocks[id]
		if head, _ := p.index.get(p.keys, p.keys[id]); !b.cached() || head != BlockID(id) {
			continue
		}
		key := p.keys[id]
		heads++
		cur := BlockID(id)
		for {
			c := &p.blocks[cur]
			if !c.cached() || p.keys[cur] != key {
				return fmt.Errorf("blockpool: chain of key %#x holds block %d (hashed=%t key %#x)", uint64(key), cur, c.cached(), uint64(p.keys[cur]))
			}
			if uint(c.hnext) >= uint(n) || p.blocks[c.hnext].hprev != cur {
				return fmt.Errorf("blockpool: chain of key %#x: block %d's next %d does not link back", uint64(key), cur, c.hnext)
			}
			if inChains++; inChains > hashed {
				return fmt.Errorf("blockpool: hash chains hold more blocks than the %d cached", hashed)
			}
			if cur = c.hnext; cur == BlockID(id) {
				break
			}
		}
	}
	if heads != p.index.n || inChains != hashed {
		return fmt.Errorf("blockpool: index has %d keys, %d chain heads found; chains hold %d of %d cached blocks", p.index.n, heads, inChains, hashed)
	}
	return nil
}

// checkIndex checks the index's own invariants (keyIndex): its size, its
// count, and that every entry is a hashed block its key's probe finds
// there (so no key has two entries and none is out of reach).
func (p *Pool) checkIndex() error {
	x := &p.index
	size := len(x.slots)
	if size != 0 && (size&(size-1) != 0 || size < minIndexSlots || x.shift != uint(32-bits.TrailingZeros(uint(size))) || 2*x.n > size) {
		return fmt.Errorf("blockpool: index of %d slots (shift %d) holds %d keys", size, x.shift, x.n)
	}
	entries := 0
	for i, e := range x.slots {
		id := e.id
		if id == NullBlock {
			continue
		}
		entries++
		if uint(id) >= uint(len(p.blocks)) || !p.blocks[id].cached() || e.tag != tag(p.keys[id]) {
			return fmt.Errorf("blockpool: index slot %d holds block %d (tag %#x), which is not cached under a key of that tag", i, id, e.tag)
		}
		if j, ok := x.find(p.keys, p.keys[id]); !ok || j != i {
			return fmt.Errorf("blockpool: index slot %d holds block %d under key %#x, which a lookup finds at slot %d", i, id, uint64(p.keys[id]), j)
		}
	}
	if entries != x.n {
		return fmt.Errorf("blockpool: index holds %d entries, counts %d", entries, x.n)
	}
	return nil
}

// mustCheck panics on a broken invariant; callers guard it with
// invariants.Enabled.
func (p *Pool) mustCheck() {
	// A check is O(NumBlocks). Small pools (every test's) are checked after
	// every mutation; a large one (a simulated 80 GB GPU holds hundreds of
	// thousands of blocks) after every k-th, k = NumBlocks / checkEvery, so
	// the self-checks cost O(checkEvery) per mutation amortised instead of
	// making -race and -tags invariants runs of the simulator quadratic.
	p.mutations++
	if n := len(p.blocks); n > checkEvery && p.mutations%uint64(n/checkEvery) != 0 {
		return
	}
	if err := p.CheckInvariants(); err != nil {
		panic(err)
	}
}

// checkEvery is the pool size up to which mustCheck checks after every
// mutation (4096 blocks: about 20 µs per check).
const checkEvery = 4096
