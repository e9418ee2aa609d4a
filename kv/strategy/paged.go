// Paged strategy: a vLLM-style block pool in one allocation.
// See doc.go for the overview.

package strategy

import (
	"errors"
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/kv/blockpool"
	"github.com/gpufrag/gpufrag/mem"
)

// pagedSeq is one live request: a Sequence per sample, and the prompt
// tokens its admission found in the prefix cache; or, when the pool is
// counted (paged.counts), its tokens, samples and shared blocks.
type pagedSeq struct {
	samples []*blockpool.Sequence // nil when counted
	hit     int
	mark    uint64 // DecodeSteps: the call that saw it last (an id given twice)

	tokens, n int // counted: tokens per sample, samples
	blocks    int // counted: blocks per sample, ⌈tokens/B⌉
	shared    int // counted: leading blocks all n > 1 samples hold at once (blockCounts)
	cached    int // its leading full prompt blocks in the prefix cache, which other requests may hold too (prefixshare.go)
}

// paged is paged:B. At construction it takes ONE allocation of
// ⌊PoolBytes / (B × bpt)⌋ blocks from env.Alloc (vLLM allocates its KV cache
// tensor once, sized by gpu_memory_utilization) and hands blocks out from a
// blockpool.Pool; block 0 is the pool's null block, so NumBlocks − 1 blocks
// serve sequences, as in vLLM. The samples of a request fork the prompt's
// blocks.
//
// Invariants: every live sample's blockpool.Sequence holds Tokens() tokens;
// the pool's held blocks are exactly those of the live samples.
type paged struct {
	env        Env
	bs         int             // tokens per block (B)
	bpt        int64           // KV bytes per token
	blockBytes int64           // B × bpt
	pool       *blockpool.Pool // nil when counted
	counts     *blockCounts    // the pool's counts instead (Env.CountBlocks, pagedcount.go); else nil
	poolBlock  alloc.Block     // the pool's one allocation; Handle 0 after Close
	closed     bool
	seqs       seqTable[pagedSeq]    // live sequences
	keys       []blockpool.BlockHash // scratch: the admitted prompt's block keys
	found      []blockpool.BlockID   // scratch: the blocks its prefix match found
	memo       prefixMemo            // the keys of recent prompts (prefixmemo.go)
	spare      []*blockpool.Sequence // released single-sample sequences, for the next admissions
	cross      int                   // blocks live requests share through the prefix cache, (holders − 1) each (prefixshare.go)
	crossCheck crossScratch          // checkCross's maps, kept (invariants only)
	st         Stats
	decodeScratch
}

func newPaged(env Env, bs int) (*paged, error) {
	bpt := env.Model.KVBytesPerToken(env.KVDType, env.TP)
	blockBytes := int64(bs) * bpt
	n := env.PoolBytes / blockBytes
	if n < 2 {
		return nil, fmt.Errorf("%w: paged:%d: pool budget %s holds %d blocks of %s (want ≥ 2: the null block and one more; set Env.PoolBytes)",
			ErrBadSpec, bs, mem.FormatBytesExact(env.PoolBytes), n, mem.FormatBytesExact(blockBytes))
	}
	if n > blockpool.MaxBlocks {
		return nil, fmt.Errorf("%w: paged:%d: pool budget %s holds %d blocks of %s (%d KV bytes per token), above the block pool's limit of %d: "+
			"the model is far smaller than any real one (check its config) or the block is too small (use paged:%d or larger)",
			ErrBadSpec, bs, mem.FormatBytesExact(env.PoolBytes), n, mem.FormatBytesExact(blockBytes), bpt, blockpool.MaxBlocks,
			minBlockFor(env.PoolBytes, bpt))
	}
	p := &paged{env: env, bs: bs, bpt: bpt, blockBytes: blockBytes}
	if env.CountBlocks && env.NoPrefixCaching {
		p.counts = &blockCounts{numBlocks: int(n), free: int(n) - 1} // n and bs are within blockpool.New's bounds
	} else {
		pool, err := blockpool.New(int(n), bs, blockpool.Options{DisablePrefixCaching: env.NoPrefixCaching})
		if err != nil {
			return nil, fmt.Errorf("%w: paged:%d: %w", ErrBadSpec, bs, err)
		}
		p.pool = pool
	}
	b, err := env.Alloc.Alloc(n*blockBytes, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: paged:%d: pool of %d blocks: %w", ErrNoMemory, bs, n, err)
	}
	p.poolBlock = b
	return p, nil
}

// minBlockFor is the smallest power-of-two block size whose pool of
// poolBytes fits blockpool.MaxBlocks, for the error that suggests it.
func minBlockFor(poolBytes, bpt int64) int64 {
	b := int64(1)
	for b < 1<<30 && poolBytes/(b*bpt) > blockpool.MaxBlocks {
		b *= 2
	}
	return b
}

// Name returns "paged:B".
func (p *paged) Name() string { return fmt.Sprintf("paged:%d", p.bs) }

// Pool returns the block pool, for an engine that adds prefix caching
// (Sequence.MatchPrefix and Cache need token ids, which the strategy does
// not see); nil when the strategy counts its blocks (Env.CountBlocks).
func (p *paged) Pool() *blockpool.Pool { return p.pool }

// Admit appends the prompt to a new sequence and forks it for each further
// sample, so the prompt's blocks are shared.
func (p *paged) Admit(id SeqID, r Request) error {
	if err := r.validate(); err != nil {
		return err
	}
	if p.closed {
		return fmt.Errorf("%w: paged pool closed", ErrBadRequest)
	}
	if _, ok := p.seqs.get(id); ok {
		return fmt.Errorf("%w: %d", ErrDuplicateSeq, id)
	}
	if r.Prompt > p.env.MaxContext {
		return fmt.Errorf("%w: seq %d: prompt of %d tokens, max context %d", ErrTooLong, id, r.Prompt, p.env.MaxContext)
	}
	if p.counts != nil {
		return p.admitCount(id, r)
	}
	s := p.newSequence()
	hit := 0
	caching := !p.env.NoPrefixCaching && len(r.PrefixIDs) > 0
	var (
		best       *memoEntry
		at, common int
		keys       []blockpool.BlockHash // the prompt's block keys: p.keys, or the memo's own (read only)
	)
	if caching {
		best, at, common = p.memo.match(r.PrefixIDs, r.PrefixSpan)
		var reuse int
		keys, reuse = p.prefixKeys(p.keys[:0], r, best, common)
		if best == nil || reuse < len(keys) {
			p.keys = keys // the scratch buffer, grown
		}
		// vLLM never reuses the block holding the last prompt token: its
		// logits must be computed.
		use := min(len(keys), (r.Prompt-1)/p.bs)
		var hints []blockpool.BlockID
		if best != nil {
			hints = best.blocks[:min(reuse, use, len(best.blocks))]
		}
		// The prefix match and the rest of the prompt at once: a prompt
		// that does not fit leaves the pool as the match and a release
		// would, for less (Sequence.MatchAppend). The engine tries again
		// when memory frees up (every step, while this request heads its
		// queue): the memo keeps the keys, and the blocks found as the
		// next try's hints.
		var err error
		p.found, err = s.MatchAppend(p.found[:0], keys[:use], hints, r.Prompt)
		if err != nil {
			if !errors.Is(err, blockpool.ErrOutOfBlocks) {
				panic(fmt.Errorf("strategy: paged prefix match on a new sequence: %w", err))
			}
			p.keepSpare(s)
			p.memo.store(best, at, common, r.PrefixSpan, r.PrefixIDs, keys, p.found)
			p.st.AdmitFailures++
			return noMemory("admit", id, err)
		}
		hit = len(p.found) * p.bs
		p.crossAdmitted(p.found)
	} else if err := s.Append(r.Prompt); err != nil {
		if rerr := s.Release(); rerr != nil {
			panic(fmt.Errorf("strategy: paged release of a failed admission: %w", rerr))
		}
		p.keepSpare(s)
		p.st.AdmitFailures++
		return noMemory("admit", id, err)
	}
	if caching {
		if _, err := s.Cache(keys); err != nil {
			panic(fmt.Errorf("strategy: paged cache of a new sequence's full blocks: %w", err))
		}
		p.memo.store(best, at, common, r.PrefixSpan, r.PrefixIDs, keys, s.Blocks()[:len(keys)])
		p.st.PrefixQueryTokens += int64(r.Prompt)
		p.st.PrefixHitTokens += int64(hit)
	}
	samples := make([]*blockpool.Sequence, 1, r.N)
	samples[0] = s
	for range r.N - 1 {
		samples = append(samples, s.Fork())
	}
	ps := &pagedSeq{samples: samples, hit: hit}
	if caching {
		ps.cached = len(keys)
	}
	p.seqs.put(id, ps)
	p.st.Live++
	p.st.Tokens += int64(r.N) * int64(r.Prompt)
	p.st.Admits++
	if invariants.Enabled && caching {
		p.mustCheckCross()
	}
	return nil
}

// maxSpare bounds the released sequences paged keeps for reuse: their
// block tables keep their capacity (a long prompt's thousands of ids), so
// an admission after a release allocates none.
const maxSpare = 16

// newSequence returns an empty sequence over the pool: a released one when
// there is one.
func (p *paged) newSequence() *blockpool.Sequence {
	if n := len(p.spare); n > 0 {
		s := p.spare[n-1]
		p.spare = p.spare[:n-1]
		return s
	}
	return blockpool.NewSequence(p.pool)
}

// keepSpare keeps a released (empty) sequence for newSequence.
func (p *paged) keepSpare(s *blockpool.Sequence) {
	if len(p.spare) < maxSpare {
		p.spare = append(p.spare, s)
	}
}

// prefixKeys appends to dst the keys of the prompt's full B-token blocks
// that r.PrefixIDs determine, chained as vLLM chains block hashes: block j's
// key hashes block j−1's key, the id of the span holding the block's last
// token, and j. The chain stops at the first block the ids do not cover.
// The first reuse keys come from best, a memo entry whose ids share their
// first common entries with r's (nil: none): they are the keys of the
// blocks that end within those spans. When they are all the keys (a
// request tried again, or a turn that adds no full block), keys is
// best.keys[:reuse] itself, not a copy in dst: read only.
func (p *paged) prefixKeys(dst []blockpool.BlockHash, r Request, best *memoEntry, common int) (keys []blockpool.BlockHash, reuse int) {
	if best != nil {
		reuse = min(len(best.keys), common*r.PrefixSpan/p.bs, r.Prompt/p.bs)
		if reuse == r.Prompt/p.bs || ((reuse+1)*p.bs-1)/r.PrefixSpan >= len(r.PrefixIDs) {
			return best.keys[:reuse:reuse], reuse // the loop below adds none
		}
		dst = append(dst, best.keys[:reuse]...)
	}
	parent := blockpool.NoParent
	if reuse > 0 {
		parent = dst[reuse-1]
	}
	for j := reuse; j < r.Prompt/p.bs; j++ {
		k := ((j+1)*p.bs - 1) / r.PrefixSpan
		if k >= len(r.PrefixIDs) {
			break
		}
		key := blockKey(parent, j, r.PrefixIDs[k])
		dst = append(dst, key)
		parent = key
	}
	return dst, reuse
}

// blockKey is the key of block j, whose last token lies in the span of
// prefix id id, after a block of key parent (blockpool.NoParent for the
// first): SplitMix64's finalizer (Steele, Lea, Flood 2014), a bijection of
// 64-bit words, over the parent's key xor the id and the position, each
// spread by a multiplication with an odd constant. Only the keys' equality
// matters to the pool, and two prefixes' keys are equal by accident with
// a chance of about 2⁻⁶⁴, as for any 64-bit hash (blockpool.HashBlock
// says what that means). It takes two multiplications on the chain from
// parent to key where blockpool.HashBlock of the same three values, one
// byte at a time, takes twenty (blockKey was 13.7% of advise's CPU on the
// Mooncake trace as HashBlock).
func blockKey(parent blockpool.BlockHash, j int, id uint64) blockpool.BlockHash {
	x := uint64(parent) ^ id*0xbf58476d1ce4e5b9 ^ uint64(j+1)*0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return blockpool.BlockHash(x ^ x>>31)
}

// warmID is the sequence id Warm admits and releases (no engine uses it:
// the engine's ids are request indexes).
const warmID = SeqID(-1 << 63)

// Warm admits r's prompt as one sample, caching its full blocks, and
// releases it at once, so the blocks stay in the pool's free queue with
// their keys; the stats are those before the call. See PrefixCaching.
func (p *paged) Warm(r Request) (bool, error) {
	if p.env.NoPrefixCaching || len(r.PrefixIDs) == 0 {
		return false, nil
	}
	r.N = 1
	st := p.st
	defer func() { p.st = st }()
	if err := p.Admit(warmID, r); err != nil {
		if errors.Is(err, ErrNoMemory) {
			return false, nil
		}
		return false, err
	}
	return true, p.Release(warmID)
}

// PrefixHit returns the prompt tokens of id's admission that came from the
// prefix cache (0 for an unknown id).
func (p *paged) PrefixHit(id SeqID) int {
	if ps, ok := p.seqs.get(id); ok {
		return ps.hit
	}
	return 0
}

// Grow appends k tokens to every sample, all or nothing: it first counts the
// blocks all the appends need, copies on write included, against the free
// queue.
func (p *paged) Grow(id SeqID, k int) error {
	ps, ok := p.seqs.get(id)
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownSeq, id)
	}
	if c := p.counts; c != nil && ps.n == 1 && k > 0 && ps.tokens+k <= min(ps.blocks*p.bs, p.env.MaxContext) {
		// Counted, one sample, within its last block and the context (a
		// decode step's token, mostly): growCount's counts without the call.
		ps.tokens += k
		c.heldSlots += int64(k)
		p.st.Tokens += int64(k)
		p.st.Grows++
		if invariants.Enabled {
			p.mustCheckCounts()
		}
		return nil
	}
	if k < 0 {
		return fmt.Errorf("%w: seq %d: grow by %d", ErrBadRequest, id, k)
	}
	if k == 0 {
		p.st.Grows++
		return nil
	}
	samples := ps.samples
	tokens := ps.tokens
	if samples != nil {
		tokens = samples[0].Tokens()
	}
	total := tokens + k
	if total > p.env.MaxContext {
		return fmt.Errorf("%w: seq %d: %d tokens, max context %d", ErrTooLong, id, total, p.env.MaxContext)
	}
	if p.counts != nil {
		return p.growCount(id, ps, k)
	}
	if len(samples) == 1 {
		return p.growOne(id, samples[0], tokens, k)
	}
	return p.growSamples(id, samples, tokens, k)
}

// growSamples is Grow of k > 0 tokens within the context to every sample:
// it counts the blocks all the appends need first, so that it is all or
// nothing over the samples.
func (p *paged) growSamples(id SeqID, samples []*blockpool.Sequence, tokens, k int) error {
	total := tokens + k
	need, cows := p.blocksNeeded(samples, total)
	if need > p.pool.NumFree() {
		p.st.GrowFailures++
		return noMemory("grow", id, fmt.Errorf("%w: need %d blocks, %d free", blockpool.ErrOutOfBlocks, need, p.pool.NumFree()))
	}
	free := p.pool.NumFree()
	for _, s := range samples {
		if err := s.Append(k); err != nil {
			panic(fmt.Errorf("strategy: paged append after counting %d blocks needed: %w", need, err))
		}
	}
	if invariants.Enabled && free-p.pool.NumFree() != need {
		panic(fmt.Errorf("strategy: paged grow counted %d blocks, took %d", need, free-p.pool.NumFree()))
	}
	p.st.CopiedBytes += int64(cows) * int64(tokens%p.bs) * p.bpt
	p.st.Tokens += int64(len(samples)) * int64(k)
	p.st.Grows++
	return nil
}

// growOne is Grow of a request with one sample, k > 0 tokens within the
// context: the sample's Append is all-or-nothing and needs exactly the
// blocks blocksNeeded counts, so it is tried without counting first; the
// count is made only for the error of a grow that does not fit.
func (p *paged) growOne(id SeqID, s *blockpool.Sequence, tokens, k int) error {
	var copied int64 // a partly filled last block held by others or cached is copied
	if r := tokens % p.bs; r != 0 {
		last := lastBlock(s)
		if _, cached := p.pool.CachedHash(last); cached || p.pool.RefCount(last) > 1 {
			copied = int64(r) * p.bpt
		}
	}
	var need, free int
	if invariants.Enabled {
		need, _ = p.blocksNeeded([]*blockpool.Sequence{s}, tokens+k)
		free = p.pool.NumFree()
	}
	if err := s.Append(k); err != nil {
		if !errors.Is(err, blockpool.ErrOutOfBlocks) {
			panic(fmt.Errorf("strategy: paged append of %d tokens: %w", k, err))
		}
		need, _ := p.blocksNeeded([]*blockpool.Sequence{s}, tokens+k)
		p.st.GrowFailures++
		return noMemory("grow", id, fmt.Errorf("%w: need %d blocks, %d free", blockpool.ErrOutOfBlocks, need, p.pool.NumFree()))
	}
	if invariants.Enabled && free-p.pool.NumFree() != need {
		panic(fmt.Errorf("strategy: paged grow counted %d blocks, took %d", need, free-p.pool.NumFree()))
	}
	p.st.CopiedBytes += copied
	p.st.Tokens += int64(k)
	p.st.Grows++
	return nil
}

// blocksNeeded counts the blocks that appending up to total tokens in every
// sample takes, and how many of them are copies on write. Samples append in
// order; a partly filled last block shared by m of them is copied by each
// but the last (who then holds it alone), or by all m if someone else holds
// it too or it is in the prefix cache (blockpool.Sequence.Append's rule).
func (p *paged) blocksNeeded(samples []*blockpool.Sequence, total int) (need, cows int) {
	tokens := samples[0].Tokens()
	for _, s := range samples {
		need += (total+p.bs-1)/p.bs - len(s.Blocks())
	}
	if tokens%p.bs == 0 {
		return need, 0
	}
	// Count the holders among the samples of each distinct last block; n is
	// small (parallel samples), so a quadratic scan beats a map.
	for i, s := range samples {
		id := lastBlock(s)
		m, seen := 0, false
		for j, o := range samples {
			if lastBlock(o) == id {
				if j < i {
					seen = true
					break
				}
				m++
			}
		}
		if seen {
			continue
		}
		if _, cached := p.pool.CachedHash(id); cached || p.pool.RefCount(id) > m {
			cows += m
		} else {
			cows += m - 1
		}
	}
	return need + cows, cows
}

// Release returns every sample's blocks to the pool.
func (p *paged) Release(id SeqID) error { return p.drop(id, &p.st.Releases) }

// Preempt returns every sample's blocks to the pool, for recompute.
func (p *paged) Preempt(id SeqID) error { return p.drop(id, &p.st.Preempts) }

func (p *paged) drop(id SeqID, counter *int64) error {
	ps, ok := p.seqs.get(id)
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownSeq, id)
	}
	if p.counts != nil {
		p.dropCount(ps)
	}
	p.crossDropped(ps)
	for _, s := range ps.samples {
		p.st.Tokens -= int64(s.Tokens())
		if err := s.Release(); err != nil {
			panic(fmt.Errorf("strategy: release of a paged sequence: %w", err))
		}
		p.keepSpare(s)
	}
	p.seqs.del(id)
	p.st.Live--
	*counter++
	if invariants.Enabled && p.counts != nil {
		p.mustCheckCounts()
	}
	if invariants.Enabled && ps.cached > 0 {
		p.mustCheckCross()
	}
	return nil
}

// Tokens returns the tokens per sample of id.
func (p *paged) Tokens(id SeqID) (int, bool) {
	ps, ok := p.seqs.get(id)
	if !ok {
		return 0, false
	}
	if ps.samples == nil {
		return ps.tokens, true
	}
	return ps.samples[0].Tokens(), true
}

// Usage maps the pool's slot breakdown to bytes. Token states count a shared
// block once (the samples share the prompt's KV); internal is the empty
// slots of held blocks (less than one block per sample); reservation is held
// blocks with nothing written (none: blocks are allocated on demand); free
// is the free blocks, the null block and the allocator's rounding of the
// pool; external is the allocator's cached free memory, outside the pool.
func (p *paged) Usage() Breakdown {
	if p.closed {
		return Breakdown{External: p.env.Alloc.Stats().CachedFree()}
	}
	ps := p.poolStats()
	return Breakdown{
		TokenStates: ps.TokenSlots * p.bpt,
		Reservation: ps.ReservedSlots * p.bpt,
		Internal:    ps.InternalSlots * p.bpt,
		External:    p.env.Alloc.Stats().CachedFree(),
		CachedIdle:  ps.CachedIdleSlots * p.bpt,
		Free:        ps.FreeSlots*p.bpt + p.blockBytes + (p.poolBlock.Size - int64(ps.NumBlocks)*p.blockBytes),
	}
}

// Stats returns the counters.
func (p *paged) Stats() Stats { return p.st }

// Close releases every live sequence and frees the pool's allocation.
func (p *paged) Close() error {
	if p.closed {
		return nil
	}
	for _, id := range p.seqs.ids() {
		if err := p.drop(id, &p.st.Releases); err != nil {
			return err
		}
	}
	if err := p.env.Alloc.Free(p.poolBlock.Handle); err != nil {
		return fmt.Errorf("strategy: free of the paged pool: %w", err)
	}
	p.closed = true
	return nil
}

// lastBlock is the last block of a non-empty sequence's table.
func lastBlock(s *blockpool.Sequence) blockpool.BlockID {
	b := s.Blocks()
	return b[len(b)-1]
}
