// Strategy interface, requests, the memory breakdown and Parse.
// See doc.go for the overview.

package strategy

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

// Sentinel errors. They are wrapped with the offending value; check them with
// errors.Is.
var (
	// ErrBadSpec means ParseSpec or Parse got an unknown strategy or bad
	// arguments, or a strategy and an allocator (CheckPair) or Env it cannot
	// run on.
	ErrBadSpec = errors.New("bad strategy spec")
	// ErrNoMemory means Admit or Grow could not get the memory it needed. It
	// wraps the cause too: the allocator's *alloc.OOMError (errors.Is
	// alloc.ErrOutOfMemory) or blockpool.ErrOutOfBlocks. Nothing changed in
	// the strategy's state; an engine preempts someone or fails the request.
	ErrNoMemory = errors.New("strategy: out of KV memory")
	// ErrTooLong means a sequence would exceed Env.MaxContext, or the
	// reservation a contiguous strategy made for it at Admit (pow2 and oracle
	// reserve less than the context).
	ErrTooLong = errors.New("strategy: sequence longer than its limit")
	// ErrBadRequest means a request with a non-positive prompt or sample
	// count, a negative output length, or a negative growth.
	ErrBadRequest = errors.New("strategy: bad request")
	// ErrUnknownSeq means a SeqID that is not admitted (never, or released).
	ErrUnknownSeq = errors.New("strategy: unknown sequence")
	// ErrDuplicateSeq means Admit of a SeqID that is already live.
	ErrDuplicateSeq = errors.New("strategy: sequence already admitted")
)

// SeqID names a request for the strategy. The engine chooses the ids; a
// released id may be admitted again.
type SeqID int64

// Request is what Admit needs to know about a request.
type Request struct {
	// Prompt is the number of prompt tokens, whose KV the prefill writes at
	// once (> 0).
	Prompt int
	// MaxOutput is the request's max_tokens (≥ 0). Only informative here:
	// contiguous-max reserves up to Env.MaxContext, as Orca's Max baseline
	// and FasterTransformer do, because a framework does not trust it.
	MaxOutput int
	// TrueOutput is the number of tokens the request will really generate,
	// which only a simulation knows (≥ 0). contiguous-max:pow2 and :oracle
	// size their reservation from it; other strategies ignore it.
	TrueOutput int
	// PrefixIDs identify the prompt's content in spans of PrefixSpan tokens
	// (Mooncake's hash_ids: one id per 512-token block, equal ids at equal
	// positions meaning equal tokens); nil when unknown. paged derives its
	// own block keys from them and reuses cached blocks of the longest
	// matching prefix; other strategies ignore them.
	PrefixIDs  []uint64
	PrefixSpan int // tokens per PrefixIDs entry (> 0 when PrefixIDs is set)
	// N is the number of parallel samples (≥ 1). Each sample has its own
	// output; every Grow adds tokens to each sample. Contiguous and vmm
	// strategies give each sample its own copy of the prompt's KV; paged
	// shares the prompt's blocks (blockpool.Sequence.Fork, copy-on-write of a
	// partly filled last block).
	N int
}

func (r Request) validate() error {
	if r.Prompt <= 0 || r.N <= 0 || r.MaxOutput < 0 || r.TrueOutput < 0 {
		return fmt.Errorf("%w: prompt=%d max-output=%d true-output=%d n=%d", ErrBadRequest,
			r.Prompt, r.MaxOutput, r.TrueOutput, r.N)
	}
	if len(r.PrefixIDs) > 0 && r.PrefixSpan <= 0 {
		return fmt.Errorf("%w: %d prefix ids with span %d", ErrBadRequest, len(r.PrefixIDs), r.PrefixSpan)
	}
	return nil
}

// PrefixCaching is implemented by strategies with a prefix cache (paged).
// PrefixHit is the number of prompt tokens of id's last Admit whose KV came
// from the cache, so the engine computes only the rest of the prefill.
//
// Warm leaves r's prompt in the cache as a request that ran it and
// finished before the run would have left it (a benchmark repeated
// against one server): its full blocks cached and free, most recently
// used, evicting older cached blocks when the pool is full. It counts
// nothing in Stats and reports whether the prompt fit; it is false, with
// nothing cached, for a request without prefix ids or with prefix caching
// off, and when no sequence is live at the call the pool is as a run that
// went before left it.
type PrefixCaching interface {
	PrefixHit(id SeqID) int
	Warm(r Request) (bool, error)
}

// Movable is implemented by strategies whose KV lives in allocator blocks
// that a defragmenter may relocate (the contiguous strategies). LiveBlocks
// appends every live block; after alloc.Relocator.Relocate moved one, Moved
// tells the strategy its new place, so no sequence keeps a stale address.
type Movable interface {
	LiveBlocks(dst []alloc.Block) []alloc.Block
	Moved(h alloc.Handle, b alloc.Block) error
}

// Reserving is implemented by strategies that may reserve a sequence's whole
// KV cache at Admit. ReservedTokens returns the tokens per sample Admit would
// reserve for r and whether that is the whole sequence (true for the
// contiguous-max family); an engine uses it for admission control without
// trying the allocation.
type Reserving interface {
	ReservedTokens(r Request) (tokens int, whole bool)
}

// Strategy maps sequences' KV caches onto an allocator. A Strategy is
// deterministic and not safe for concurrent use; the engine's scheduler owns
// it. Every method either succeeds or changes nothing in the strategy (the
// allocator underneath may still have changed its cache: a failed caching
// allocator request releases cached segments before it gives up).
type Strategy interface {
	// Name is the canonical spec, e.g. "paged:16" (Parse(Name()) builds an
	// equivalent strategy).
	Name() string
	// Admit reserves what the strategy needs for a new sequence's prompt, in
	// each of its r.N samples: the whole reservation (contiguous-max), the
	// prompt plus headroom (contiguous-grow), the prompt's blocks (paged) or
	// pages (vmm). It fails with ErrNoMemory, ErrTooLong, ErrBadRequest or
	// ErrDuplicateSeq.
	Admit(id SeqID, r Request) error
	// Grow records k more tokens (k ≥ 0) in each sample of id, as decode
	// produces them. It does nothing within a reservation, reallocates and
	// copies (contiguous-grow, Stats.CopiedBytes), allocates blocks (paged)
	// or maps pages (vmm). It fails with ErrNoMemory, ErrTooLong,
	// ErrBadRequest or ErrUnknownSeq.
	Grow(id SeqID, k int) error
	// Release frees everything id holds: the request finished.
	Release(id SeqID) error
	// Preempt frees everything id holds so that it can be recomputed later
	// (vLLM's recompute preemption); it differs from Release only in the
	// counters. The engine admits the id again to resume it.
	Preempt(id SeqID) error
	// Tokens is the number of tokens id holds per sample (prompt + output so
	// far), and whether id is live.
	Tokens(id SeqID) (int, bool)
	// Usage splits the KV memory into the vLLM paper's categories.
	Usage() Breakdown
	// Stats returns the counters.
	Stats() Stats
	// Close releases every live sequence, in SeqID order (counted as
	// releases), and frees the strategy's own memory (paged's pool). The
	// strategy must not be used afterwards.
	Close() error
}

// Breakdown splits the memory a strategy is responsible for into the vLLM
// paper's categories (§2.3, Fig. 2), plus the research note's cached-idle
// class and a Free class for memory the strategy holds but has assigned to no
// sequence (the unused part of a paged pool). All fields are bytes and never
// negative.
//
//	Held()      = TokenStates + Reservation + Internal  (memory held for live sequences)
//	Footprint() = Held() + CachedIdle + Free           (memory the strategy holds from the allocator)
//
// External is not part of either: it is the allocator's cached free memory
// (alloc.Stats.CachedFree, reserved − allocated), the holes in its segments
// that the strategy's requests left behind. It covers the whole allocator,
// so if the engine allocates activations from the same allocator, their
// holes count too.
type Breakdown struct {
	TokenStates int64 // KV of tokens really stored (each sample's copy counted)
	Reservation int64 // reserved for future tokens of live sequences
	Internal    int64 // rounding inside held memory: partly filled blocks, pages, allocator rounding
	External    int64 // free memory stranded in the allocator's segments
	CachedIdle  int64 // evictable prefix-cache blocks in a paged pool
	Free        int64 // held by the strategy for no sequence (a paged pool's free blocks)
}

// Held is the memory held for live sequences.
func (b Breakdown) Held() int64 { return b.TokenStates + b.Reservation + b.Internal }

// Footprint is the memory the strategy holds from its allocator.
func (b Breakdown) Footprint() int64 { return b.Held() + b.CachedIdle + b.Free }

// KVWaste is the share of the memory held for live sequences that holds no
// token: frag.KVWaste(Held, TokenStates), 0 when nothing is held.
func (b Breakdown) KVWaste() float64 { return frag.KVWaste(b.Held(), b.TokenStates) }

// String renders the breakdown on one line in exact byte units.
func (b Breakdown) String() string {
	f := mem.FormatBytesExact
	return fmt.Sprintf("tokens=%s reservation=%s internal=%s external=%s cached-idle=%s free=%s",
		f(b.TokenStates), f(b.Reservation), f(b.Internal), f(b.External), f(b.CachedIdle), f(b.Free))
}

// Stats are a strategy's gauges and counters.
type Stats struct {
	Live   int   // live sequences (requests, not samples)
	Tokens int64 // Σ tokens held over live samples

	Admits        int64 // successful Admit calls
	AdmitFailures int64 // Admit calls that failed with ErrNoMemory
	Grows         int64 // successful Grow calls
	GrowFailures  int64 // Grow calls that failed with ErrNoMemory
	Releases      int64 // Release calls
	Preempts      int64 // Preempt calls

	Reallocs    int64 // contiguous-grow reallocations (one per sample)
	CopiedBytes int64 // KV bytes copied: contiguous-grow reallocations, paged copy-on-write

	// Prefix cache (paged), in tokens as vLLM's prefix_cache_queries and
	// prefix_cache_hits count them: prompt tokens looked up at Admit, and
	// those found cached.
	PrefixQueryTokens int64
	PrefixHitTokens   int64
}

// String renders the stats on one line.
func (s Stats) String() string {
	return fmt.Sprintf("live=%d tokens=%d admits=%d admit-failures=%d grows=%d grow-failures=%d releases=%d preempts=%d reallocs=%d copied=%s",
		s.Live, s.Tokens, s.Admits, s.AdmitFailures, s.Grows, s.GrowFailures, s.Releases, s.Preempts,
		s.Reallocs, mem.FormatBytesExact(s.CopiedBytes)) + s.prefixString()
}

func (s Stats) prefixString() string {
	if s.PrefixQueryTokens == 0 {
		return ""
	}
	return fmt.Sprintf(" prefix-queries=%d prefix-hits=%d", s.PrefixQueryTokens, s.PrefixHitTokens)
}

// Env is what a strategy is built on.
type Env struct {
	Model   model.Model
	KVDType model.DType // element type of the KV cache
	TP      int         // tensor-parallel degree; 0 means 1
	// Alloc is the allocator KV memory comes from. The strategy calls it on
	// stream 0 and frees everything it allocated when all sequences are
	// released (paged keeps its pool until Close).
	Alloc alloc.Allocator
	// PoolBytes is the paged pool's budget: gpu_memory_utilization ×
	// capacity − weights − activation peak, computed by the caller. Only
	// paged uses it; it is rounded down to whole blocks.
	PoolBytes int64
	// MaxContext is the longest sequence in tokens (prompt + output); 0
	// means Model.MaxContext. contiguous-max reserves this much.
	MaxContext int
	// NoPrefixCaching turns paged's prefix cache off, as vLLM's
	// --no-enable-prefix-caching does; the zero value keeps vLLM v1's
	// default, on. Only requests that carry Request.PrefixIDs can hit it.
	NoPrefixCaching bool
	// CountBlocks lets paged, when NoPrefixCaching is set, keep counts of
	// its blocks (free, held, their written slots) instead of a block pool
	// that names each one. Without a prefix cache no block's identity or
	// place in the free queue is ever read: every result (Usage, Stats,
	// errors, DecodeSteps) is the same, and admissions, grows and releases
	// cost a few additions instead of walks along the free queue. The
	// strategy's Pool is nil then; an engine that never reads block ids
	// sets it. Other strategies ignore it.
	CountBlocks bool
}

// withDefaults validates e and fills TP and MaxContext.
func (e Env) withDefaults() (Env, error) {
	if e.TP == 0 {
		e.TP = 1
	}
	if e.MaxContext == 0 {
		e.MaxContext = e.Model.MaxContext
	}
	switch {
	case e.Alloc == nil:
		return e, fmt.Errorf("%w: Env.Alloc is nil", ErrBadSpec)
	case !e.KVDType.Valid():
		return e, fmt.Errorf("%w: KV dtype %d is not valid", ErrBadSpec, e.KVDType)
	case e.MaxContext <= 0:
		return e, fmt.Errorf("%w: max context %d (set Env.MaxContext or Model.MaxContext)", ErrBadSpec, e.MaxContext)
	}
	if err := e.Model.ValidateTP(e.TP); err != nil {
		return e, fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	if e.Model.KVBytesPerToken(e.KVDType, e.TP) <= 0 {
		return e, fmt.Errorf("%w: model %q has no KV bytes per token", ErrBadSpec, e.Model.Name)
	}
	return e, nil
}

// Names lists the strategy kinds Parse accepts.
func Names() []string {
	return []string{"contiguous-max", "contiguous-max:pow2", "contiguous-max:oracle", "contiguous-grow", "paged:B", "vmm:P"}
}

// Parse builds a strategy from its spec:
//
//	contiguous-max          reserve Env.MaxContext tokens per sample at Admit
//	contiguous-max:pow2     reserve prompt + the next power of two ≥ the true output
//	contiguous-max:oracle   reserve prompt + the true output
//	contiguous-grow         prompt + headroom, doubling by reallocate-and-copy
//	paged:B                 a block pool of B-token blocks in one allocation of Env.PoolBytes
//	vmm:P                   a range per sample growing by P-byte pages (Env.Alloc must grow blocks in place, alloc.Grower, with page P: the vmm allocator)
//
// It is ParseSpec and New. Errors wrap ErrBadSpec and name the bad part.
// paged allocates its pool here, so Parse fails with ErrNoMemory when the
// allocator cannot supply it.
func Parse(spec string, env Env) (Strategy, error) {
	s, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	return New(s, env)
}

// New builds the strategy s over Env.Alloc: the pair check of CheckPair
// against what Env.Alloc implements (alloc.CapsOf), then the build. A
// caller that parsed its spec once (sim.Config.KV) builds with New.
func New(s Spec, env Env) (Strategy, error) {
	env, err := env.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("strategy %q: %w", s, err)
	}
	// The pair check, with CheckPair's message: the allocator is judged by
	// what it implements.
	if err := checkCaps(s, env.Alloc.Spec(), alloc.CapsOf(env.Alloc)); err != nil {
		return nil, err
	}
	switch s.family {
	case Contiguous:
		return newContiguous(env, s.mode), nil
	case Paged:
		return newPaged(env, s.block)
	case VMM:
		// checkCaps saw alloc.Grower with GrowUnit s.page.
		return newVMM(env, env.Alloc.(growingAllocator), s.page), nil
	}
	return nil, fmt.Errorf("%w: %q: no strategy (the zero Spec)", ErrBadSpec, s)
}

// maxBlockTokens bounds paged:B. vLLM's CUDA kernels accept block sizes up
// to 32 (256 with some backends); 1<<16 leaves room for experiments while a
// typo such as paged:16000000 still fails.
const maxBlockTokens = 1 << 16

// noMemory wraps cause (an *alloc.OOMError or blockpool.ErrOutOfBlocks) in
// ErrNoMemory.
func noMemory(what string, id SeqID, cause error) error {
	if cause == nil {
		return fmt.Errorf("%w: %s seq %d", ErrNoMemory, what, id)
	}
	return &noMemoryError{what: what, id: id, cause: cause}
}

// noMemoryError is noMemory's error, formatted only when printed: the
// engine meets one at every admission or growth that does not fit and only
// tests it (errors.Is), which made formatting it 6.5% of simulate's CPU on
// the Mooncake trace (pprof). Its text and its chain are those of
// fmt.Errorf("%w: %s seq %d: %w", ErrNoMemory, what, id, cause)
// (TestNoMemoryError).
type noMemoryError struct {
	what  string
	id    SeqID
	cause error
}

func (e *noMemoryError) Error() string {
	return fmt.Sprintf("%v: %s seq %d: %v", ErrNoMemory, e.what, e.id, e.cause)
}

// Unwrap returns ErrNoMemory and the cause, as fmt.Errorf's two %w do.
func (e *noMemoryError) Unwrap() []error { return []error{ErrNoMemory, e.cause} }

// sortedIDs returns m's keys in increasing order, so that walks over live
// sequences are deterministic.
func sortedIDs[V any](m map[SeqID]V) []SeqID {
	ids := make([]SeqID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, cmp.Compare)
	return ids
}
