package blockpool

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"slices"
	"testing"
	"unsafe"

	"pgregory.net/rapid"
)

func mustNew(t *testing.T, blocks, size int) *Pool {
	t.Helper()
	p, err := New(blocks, size, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustCheck(t *testing.T, p *Pool) {
	t.Helper()
	if err := p.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if err := checkSlotSum(p.Stats()); err != nil {
		t.Fatal(err)
	}
}

func TestNewConfig(t *testing.T) {
	for _, tc := range []struct {
		blocks, size int
		ok           bool
	}{
		{1, 16, true}, // only the null block: usable, always out of blocks
		{2, 1, true},
		{0, 16, false},
		{-1, 16, false},
		{8, 0, false},
		{1 << 40, 16, false},
		{MaxBlocks + 1, 16, false},
	} {
		_, err := New(tc.blocks, tc.size, Options{})
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadConfig)) {
			t.Errorf("New(%d, %d) = %v, want ok=%t", tc.blocks, tc.size, err, tc.ok)
		}
	}
}

// TestBytesPerBlock keeps the documented per-block state in step with the
// types New allocates, so MaxBlocks stays a true bound on memory.
func TestBytesPerBlock(t *testing.T) {
	if got := unsafe.Sizeof(block{}) + unsafe.Sizeof(link{}) + unsafe.Sizeof(BlockHash(0)); got != BytesPerBlock {
		t.Errorf("per-block state is %d bytes, BytesPerBlock says %d", got, BytesPerBlock)
	}
}

// TestUsage checks the gauge against vLLM's formula, including the pool with
// nothing but the null block, which vLLM reports as 0.
func TestUsage(t *testing.T) {
	p := mustNew(t, 1, 16)
	if u := p.Usage(); u != 0 {
		t.Errorf("null-only pool usage %v, want 0", u)
	}
	if _, err := p.Allocate(nil, 1); err != ErrOutOfBlocks {
		t.Errorf("allocate from a null-only pool: %v", err)
	}
	p = mustNew(t, 5, 16)
	ids, _ := p.Allocate(nil, 3)
	if u, want := p.Usage(), 1-1.0/4; u != want {
		t.Errorf("usage %v, want %v", u, want)
	}
	// A cached block with ref 0 counts as free.
	if err := p.CacheFullBlock(ids[0], 7); err != nil {
		t.Fatal(err)
	}
	if err := p.Free(ids); err != nil {
		t.Fatal(err)
	}
	if u := p.Usage(); u != 0 {
		t.Errorf("usage with only evictable cache %v, want 0", u)
	}
	mustCheck(t, p)
}

// TestMisuse checks that each misuse returns its sentinel and leaves the pool
// exactly as it was.
func TestMisuse(t *testing.T) {
	p := mustNew(t, 6, 4)
	ids, err := p.Allocate(nil, 3) // 1 2 3
	if err != nil {
		t.Fatal(err)
	}
	before := p.FreeQueue(nil)
	st := p.Stats()
	for _, tc := range []struct {
		name string
		err  error
		do   func() error
	}{
		{"negative allocate", ErrBadCount, func() error { _, err := p.Allocate(nil, -1); return err }},
		{"free out of range", ErrBadBlock, func() error { return p.Free([]BlockID{1, 2, 99}) }},
		{"free negative id", ErrBadBlock, func() error { return p.Free([]BlockID{1, -3}) }},
		{"double free", ErrNotAllocated, func() error { return p.Free([]BlockID{1, 4}) }},
		{"free twice in one call", ErrNotAllocated, func() error { return p.Free([]BlockID{2, 2}) }},
		// One block takes Free's one-pass path (FreeOne).
		{"double free of one block", ErrNotAllocated, func() error { return p.Free([]BlockID{4}) }},
		{"free of one block out of range", ErrBadBlock, func() error { return p.Free([]BlockID{6}) }},
		{"free of one negative id", ErrBadBlock, func() error { return p.Free([]BlockID{-1}) }},
		{"FreeOne of a free block", ErrNotAllocated, func() error { return p.FreeOne(4) }},
		{"FreeOne out of range", ErrBadBlock, func() error { return p.FreeOne(6) }},
		{"FreeOne of a negative id", ErrBadBlock, func() error { return p.FreeOne(-1) }},
		{"touch free block", ErrNotAllocated, func() error { return p.Touch([]BlockID{1, 5}) }},
		{"touch null-free out of range", ErrBadBlock, func() error { return p.Touch([]BlockID{6}) }},
		{"share free block", ErrNotAllocated, func() error { return p.Share([]BlockID{1, 4}) }},
		{"cache free block", ErrNotAllocated, func() error { return p.CacheFullBlock(4, 1) }},
		{"cache null block", ErrBadBlock, func() error { return p.CacheFullBlock(NullBlock, 1) }},
		{"cow free block", ErrNotAllocated, func() error { _, _, err := p.CopyOnWrite(5); return err }},
		{"fill too large", ErrBadCount, func() error { return p.SetFill(1, 5) }},
		{"fill of free block", ErrNotAllocated, func() error { return p.SetFill(4, 1) }},
	} {
		if err := tc.do(); !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
		mustCheck(t, p)
		if q := p.FreeQueue(nil); !slices.Equal(q, before) || p.Stats() != st {
			t.Fatalf("%s changed the pool: queue %v, was %v; stats %+v, were %+v", tc.name, q, before, p.Stats(), st)
		}
	}
	if err := p.CacheFullBlock(ids[0], 1); err != nil {
		t.Fatal(err)
	}
	if err := p.CacheFullBlock(ids[0], 2); !errors.Is(err, ErrAlreadyCached) {
		t.Errorf("caching a cached block: %v", err)
	}
	// The null block is ignored by Free, Touch and Share.
	if err := p.Free([]BlockID{NullBlock, ids[2]}); err != nil {
		t.Errorf("free with the null block: %v", err)
	}
	if err := p.Free([]BlockID{NullBlock}); err != nil {
		t.Errorf("free of the null block alone: %v", err)
	}
	// A shared block freed alone by one holder stays held; by the last,
	// it goes to the tail of the queue.
	if err := p.Share(ids[1:2]); err != nil {
		t.Fatal(err)
	}
	free := p.NumFree()
	for i, want := range []int{free, free + 1} {
		if err := p.Free(ids[1:2]); err != nil {
			t.Fatal(err)
		}
		if p.NumFree() != want || p.RefCount(ids[1]) != 1-i {
			t.Errorf("free %d of a shared block: %d free, ref %d; want %d, %d", i+1, p.NumFree(), p.RefCount(ids[1]), want, 1-i)
		}
	}
	if q := p.FreeQueue(nil); q[len(q)-1] != ids[1] {
		t.Errorf("queue %v does not end with the block freed last, %d", q, ids[1])
	}
	if err := p.Touch([]BlockID{NullBlock}); err != nil {
		t.Errorf("touch of the null block: %v", err)
	}
	mustCheck(t, p)
}

// TestCopyOnWriteCached checks that a cached block is never written in place,
// even by its only holder, and that the original stays a prefix-cache hit.
func TestCopyOnWriteCached(t *testing.T) {
	p := mustNew(t, 4, 4)
	ids, _ := p.Allocate(nil, 1)
	if err := p.SetFill(ids[0], 4); err != nil {
		t.Fatal(err)
	}
	if err := p.CacheFullBlock(ids[0], 42); err != nil {
		t.Fatal(err)
	}
	nid, copied, err := p.CopyOnWrite(ids[0])
	if err != nil || !copied || nid == ids[0] {
		t.Fatalf("CopyOnWrite of a cached block = %d, %t, %v", nid, copied, err)
	}
	if p.Fill(nid) != 4 || p.RefCount(ids[0]) != 0 || p.RefCount(nid) != 1 {
		t.Errorf("after copy: fill %d, refs %d/%d", p.Fill(nid), p.RefCount(ids[0]), p.RefCount(nid))
	}
	if id, ok := p.GetCached(42); !ok || id != ids[0] {
		t.Errorf("GetCached after copy = %d, %t, want %d", id, ok, ids[0])
	}
	// Sole holder of an uncached block: in place.
	if id, copied, err := p.CopyOnWrite(nid); err != nil || copied || id != nid {
		t.Errorf("CopyOnWrite of a private block = %d, %t, %v", id, copied, err)
	}
	mustCheck(t, p)
}

func TestResetPrefixCache(t *testing.T) {
	p := mustNew(t, 4, 4)
	ids, _ := p.Allocate(nil, 2)
	for i, id := range ids {
		if err := p.CacheFullBlock(id, BlockHash(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if p.ResetPrefixCache() {
		t.Fatal("reset while blocks are held")
	}
	if err := p.Free(ids); err != nil {
		t.Fatal(err)
	}
	if !p.ResetPrefixCache() || p.NumCached() != 0 {
		t.Fatalf("reset: cached %d", p.NumCached())
	}
	if _, ok := p.Lookup(1); ok {
		t.Error("hit after reset")
	}
	mustCheck(t, p)
}

// TestHashBlock pins HashBlock to FNV-1a 64 over the documented byte string,
// and checks the chain.
func TestHashBlock(t *testing.T) {
	ref := func(parent BlockHash, tokens []int32, extra uint64) BlockHash {
		h := fnv.New64a()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(parent))
		h.Write(b[:])
		binary.LittleEndian.PutUint64(b[:], extra)
		h.Write(b[:])
		for _, tok := range tokens {
			binary.LittleEndian.PutUint32(b[:4], uint32(tok))
			h.Write(b[:4])
		}
		return BlockHash(h.Sum64())
	}
	tokens := []int32{1, -2, 300000, 4, 5, 6, 7, 8, 9}
	for _, tc := range []struct {
		parent BlockHash
		toks   []int32
		extra  uint64
	}{
		{NoParent, nil, 0}, {NoParent, tokens[:4], 0}, {0xdeadbeef, tokens[:4], 0}, {NoParent, tokens[:4], 7},
	} {
		if got, want := HashBlock(tc.parent, tc.toks, tc.extra), ref(tc.parent, tc.toks, tc.extra); got != want {
			t.Errorf("HashBlock(%#x, %v, %d) = %#x, want %#x", tc.parent, tc.toks, tc.extra, got, want)
		}
	}
	// A golden value, so a change of algorithm cannot pass unnoticed.
	if got := HashBlock(NoParent, []int32{1, 2, 3, 4}, 0); got != 0x09258ac68c4c1261 {
		t.Errorf("golden: %#x", got)
	}
	chain := HashChain(nil, NoParent, tokens, 4, 0) // 9 tokens: 2 full blocks
	if len(chain) != 2 || chain[0] != HashBlock(NoParent, tokens[:4], 0) || chain[1] != HashBlock(chain[0], tokens[4:8], 0) {
		t.Errorf("HashChain = %#x", chain)
	}
	// Same tokens under a different parent (a different prefix) differ.
	if HashBlock(chain[0], tokens[:4], 0) == chain[0] {
		t.Error("parent does not change the key")
	}
}

// TestZeroAllocs checks the hot paths allocate nothing once the caller's
// slices have capacity.
func TestZeroAllocs(t *testing.T) {
	p := mustNew(t, 64, 16)
	buf := make([]BlockID, 0, 8)
	ids, _ := p.Allocate(buf, 4)
	for i, id := range ids {
		_ = p.SetFill(id, 16)
		_ = p.CacheFullBlock(id, BlockHash(100+i))
	}
	_ = p.Free(ids)
	hashes := []BlockHash{100, 101, 102, 103}
	n := testing.AllocsPerRun(100, func() {
		ids, _ := p.Allocate(buf[:0], 3)
		_ = p.Free(ids)
		hit := p.LongestPrefix(buf[:0], hashes)
		_ = p.Touch(hit)
		_ = p.Free(hit)
		if id, ok := p.GetCached(100); ok {
			_ = p.Free([]BlockID{id})
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per run, want 0", n)
	}
}

// TestBlockSize keeps the hot per-block state small: AllocFree's speed at
// 65536 blocks depends on how many blocks share a cache line.
func TestBlockSize(t *testing.T) {
	if s := unsafe.Sizeof(block{}); s > 20 {
		t.Errorf("block is %d bytes, want at most 20", s)
	}
	if s := unsafe.Sizeof(link{}); s > 8 {
		t.Errorf("link is %d bytes, want at most 8", s)
	}
}

// TestCheckInvariantsDetects corrupts a healthy pool in one way at a time and
// checks that CheckInvariants notices, so the self-check is not vacuous.
func TestCheckInvariantsDetects(t *testing.T) {
	build := func() *Pool {
		p := mustNew(t, 8, 4)
		ids, _ := p.Allocate(nil, 4) // 1 2 3 4
		for i, id := range ids {
			_ = p.SetFill(id, 4)
			_ = p.CacheFullBlock(id, BlockHash(10+i%2)) // two chains of two
		}
		_ = p.Free(ids[2:]) // 4 3 evictable
		mustCheck(t, p)
		return p
	}
	for _, tc := range []struct {
		name    string
		corrupt func(p *Pool)
	}{
		{"null block held", func(p *Pool) { p.blocks[0].ref = 1 }},
		{"queued block with a reference", func(p *Pool) { p.blocks[5].ref = 1 }},
		{"free block out of the queue", func(p *Pool) { p.unlink(p.links[0].next); p.base++ }},
		{"free count off", func(p *Pool) { p.frees++ }},
		{"broken back link", func(p *Pool) { p.links[6].prev = 7 }},
		{"queue cycle", func(p *Pool) { p.links[p.links[0].prev].next = p.links[0].next }},
		{"cached count off", func(p *Pool) { p.numCached-- }},
		{"evictable count off", func(p *Pool) { p.evictable++ }},
		{"held slots off", func(p *Pool) { p.heldSlots++ }},
		{"held filled off", func(p *Pool) { p.heldFilled++ }},
		{"fill too large", func(p *Pool) { p.blocks[1].fill = 5 }},
		{"key on an uncached block", func(p *Pool) { p.keys[5] = 3 }},
		{"index points at the wrong block", func(p *Pool) { i, _ := p.index.find(p.keys, 10); p.index.slots[i].id = 5 }},
		{"key changed under the map", func(p *Pool) { p.keys[3] = 11 }},
		{"chain link broken", func(p *Pool) { p.blocks[1].hnext = 1 }},
		{"index entry out of place", func(p *Pool) {
			i, _ := p.index.find(p.keys, 99)
			p.index.slots[i] = indexSlot{2, tag(p.keys[2])}
			p.index.n++
		}},
		{"index tag wrong", func(p *Pool) { i, _ := p.index.find(p.keys, 10); p.index.slots[i].tag++ }},
		{"index count off", func(p *Pool) { p.index.n++ }},
	} {
		p := build()
		tc.corrupt(p)
		if err := p.CheckInvariants(); err == nil {
			t.Errorf("%s: not detected", tc.name)
		}
	}
}

// TestLongestPrefixHint checks that hints change nothing: on a pool whose
// cached blocks share a few keys (so that some keys have chains of several
// blocks), evictable or held, LongestPrefixHint with hints that are right,
// stale (another key, a duplicate that is not the chain's head, a block
// evicted since), out of range or missing returns LongestPrefix's blocks
// and counts the same queries and hits.
func TestLongestPrefixHint(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 40).Draw(t, "blocks")
		a, err := New(n, 4, Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(n, 4, Options{})
		keys := rapid.IntRange(1, 12).Draw(t, "keys")
		var held []BlockID
		for range rapid.IntRange(0, 3*n).Draw(t, "ops") {
			if len(held) > 0 && rapid.Bool().Draw(t, "free") {
				i := rapid.IntRange(0, len(held)-1).Draw(t, "which")
				id := held[i]
				held = append(held[:i], held[i+1:]...)
				if a.Free([]BlockID{id}) != nil || b.Free([]BlockID{id}) != nil {
					t.Fatal("free of a held block")
				}
				continue
			}
			ida, erra := a.Allocate(nil, 1)
			idb, errb := b.Allocate(nil, 1)
			if (erra == nil) != (errb == nil) {
				t.Fatalf("twin pools differ: %v, %v", erra, errb)
			}
			if erra != nil {
				continue
			}
			if ida[0] != idb[0] {
				t.Fatalf("twin pools gave blocks %d and %d", ida[0], idb[0])
			}
			id := ida[0]
			held = append(held, id)
			if a.SetFill(id, 4) != nil || b.SetFill(id, 4) != nil {
				t.Fatal("fill of a held block")
			}
			k := BlockHash(rapid.IntRange(1, keys).Draw(t, "key"))
			if a.CacheFullBlock(id, k) != nil || b.CacheFullBlock(id, k) != nil {
				t.Fatal("cache of a held block")
			}
		}
		hashes := make([]BlockHash, rapid.IntRange(0, keys+2).Draw(t, "lookups"))
		hints := make([]BlockID, rapid.IntRange(0, len(hashes)+1).Draw(t, "hints"))
		for i := range hashes {
			hashes[i] = BlockHash(rapid.IntRange(1, keys+1).Draw(t, "hash"))
		}
		for i := range hints {
			hints[i] = BlockID(rapid.IntRange(-1, n).Draw(t, "hint"))
			if i >= len(hashes) {
				continue
			}
			// Or a block that holds the key: the chain's head, or another.
			var holders []BlockID
			for id := range n {
				if k, ok := a.CachedHash(BlockID(id)); ok && k == hashes[i] {
					holders = append(holders, BlockID(id))
				}
			}
			if len(holders) > 0 && rapid.IntRange(0, 2).Draw(t, "holder-hint") > 0 {
				hints[i] = holders[rapid.IntRange(0, len(holders)-1).Draw(t, "holder")]
			}
		}
		got := a.LongestPrefixHint(nil, hashes, hints)
		want := b.LongestPrefix(nil, hashes)
		if !slices.Equal(got, want) {
			t.Fatalf("LongestPrefixHint(%v, hints %v) = %v, LongestPrefix %v", hashes, hints, got, want)
		}
		if sa, sb := a.Stats(), b.Stats(); sa != sb {
			t.Fatalf("stats differ:\nhint %+v\nplain %+v", sa, sb)
		}
	})
}

// TestFreeRepeatedShared frees a table that holds a block twice, with two
// references: legal, as in vLLM, and the block enters the free queue once,
// at the place of its last entry (the table's order reversed), whatever
// path Free takes.
func TestFreeRepeatedShared(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table func(ids []BlockID) []BlockID
		want  []BlockID // the queue's blocks after the untouched 5, 6, 7
	}{
		{"shared first", func(ids []BlockID) []BlockID { return []BlockID{ids[0], ids[1], ids[0], ids[2]} }, []BlockID{3, 1, 2}},
		{"shared last", func(ids []BlockID) []BlockID { return []BlockID{ids[1], ids[2], ids[0], ids[0]} }, []BlockID{1, 3, 2}},
		{"only the shared block", func(ids []BlockID) []BlockID { return []BlockID{ids[0], ids[0]} }, []BlockID{1}},
	} {
		p := mustNew(t, 8, 4)
		ids, err := p.Allocate(nil, 4) // 1 2 3 4
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Share(ids[:1]); err != nil { // block 1: ref 2
			t.Fatal(err)
		}
		table := tc.table(ids)
		if len(table) == 2 { // 2 and 3 stay held: free them apart
			if err := p.Free(ids[1:3]); err != nil {
				t.Fatal(err)
			}
			tc.want = append([]BlockID{3, 2}, tc.want...)
		}
		if err := p.Free(table); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		mustCheck(t, p)
		want := append([]BlockID{5, 6, 7}, tc.want...)
		if q := p.FreeQueue(nil); !slices.Equal(q, want) {
			t.Errorf("%s: queue %v, want %v", tc.name, q, want)
		}
		if got := p.RefCount(ids[0]); got != 0 {
			t.Errorf("%s: block 1 has ref %d, want 0", tc.name, got)
		}
	}
}
