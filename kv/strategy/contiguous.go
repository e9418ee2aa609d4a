// Contiguous strategies: contiguous-max (and its pow2 and oracle variants)
// and contiguous-grow.
// See doc.go for the overview.

package strategy

import (
	"fmt"
	"math/bits"

	"github.com/gpufrag/gpufrag/alloc"
)

// contiguousMode is how a contiguous strategy sizes and grows a reservation.
type contiguousMode uint8

const (
	reserveMax    contiguousMode = iota // MaxContext tokens, never grows
	reservePow2                         // prompt + next power of two ≥ true output, never grows
	reserveOracle                       // prompt + true output, never grows
	growDouble                          // prompt + headroom, doubles by reallocate-and-copy
)

// growHeadroom is contiguous-grow's initial room for output, in tokens: 64,
// a few decode steps' worth, so that short answers never reallocate, while
// the first allocation stays within a few percent of a typical (hundreds of
// tokens) prompt. After that the capacity doubles, as a vector's does, so a
// sequence of L tokens reallocates about log2(L/prompt) times and copies
// less than 2L tokens in all. The alternative, a fixed chunk (Hugging Face's
// DynamicCache is the degenerate chunk of one token: torch.cat every step),
// copies O(L²/chunk) bytes, a cost no serving framework pays; doubling
// isolates the cost this strategy is about, the holes its freed old buffers
// leave in the allocator, at the price of up to half its capacity reserved.
const growHeadroom = 64

// contiguousSeq is one live sequence of a contiguous strategy: one
// allocation per sample, all of the same capacity and fill.
//
// Invariants: tokens ≤ capacity ≤ MaxContext; blocks[i].Size ≥ capacity × bpt.
type contiguousSeq struct {
	tokens   int           // tokens per sample; grows on Grow
	capacity int           // tokens each block was sized for; grows on reallocation
	final    int           // tokens per sample at the end: prompt + true output, or more if grown past it
	blocks   []alloc.Block // one per sample
	mark     uint64        // DecodeSteps: the call that saw it last (an id given twice)
}

// contiguous implements contiguous-max, its pow2 and oracle variants, and
// contiguous-grow. Each sample is one allocation from env.Alloc on stream 0.
type contiguous struct {
	env  Env
	mode contiguousMode
	bpt  int64                    // KV bytes per token
	seqs map[SeqID]*contiguousSeq // live sequences; Admit adds, Release and Preempt remove
	st   Stats
	// held is Σ block sizes over live samples, kept so Usage needs no walk
	// over the allocator.
	held     int64
	reserved int64 // Σ capacity × bpt over live samples
	// willUse is Σ use(s) × bpt over live samples: the part of each
	// reservation that the sequence's tokens will fill by its end.
	willUse int64
	// DecodeSteps' scratch: the sequences of its ids, and its calls.
	dseqs []*contiguousSeq
	epoch uint64
}

// use is the tokens of s's capacity that its tokens will fill by its end.
func (s *contiguousSeq) use() int { return min(s.capacity, s.final) }

func newContiguous(env Env, mode contiguousMode) *contiguous {
	return &contiguous{env: env, mode: mode, bpt: env.Model.KVBytesPerToken(env.KVDType, env.TP),
		seqs: make(map[SeqID]*contiguousSeq)}
}

// Name returns the spec.
func (c *contiguous) Name() string {
	switch c.mode {
	case reservePow2:
		return "contiguous-max:pow2"
	case reserveOracle:
		return "contiguous-max:oracle"
	case growDouble:
		return "contiguous-grow"
	}
	return "contiguous-max"
}

// initialCapacity is the tokens reserved per sample at Admit.
func (c *contiguous) initialCapacity(r Request) int {
	maxCtx := c.env.MaxContext
	switch c.mode {
	case reservePow2:
		return r.Prompt + min(nextPow2(r.TrueOutput), maxCtx-r.Prompt)
	case reserveOracle:
		return r.Prompt + min(r.TrueOutput, maxCtx-r.Prompt)
	case growDouble:
		return min(r.Prompt+growHeadroom, maxCtx)
	}
	return maxCtx
}

// nextPow2 is the smallest power of two ≥ n, and 0 for n = 0.
func nextPow2(n int) int {
	if n <= 1 {
		return n
	}
	return 1 << bits.Len(uint(n-1))
}

// allocN allocates n blocks of size bytes, all or nothing.
func (c *contiguous) allocN(n int, size int64) ([]alloc.Block, error) {
	blocks := make([]alloc.Block, 0, n)
	for range n {
		b, err := c.env.Alloc.Alloc(size, 0)
		if err != nil {
			c.freeAll(blocks)
			return nil, err
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// freeAll frees blocks; a failure is a broken invariant (we own them).
func (c *contiguous) freeAll(blocks []alloc.Block) {
	for _, b := range blocks {
		if err := c.env.Alloc.Free(b.Handle); err != nil {
			panic(fmt.Errorf("strategy: free of an owned block: %w", err))
		}
	}
}

// Admit allocates one block of the initial capacity per sample.
func (c *contiguous) Admit(id SeqID, r Request) error {
	if err := r.validate(); err != nil {
		return err
	}
	if _, ok := c.seqs[id]; ok {
		return fmt.Errorf("%w: %d", ErrDuplicateSeq, id)
	}
	if r.Prompt > c.env.MaxContext {
		return fmt.Errorf("%w: seq %d: prompt of %d tokens, max context %d", ErrTooLong, id, r.Prompt, c.env.MaxContext)
	}
	capTok := c.initialCapacity(r)
	blocks, err := c.allocN(r.N, int64(capTok)*c.bpt)
	if err != nil {
		c.st.AdmitFailures++
		return noMemory("admit", id, err)
	}
	s := &contiguousSeq{tokens: r.Prompt, capacity: capTok, final: r.Prompt + r.TrueOutput, blocks: blocks}
	c.seqs[id] = s
	for _, b := range blocks {
		c.held += b.Size
	}
	c.reserved += int64(r.N) * int64(capTok) * c.bpt
	c.willUse += int64(r.N) * int64(s.use()) * c.bpt
	c.st.Live++
	c.st.Tokens += int64(r.N) * int64(r.Prompt)
	c.st.Admits++
	return nil
}

// Grow fills the reservation; contiguous-grow reallocates every sample to
// double the capacity when it overflows: allocate the new block while the
// old one is still held (the copy needs both), copy the tokens, free the old.
func (c *contiguous) Grow(id SeqID, k int) error {
	s, ok := c.seqs[id]
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownSeq, id)
	}
	if k < 0 {
		return fmt.Errorf("%w: seq %d: grow by %d", ErrBadRequest, id, k)
	}
	total := s.tokens + k
	if total > c.env.MaxContext {
		return fmt.Errorf("%w: seq %d: %d tokens, max context %d", ErrTooLong, id, total, c.env.MaxContext)
	}
	if total > s.capacity {
		if c.mode != growDouble {
			return fmt.Errorf("%w: seq %d: %d tokens, %d reserved by %s", ErrTooLong, id, total, s.capacity, c.Name())
		}
		newCap := min(max(total, 2*s.capacity), c.env.MaxContext)
		if err := c.realloc(s, newCap); err != nil {
			c.st.GrowFailures++
			return noMemory("grow", id, err)
		}
	}
	c.st.Tokens += int64(len(s.blocks)) * int64(k)
	s.tokens = total
	if total > s.final {
		// Grown past the true output the engine announced.
		old := s.use()
		s.final = total
		c.willUse += int64(len(s.blocks)) * int64(s.use()-old) * c.bpt
	}
	c.st.Grows++
	return nil
}

// realloc moves every sample of s to a block of newCap tokens, all or
// nothing: the new blocks are all allocated before any old one is freed,
// which is also the peak a real engine reaches when it reallocates a batch.
func (c *contiguous) realloc(s *contiguousSeq, newCap int) error {
	nb, err := c.allocN(len(s.blocks), int64(newCap)*c.bpt)
	if err != nil {
		return err
	}
	for _, b := range s.blocks {
		c.held -= b.Size
	}
	c.freeAll(s.blocks)
	for _, b := range nb {
		c.held += b.Size
	}
	n := int64(len(s.blocks))
	c.reserved += n * int64(newCap-s.capacity) * c.bpt
	c.st.Reallocs += n
	c.st.CopiedBytes += n * int64(s.tokens) * c.bpt
	old := s.use()
	s.blocks, s.capacity = nb, newCap
	c.willUse += n * int64(s.use()-old) * c.bpt
	return nil
}

// Release frees every sample's block.
func (c *contiguous) Release(id SeqID) error { return c.drop(id, &c.st.Releases) }

// Preempt frees every sample's block, for recompute.
func (c *contiguous) Preempt(id SeqID) error { return c.drop(id, &c.st.Preempts) }

func (c *contiguous) drop(id SeqID, counter *int64) error {
	s, ok := c.seqs[id]
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownSeq, id)
	}
	c.freeAll(s.blocks)
	n := int64(len(s.blocks))
	for _, b := range s.blocks {
		c.held -= b.Size
	}
	c.reserved -= n * int64(s.capacity) * c.bpt
	c.willUse -= n * int64(s.use()) * c.bpt
	c.st.Tokens -= n * int64(s.tokens)
	c.st.Live--
	*counter++
	delete(c.seqs, id)
	return nil
}

// Tokens returns the tokens per sample of id.
func (c *contiguous) Tokens(id SeqID) (int, bool) {
	s, ok := c.seqs[id]
	if !ok {
		return 0, false
	}
	return s.tokens, true
}

// Usage splits memory into Breakdown's shares: token states are the tokens
// written; the reservation is the part of each sample's capacity that its
// future tokens will fill (up to prompt + true output); internal is the rest
// of the capacity, which the sequence will never fill (Orca (Max)'s
// over-reservation, contiguous-grow's doubling overshoot), plus the
// allocator's rounding of each block beyond capacity × bytes per token;
// external is the allocator's cached free memory.
//
// The first two are the vLLM paper's Fig. 2 "token states" and
// "reservation". Its "internal frag." is over-provisioning alone (§3.1:
// "internal fragmentation due to over-provisioning for potential maximum
// sequence lengths, and external fragmentation from the memory allocator
// like the buddy allocator"), and the allocator's rounding falls in its
// "external frag. & others": Orca (Oracle), which reserves exactly prompt +
// output on a buddy allocator, has no internal segment there. So the
// paper's internal share is internal minus the rounding, and its external
// share external plus the rounding; for contiguous-max:oracle the paper's
// external share is internal + external here.
func (c *contiguous) Usage() Breakdown {
	tok := c.st.Tokens * c.bpt
	return Breakdown{
		TokenStates: tok,
		Reservation: c.willUse - tok,
		Internal:    c.held - c.willUse,
		External:    c.env.Alloc.Stats().CachedFree(),
	}
}

// Stats returns the counters.
func (c *contiguous) Stats() Stats { return c.st }

// Close releases every live sequence.
func (c *contiguous) Close() error {
	for _, id := range sortedIDs(c.seqs) {
		if err := c.drop(id, &c.st.Releases); err != nil {
			return err
		}
	}
	return nil
}

// ReservedTokens implements Reserving: the tokens per sample that Admit
// reserves for r, and true, for the contiguous-max family; contiguous-grow,
// whose reservation grows later, returns its initial capacity and false.
func (c *contiguous) ReservedTokens(r Request) (int, bool) {
	return c.initialCapacity(r), c.mode != growDouble
}

// LiveBlocks implements Movable: it appends every live sample's block, in
// SeqID order, sample order within a sequence.
func (c *contiguous) LiveBlocks(dst []alloc.Block) []alloc.Block {
	for _, id := range sortedIDs(c.seqs) {
		dst = append(dst, c.seqs[id].blocks...)
	}
	return dst
}

// Moved implements Movable: the block with handle h now lives at b.Addr.
func (c *contiguous) Moved(h alloc.Handle, b alloc.Block) error {
	for _, s := range c.seqs {
		for i := range s.blocks {
			if s.blocks[i].Handle == h {
				if b.Size != s.blocks[i].Size {
					return fmt.Errorf("%w: moved block %d changed size from %d to %d", ErrBadRequest, h, s.blocks[i].Size, b.Size)
				}
				s.blocks[i] = b
				return nil
			}
		}
	}
	return fmt.Errorf("%w: no live block has handle %d", ErrUnknownSeq, h)
}
