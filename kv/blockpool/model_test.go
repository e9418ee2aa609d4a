package blockpool

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// model is a naive reference for the pool: a plain slice for the free queue
// (O(n) removal), per-block arrays, and a map from key to the blocks
// registered under it, in registration order. It knows nothing of the pool's
// links, sentinel or counters.
type model struct {
	bs      int
	caching bool
	ref     []int
	fill    []int
	hashed  []bool
	hash    []BlockHash
	queue   []BlockID
	keys    map[BlockHash][]BlockID
}

func newModel(blocks, bs int, caching bool) *model {
	m := &model{bs: bs, caching: caching, ref: make([]int, blocks), fill: make([]int, blocks),
		hashed: make([]bool, blocks), hash: make([]BlockHash, blocks), keys: map[BlockHash][]BlockID{}}
	for id := 1; id < blocks; id++ {
		m.queue = append(m.queue, BlockID(id))
	}
	return m
}

func (m *model) pop() BlockID {
	id := m.queue[0]
	m.queue = m.queue[1:]
	if m.hashed[id] {
		m.unhash(id)
	}
	m.ref[id], m.fill[id] = 1, 0
	return id
}

func (m *model) unhash(id BlockID) {
	h := m.hash[id]
	l := m.keys[h]
	i := slices.Index(l, id)
	l = slices.Delete(l, i, i+1)
	if len(l) == 0 {
		delete(m.keys, h)
	} else {
		m.keys[h] = l
	}
	m.hashed[id], m.hash[id] = false, 0
}

func (m *model) touch(id BlockID) {
	if m.ref[id] == 0 {
		i := slices.Index(m.queue, id)
		m.queue = slices.Delete(m.queue, i, i+1)
	}
	m.ref[id]++
}

func (m *model) free(ids []BlockID) {
	for _, id := range ids {
		m.ref[id]--
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if id := ids[i]; m.ref[id] == 0 && !slices.Contains(m.queue, id) {
			m.queue = append(m.queue, id)
		}
	}
}

func (m *model) lookup(h BlockHash) (BlockID, bool) {
	if !m.caching || len(m.keys[h]) == 0 {
		return 0, false
	}
	return m.keys[h][0], true
}

// mseq is the model of a Sequence.
type mseq struct {
	blocks    []BlockID
	tokens    int
	numCached int
}

func (m *model) appendTokens(s *mseq, n int) bool {
	total := s.tokens + n
	need := (total+m.bs-1)/m.bs - len(s.blocks)
	partial := s.tokens%m.bs != 0
	cow := false
	if partial {
		last := s.blocks[len(s.blocks)-1]
		cow = m.ref[last] > 1 || m.hashed[last]
	}
	if cow {
		need++
	}
	if need > len(m.queue) {
		return false
	}
	first := len(s.blocks)
	if partial {
		first--
		if cow {
			old := s.blocks[first]
			nid := m.pop()
			m.fill[nid] = m.fill[old]
			m.free([]BlockID{old})
			s.blocks[first] = nid
			need--
		}
	}
	for range need {
		s.blocks = append(s.blocks, m.pop())
	}
	s.tokens = total
	for i := first; i < len(s.blocks); i++ {
		m.fill[s.blocks[i]] = min(m.bs, total-i*m.bs)
	}
	return true
}

// harness runs the same operations on a Pool (through Sequence) and on the
// model, and compares them after each.
type harness struct {
	p       *Pool
	m       *model
	seqs    []*Sequence
	mseqs   []*mseq
	toks    [][]int32   // tokens of each live sequence
	history [][]int32   // tokens of every sequence ever made
	hints   [][]BlockID // the block tables of released sequences: hints for MatchPrefixHint
	next    int32
	log     []string
}

func newHarness(blocks, bs int, caching bool) *harness {
	p, err := New(blocks, bs, Options{DisablePrefixCaching: !caching})
	if err != nil {
		panic(err)
	}
	return &harness{p: p, m: newModel(blocks, bs, caching)}
}

func (h *harness) fresh(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		h.next++
		out[i] = h.next
	}
	return out
}

// start begins a sequence with the first n tokens of history[src] (src < 0:
// none) plus extra fresh tokens, reusing the cached prefix as vLLM does,
// with the block table of released sequence hint as hints (hint < 0 or out
// of range: none; hints change nothing).
func (h *harness) start(src, n, extra, hint int) error {
	var tokens []int32
	if src >= 0 && src < len(h.history) {
		n = min(n, len(h.history[src]))
		tokens = append(tokens, h.history[src][:n]...)
	}
	tokens = append(tokens, h.fresh(extra)...)
	if len(tokens) == 0 {
		return nil
	}
	h.log = append(h.log, fmt.Sprintf("start %d tokens (%d shared)", len(tokens), len(tokens)-extra))
	hashes := HashChain(nil, NoParent, tokens[:len(tokens)-1], h.p.BlockSize(), 0)

	s := NewSequence(h.p)
	var hints []BlockID
	if hint >= 0 && hint < len(h.hints) {
		hints = h.hints[hint]
	}
	k, err := s.MatchPrefixHint(hashes, hints)
	if err != nil {
		return err
	}
	// Hits never return a block whose key was evicted: every block found
	// carries the key it was found under.
	for i, id := range s.Blocks() {
		if got, ok := h.p.CachedHash(id); !ok || got != hashes[i] {
			return fmt.Errorf("hit %d: block %d has key %#x (cached %t), looked up %#x", i, id, got, ok, hashes[i])
		}
	}
	ms := &mseq{}
	for _, hs := range hashes {
		id, ok := h.m.lookup(hs)
		if !ok {
			break
		}
		ms.blocks = append(ms.blocks, id)
	}
	for _, id := range ms.blocks {
		h.m.touch(id)
		h.m.fill[id] = h.m.bs
	}
	ms.tokens, ms.numCached = len(ms.blocks)*h.m.bs, len(ms.blocks)
	if k != len(ms.blocks) {
		return fmt.Errorf("prefix hit %d blocks, model %d", k, len(ms.blocks))
	}

	err = s.Append(len(tokens) - s.Tokens())
	ok := h.m.appendTokens(ms, len(tokens)-ms.tokens)
	if (err == nil) != ok {
		return fmt.Errorf("append after hit: %v, model ok=%t", err, ok)
	}
	if err != nil {
		if err := s.Release(); err != nil {
			return err
		}
		h.m.free(ms.blocks)
		return h.compare()
	}
	h.seqs, h.mseqs = append(h.seqs, s), append(h.mseqs, ms)
	h.toks, h.history = append(h.toks, tokens), append(h.history, tokens)
	return h.compare()
}

func (h *harness) appendTo(i, n int) error {
	if len(h.seqs) == 0 {
		return nil
	}
	i %= len(h.seqs)
	h.log = append(h.log, fmt.Sprintf("append %d to seq %d", n, i))
	err := h.seqs[i].Append(n)
	ok := h.m.appendTokens(h.mseqs[i], n)
	if (err == nil) != ok {
		return fmt.Errorf("append: %v, model ok=%t", err, ok)
	}
	if ok {
		h.toks[i] = append(h.toks[i], h.fresh(n)...)
		h.history = append(h.history, h.toks[i])
	}
	return h.compare()
}

func (h *harness) fork(i int) error {
	if len(h.seqs) == 0 {
		return nil
	}
	i %= len(h.seqs)
	h.log = append(h.log, fmt.Sprintf("fork seq %d", i))
	h.seqs = append(h.seqs, h.seqs[i].Fork())
	ms := *h.mseqs[i]
	ms.blocks = slices.Clone(ms.blocks)
	for _, id := range ms.blocks {
		h.m.ref[id]++
	}
	h.mseqs = append(h.mseqs, &ms)
	h.toks = append(h.toks, slices.Clone(h.toks[i]))
	return h.compare()
}

func (h *harness) cache(i int) error {
	if len(h.seqs) == 0 {
		return nil
	}
	i %= len(h.seqs)
	h.log = append(h.log, fmt.Sprintf("cache seq %d", i))
	hashes := HashChain(nil, NoParent, h.toks[i], h.p.BlockSize(), 0)
	if _, err := h.seqs[i].Cache(hashes); err != nil {
		return err
	}
	if h.m.caching {
		ms := h.mseqs[i]
		for ; ms.numCached < min(len(hashes), ms.tokens/h.m.bs); ms.numCached++ {
			id := ms.blocks[ms.numCached]
			if !h.m.hashed[id] {
				h.m.hashed[id], h.m.hash[id] = true, hashes[ms.numCached]
				h.m.keys[hashes[ms.numCached]] = append(h.m.keys[hashes[ms.numCached]], id)
			}
		}
	}
	return h.compare()
}

func (h *harness) release(i int) error {
	if len(h.seqs) == 0 {
		return nil
	}
	i %= len(h.seqs)
	h.log = append(h.log, fmt.Sprintf("release seq %d", i))
	h.hints = append(h.hints, slices.Clone(h.seqs[i].Blocks()))
	if err := h.seqs[i].Release(); err != nil {
		return err
	}
	h.m.free(h.mseqs[i].blocks)
	h.seqs = slices.Delete(h.seqs, i, i+1)
	h.mseqs = slices.Delete(h.mseqs, i, i+1)
	h.toks = slices.Delete(h.toks, i, i+1)
	return h.compare()
}

// compare checks the pool against the model and the holders.
func (h *harness) compare() error {
	p, m := h.p, h.m
	if err := p.CheckInvariants(); err != nil {
		return err
	}
	if err := checkSlotSum(p.Stats()); err != nil {
		return err
	}
	if q := p.FreeQueue(nil); !slices.Equal(q, m.queue) {
		return fmt.Errorf("free queue %v, model %v", q, m.queue)
	}
	holders := make([]int, p.NumBlocks())
	for i, s := range h.seqs {
		if !slices.Equal(s.Blocks(), h.mseqs[i].blocks) || s.Tokens() != h.mseqs[i].tokens {
			return fmt.Errorf("seq %d: %v (%d tokens), model %v (%d)", i, s.Blocks(), s.Tokens(), h.mseqs[i].blocks, h.mseqs[i].tokens)
		}
		if err := s.checkInvariants(); err != nil {
			return fmt.Errorf("seq %d: %w", i, err)
		}
		for _, id := range s.Blocks() {
			holders[id]++
		}
	}
	cached := 0
	for id := range p.NumBlocks() {
		bid := BlockID(id)
		// No block lost or double counted: held by exactly its holders, or
		// in the queue exactly once.
		if p.RefCount(bid) != holders[id] || m.ref[id] != holders[id] {
			return fmt.Errorf("block %d: ref %d, model %d, holders %d", id, p.RefCount(bid), m.ref[id], holders[id])
		}
		if p.Fill(bid) != m.fill[id] {
			return fmt.Errorf("block %d: fill %d, model %d", id, p.Fill(bid), m.fill[id])
		}
		hs, ok := p.CachedHash(bid)
		if ok != m.hashed[id] || hs != m.hash[id] {
			return fmt.Errorf("block %d: key %#x/%t, model %#x/%t", id, hs, ok, m.hash[id], m.hashed[id])
		}
		if ok {
			cached++
		}
	}
	for hs := range m.keys {
		id, ok := p.Lookup(hs)
		mid, _ := m.lookup(hs)
		if !ok || id != mid {
			return fmt.Errorf("lookup %#x: %d/%t, model %d", hs, id, ok, mid)
		}
	}
	if p.NumFree() != len(m.queue) || p.NumCached() != cached {
		return fmt.Errorf("free %d cached %d, model %d/%d", p.NumFree(), p.NumCached(), len(m.queue), cached)
	}
	if want := 1 - float64(len(m.queue))/float64(p.NumBlocks()-1); p.NumBlocks() > 1 && p.Usage() != want {
		return fmt.Errorf("usage %v, want %v", p.Usage(), want)
	}
	return nil
}

// drain releases every sequence and checks that all blocks are back.
func (h *harness) drain() error {
	for len(h.seqs) > 0 {
		if err := h.release(0); err != nil {
			return err
		}
	}
	if h.p.NumFree() != h.p.NumBlocks()-1 || h.p.Usage() != 0 {
		return fmt.Errorf("after releasing everything: %d of %d blocks free", h.p.NumFree(), h.p.NumBlocks()-1)
	}
	return nil
}

// TestModel runs random operation sequences against the naive model. The
// seed of a failure is printed by rapid; replay with -rapid.seed=N.
func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		blocks := rapid.IntRange(1, 24).Draw(t, "blocks")
		bs := rapid.IntRange(1, 5).Draw(t, "blockSize")
		caching := rapid.Float64().Draw(t, "caching") < 0.85
		h := newHarness(blocks, bs, caching)
		var err error
		t.Repeat(map[string]func(*rapid.T){
			"start": func(t *rapid.T) {
				src := rapid.IntRange(-1, len(h.history)-1).Draw(t, "src")
				err = h.start(src, rapid.IntRange(0, 4*bs).Draw(t, "shared"), rapid.IntRange(0, 3*bs).Draw(t, "extra"),
					rapid.IntRange(-1, len(h.hints)-1).Draw(t, "hint"))
			},
			"append": func(t *rapid.T) {
				err = h.appendTo(rapid.IntRange(0, 7).Draw(t, "seq"), rapid.IntRange(1, 2*bs).Draw(t, "n"))
			},
			"fork":    func(t *rapid.T) { err = h.fork(rapid.IntRange(0, 7).Draw(t, "seq")) },
			"cache":   func(t *rapid.T) { err = h.cache(rapid.IntRange(0, 7).Draw(t, "seq")) },
			"release": func(t *rapid.T) { err = h.release(rapid.IntRange(0, 7).Draw(t, "seq")) },
			"": func(t *rapid.T) {
				if err != nil {
					t.Fatalf("%v\nops: %q", err, h.log)
				}
			},
		})
		if err == nil {
			err = h.drain()
		}
		if err != nil {
			t.Fatalf("%v\nops: %q", err, h.log)
		}
	})
}

// FuzzOps decodes bytes into the operations of TestModel and checks the pool
// against the model after each. Run as:
//
//	go test -run '^$' -fuzz FuzzOps -fuzztime 60s ./kv/blockpool/
func FuzzOps(f *testing.F) {
	f.Add([]byte{9, 4, 1, 0, 0, 8, 3, 0, 5, 0, 0, 0, 12, 2, 0, 0, 9})
	f.Add([]byte{3, 2, 0, 0, 0, 6, 1, 0, 2, 0, 3, 0, 4, 1, 2, 0})
	f.Add([]byte{20, 3, 1, 0, 0, 9, 4, 0, 0, 0, 6, 1, 0, 0, 4, 2, 1, 0, 9, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		blocks, bs, caching := int(data[0]%32)+1, int(data[1]%6)+1, data[2]%8 != 0
		h := newHarness(blocks, bs, caching)
		data = data[3:]
		for len(data) >= 4 && len(h.log) < 200 {
			op, a, b, c := data[0]%5, int(data[1]), int(data[2]), int(data[3])
			data = data[4:]
			var err error
			switch op {
			case 0:
				err = h.start(a%(len(h.history)+1)-1, b%(4*bs+1), c%(3*bs+1), len(h.hints)-1-c%3)
			case 1:
				err = h.appendTo(a, b%(2*bs)+1)
			case 2:
				err = h.fork(a)
			case 3:
				err = h.cache(a)
			case 4:
				err = h.release(a)
			}
			if err != nil {
				t.Fatalf("%v\nops: %q", err, h.log)
			}
		}
		if err := h.drain(); err != nil {
			t.Fatalf("%v\nops: %q", err, h.log)
		}
	})
}
