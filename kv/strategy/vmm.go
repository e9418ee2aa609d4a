// VMM strategy: one virtual range per sample, growing page by page.
// See doc.go for the overview.

package strategy

import (
	"fmt"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// vmmSeq is one live sequence of vmm:P: one range per sample.
//
// Invariant: blocks[i].Size == ceil(tokens × bpt / P) × P.
type vmmSeq struct {
	tokens int           // tokens per sample; grows on Grow
	blocks []alloc.Block // one range per sample; Size is the mapped bytes
	mark   uint64        // DecodeSteps: the call that saw it last (an id given twice)
}

// growingAllocator is an allocator that grows blocks in place: what vmm:P
// needs of Env.Alloc.
type growingAllocator interface {
	alloc.Allocator
	alloc.Grower
}

// vmmStrategy is vmm:P (vAttention style): each sample is a range of
// env.Alloc, an alloc.Grower with page (GrowUnit) P such as the vmm
// allocator, allocated with the prompt's bytes and grown in place with Grow
// as decode writes tokens, so a page is mapped only when a token first
// lands in it. Nothing is ever copied, and no sample holds more than one
// partly filled page.
type vmmStrategy struct {
	env    Env
	a      growingAllocator
	page   int64
	bpt    int64
	seqs   map[SeqID]*vmmSeq // live sequences
	mapped int64             // Σ blocks[i].Size over live samples
	st     Stats
	// DecodeSteps' scratch: the sequences of its ids, and its calls.
	dseqs []*vmmSeq
	epoch uint64
}

func newVMM(env Env, a growingAllocator, page int64) *vmmStrategy {
	return &vmmStrategy{env: env, a: a, page: page, bpt: env.Model.KVBytesPerToken(env.KVDType, env.TP),
		seqs: make(map[SeqID]*vmmSeq)}
}

// Name returns "vmm:P".
func (v *vmmStrategy) Name() string { return "vmm:" + mem.FormatBytesExact(v.page) }

// pagesFor is the pages of a range of n tokens.
func (v *vmmStrategy) pagesFor(tokens int) int64 {
	return (int64(tokens)*v.bpt + v.page - 1) / v.page
}

// Admit allocates one range per sample, mapping the prompt's pages.
func (v *vmmStrategy) Admit(id SeqID, r Request) error {
	if err := r.validate(); err != nil {
		return err
	}
	if _, ok := v.seqs[id]; ok {
		return fmt.Errorf("%w: %d", ErrDuplicateSeq, id)
	}
	if r.Prompt > v.env.MaxContext {
		return fmt.Errorf("%w: seq %d: prompt of %d tokens, max context %d", ErrTooLong, id, r.Prompt, v.env.MaxContext)
	}
	blocks := make([]alloc.Block, 0, r.N)
	for range r.N {
		b, err := v.a.Alloc(int64(r.Prompt)*v.bpt, 0)
		if err != nil {
			for _, b := range blocks {
				v.free(b)
			}
			v.st.AdmitFailures++
			return noMemory("admit", id, err)
		}
		blocks = append(blocks, b)
	}
	for _, b := range blocks {
		v.mapped += b.Size
	}
	v.seqs[id] = &vmmSeq{tokens: r.Prompt, blocks: blocks}
	v.st.Live++
	v.st.Tokens += int64(r.N) * int64(r.Prompt)
	v.st.Admits++
	return nil
}

func (v *vmmStrategy) free(b alloc.Block) {
	if err := v.a.Free(b.Handle); err != nil {
		panic(fmt.Errorf("strategy: free of an owned range: %w", err))
	}
}

// Grow maps the pages the new tokens need in every sample, all or nothing:
// it checks the pages against MaxAllocatable (alloc.Grower promises that
// grows needing at most that much together succeed) and the size against
// MaxGrowSize (vmm's MaxRange) before it grows any sample.
func (v *vmmStrategy) Grow(id SeqID, k int) error {
	s, ok := v.seqs[id]
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownSeq, id)
	}
	if k < 0 {
		return fmt.Errorf("%w: seq %d: grow by %d", ErrBadRequest, id, k)
	}
	total := s.tokens + k
	if total > v.env.MaxContext {
		return fmt.Errorf("%w: seq %d: %d tokens, max context %d", ErrTooLong, id, total, v.env.MaxContext)
	}
	newSize := int64(total) * v.bpt
	if newSize > v.a.MaxGrowSize() {
		return fmt.Errorf("%w: seq %d: %d bytes exceed the vmm range of %s", ErrTooLong, id, newSize,
			mem.FormatBytesExact(v.a.MaxGrowSize()))
	}
	extra := int64(len(s.blocks)) * (v.pagesFor(total) - v.pagesFor(s.tokens)) * v.page
	if extra > v.a.MaxAllocatable() {
		v.st.GrowFailures++
		// The allocator is not asked (a partial grow cannot be undone), so
		// it does not count this OOM; the error has its shape.
		as := v.a.Stats()
		err := &alloc.OOMError{Requested: extra, AllocSize: extra, Capacity: as.Capacity,
			DeviceFree: as.Capacity - as.OtherUse - as.Reserved, Allocated: as.Allocated, Reserved: as.Reserved}
		return noMemory("grow", id, err)
	}
	v.growRanges(s, total, "a grow")
	v.st.Grows++
	return nil
}

// growRanges grows every sample's range of s to total tokens, mapping the
// pages they need; the caller checked that they are free (what names it
// in the panic if the allocator disagrees).
func (v *vmmStrategy) growRanges(s *vmmSeq, total int, what string) {
	for i, b := range s.blocks {
		nb, err := v.a.Grow(b.Handle, int64(total)*v.bpt)
		if err != nil {
			panic(fmt.Errorf("strategy: vmm grow in %s after the free-memory check: %w", what, err))
		}
		v.mapped += nb.Size - b.Size
		s.blocks[i] = nb
	}
	v.st.Tokens += int64(len(s.blocks)) * int64(total-s.tokens)
	s.tokens = total
}

// Release unmaps every sample's range.
func (v *vmmStrategy) Release(id SeqID) error { return v.drop(id, &v.st.Releases) }

// Preempt unmaps every sample's range, for recompute.
func (v *vmmStrategy) Preempt(id SeqID) error { return v.drop(id, &v.st.Preempts) }

func (v *vmmStrategy) drop(id SeqID, counter *int64) error {
	s, ok := v.seqs[id]
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownSeq, id)
	}
	for _, b := range s.blocks {
		v.free(b)
		v.mapped -= b.Size
	}
	v.st.Tokens -= int64(len(s.blocks)) * int64(s.tokens)
	v.st.Live--
	*counter++
	delete(v.seqs, id)
	return nil
}

// Tokens returns the tokens per sample of id.
func (v *vmmStrategy) Tokens(id SeqID) (int, bool) {
	s, ok := v.seqs[id]
	if !ok {
		return 0, false
	}
	return s.tokens, true
}

// Usage: token states are the tokens written; internal is the unwritten
// part of each sample's last page (less than P per sample); nothing is
// reserved ahead, and the vmm allocator has no cached free memory.
func (v *vmmStrategy) Usage() Breakdown {
	tok := v.st.Tokens * v.bpt
	return Breakdown{
		TokenStates: tok,
		Internal:    v.mapped - tok,
		External:    v.a.Stats().CachedFree(),
	}
}

// Stats returns the counters.
func (v *vmmStrategy) Stats() Stats { return v.st }

// Close releases every live sequence.
func (v *vmmStrategy) Close() error {
	for _, id := range sortedIDs(v.seqs) {
		if err := v.drop(id, &v.st.Releases); err != nil {
			return err
		}
	}
	return nil
}
