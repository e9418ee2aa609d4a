package optrace

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/par"
)

// Report is the JSON document `gpufrag replay --json` prints (docs/json.md):
// the trace replayed, the device it was replayed on and one Result per
// allocator, in the order asked.
type Report struct {
	Trace         string   `json:"trace"` // the trace's file name, or the embedded example's
	CapacityBytes int64    `json:"capacity_bytes"`
	OtherUseBytes int64    `json:"other_use_bytes"` // memory taken before the trace (weights, context)
	Results       []Result `json:"results"`
}

// Result is what replaying a trace through one allocator gives. The JSON
// names are the stable schema of `gpufrag replay --json` (docs/json.md).
type Result struct {
	// Allocator is the allocator's spec: as the caller gave it to
	// ReplayAll, or alloc.Allocator.Spec for Replay.
	Allocator string `json:"allocator"`
	// Ops is the number of ops in the trace, skipped ones included.
	Ops int `json:"ops"`

	// Peaks are the largest values after any op (or before the first).
	PeakReservedBytes  int64 `json:"peak_reserved_bytes"`
	PeakAllocatedBytes int64 `json:"peak_allocated_bytes"`
	// End values are those after the last op.
	EndReservedBytes  int64 `json:"end_reserved_bytes"`
	EndAllocatedBytes int64 `json:"end_allocated_bytes"`

	// OOMs counts allocs that failed for lack of memory.
	OOMs int `json:"ooms"`
	// SkippedOps counts ops skipped because they named the id of an alloc
	// that had failed (its free).
	SkippedOps int `json:"skipped_ops"`

	// PeakLine is the line (op number for ops built in code) of the op
	// after which reserved bytes first reached PeakReservedBytes; 0 when
	// the peak is the state before the first op (an allocator that reserves
	// up front, or an empty trace).
	PeakLine int `json:"peak_line"`
	// AtPeak are the fragmentation metrics at that moment: AtPeak.Reserved
	// equals PeakReservedBytes. Peak allocated bytes may come at another op.
	AtPeak frag.Metrics `json:"peak"`
	// End are the fragmentation metrics after the last op.
	End frag.Metrics `json:"end"`

	// FirstOOM describes the first failed alloc; nil when none failed.
	FirstOOM *OOM `json:"first_oom,omitempty"`

	// UnroutedPoolAllocs counts the allocs that name a private pool (Op.Pool)
	// which this allocator, having no private pools (not an
	// alloc.PoolAllocator), served from its default pools together with
	// every other request; 0 (and absent from the JSON) for an allocator
	// with private pools or a trace without them.
	UnroutedPoolAllocs int `json:"unrouted_pool_allocs,omitempty"`
}

// OOM is one failed alloc.
type OOM struct {
	Line   int    `json:"line"` // line (or op number) of the alloc
	ID     string `json:"id"`
	Size   int64  `json:"size_bytes"`
	Stream int    `json:"stream"`
	// Message is the allocator's error, worded as PyTorch's
	// ("out of memory: tried to allocate ...").
	Message string `json:"message"`
}

// Replay applies ops to a, which is left in the state after the last op,
// and reports peaks, end state, OOMs and fragmentation metrics. The trace
// must pass Validate; if it does not, the error is Validate's, and a is
// left as it was.
//
// The metrics at the peak are computed without taking a layout after every
// op: a first pass finds the op after which reserved bytes first peak, then
// a clone of a taken before the first op replays the trace up to that op.
// Allocators are deterministic, so the clone reaches the same state; Replay
// checks that it does and returns an error if not. The cost is at most two
// passes over the trace plus two layouts.
func Replay(ops []Op, a alloc.Allocator) (Result, error) {
	p, err := compile(ops, "")
	if err != nil {
		return Result{}, err
	}
	return p.replay(a)
}

// plan is a validated trace compiled for replay: each alloc and free names
// a slot, a dense index in place of its id, so that a replay keeps its
// handles in a slice rather than a map keyed by strings, and replays of one
// trace through several allocators share the ids' bookkeeping, done once
// (a snapshot's what-if replays a 49,000-op trace through twelve).
type plan struct {
	ops   []Op
	slot  []int32 // by op: the slot of an alloc or free; -1 for other ops
	slots int     // slots in use at most at once
}

// compile validates ops as Validate does (the same errors, name labelling
// them) and assigns slots: an alloc takes a free slot, its free returns it.
func compile(ops []Op, name string) (*plan, error) {
	var t tracker
	p := &plan{ops: ops, slot: make([]int32, len(ops))}
	live := map[string]int32{}
	var spare []int32
	for i, op := range ops {
		if field, msg := op.check(); field != "" {
			return nil, &Error{Name: name, Line: lineOf(op, i), Field: field, Msg: msg, Err: ErrField}
		}
		if err := t.apply(op, i); err != nil {
			err.Name = name
			return nil, err
		}
		p.slot[i] = -1
		switch op.Kind {
		case Alloc:
			s := int32(p.slots)
			if n := len(spare); n > 0 {
				s, spare = spare[n-1], spare[:n-1]
			} else {
				p.slots++
			}
			live[op.ID] = s
			p.slot[i] = s
		case Free:
			s := live[op.ID] // present: the tracker checked
			delete(live, op.ID)
			spare = append(spare, s)
			p.slot[i] = s
		}
	}
	return p, nil
}

// replay is Replay of a compiled trace.
func (pl *plan) replay(a alloc.Allocator) (Result, error) {
	ops := pl.ops
	start := a.Clone()
	r := Result{Allocator: a.Spec(), Ops: len(ops)}

	s := a.Stats()
	r.PeakReservedBytes, r.PeakAllocatedBytes = s.Reserved, s.Allocated
	peak := 0                    // ops applied when reserved bytes first reached the peak
	peakAllocated := s.Allocated // allocated bytes at that moment
	p := player{plan: pl}
	for i := range ops {
		if err := p.step(a, i); err != nil {
			return Result{}, err
		}
		s = a.Stats()
		if s.Reserved > r.PeakReservedBytes {
			r.PeakReservedBytes, peak, peakAllocated = s.Reserved, i+1, s.Allocated
		}
		r.PeakAllocatedBytes = max(r.PeakAllocatedBytes, s.Allocated)
	}
	r.EndReservedBytes, r.EndAllocatedBytes = s.Reserved, s.Allocated
	r.OOMs, r.SkippedOps, r.FirstOOM, r.UnroutedPoolAllocs = p.ooms, p.skipped, p.firstOOM, p.unrouted
	r.End = frag.Compute(a.Layout())

	if peak == len(ops) {
		r.AtPeak = r.End
	} else {
		q := player{plan: pl}
		for i := range ops[:peak] {
			if err := q.step(start, i); err != nil {
				return Result{}, fmt.Errorf("replaying to the peak: %w", err)
			}
		}
		r.AtPeak = frag.Compute(start.Layout())
	}
	if r.AtPeak.Reserved != r.PeakReservedBytes || r.AtPeak.Allocated != peakAllocated {
		return Result{}, fmt.Errorf("allocator %s is not deterministic: replaying the first %d ops again gave "+
			"%d reserved and %d allocated bytes, not %d and %d",
			r.Allocator, peak, r.AtPeak.Reserved, r.AtPeak.Allocated, r.PeakReservedBytes, peakAllocated)
	}
	if peak > 0 {
		r.PeakLine = lineOf(ops[peak-1], peak-1)
	}
	return r, nil
}

// ReplayAll replays ops through one allocator per spec and returns the
// results in the order of specs, each labelled with its spec as given.
// newAllocator builds a fresh allocator, on its own device, from a spec; the
// command line passes one that calls alloc/registry.New, for example
//
//	func(s string) (alloc.Allocator, error) {
//		dev, err := mem.NewDevice(80*mem.GiB, 0)
//		if err != nil {
//			return nil, err
//		}
//		return registry.New(s, dev)
//	}
//
// (optrace does not import alloc/registry itself, so reading and writing traces
// does not compile every allocator.) A trace that fails Validate is reported
// once, before any allocator is built; every allocator is built before any
// replay, so a bad spec fails fast. The replays run one after another (see
// ReplayAllWorkers).
func ReplayAll(ops []Op, specs []string, newAllocator func(spec string) (alloc.Allocator, error)) ([]Result, error) {
	return ReplayAllWorkers(ops, specs, newAllocator, 1)
}

// ReplayAllWorkers is ReplayAll with up to workers replays at once (<= 0:
// GOMAXPROCS). Each allocator has its own device and is driven by one
// goroutine, and the results land in spec order, so they do not depend on
// the number of workers; a failed replay's error is joined with the others'
// in spec order. The trace is validated and compiled once for all of them.
func ReplayAllWorkers(ops []Op, specs []string, newAllocator func(spec string) (alloc.Allocator, error), workers int) ([]Result, error) {
	pl, err := compile(ops, "")
	if err != nil {
		return nil, err
	}
	as := make([]alloc.Allocator, len(specs))
	for i, s := range specs {
		a, err := newAllocator(s)
		if err != nil {
			return nil, err
		}
		as[i] = a
	}
	out, err := par.Map(context.Background(), len(as), par.Options{Workers: workers}, func(_ context.Context, i int) (Result, error) {
		r, err := pl.replay(as[i])
		as[i] = nil // its memory can go as soon as its replay is done
		if err != nil {
			return Result{}, fmt.Errorf("allocator %q: %w", specs[i], err)
		}
		r.Allocator = strings.TrimSpace(specs[i])
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// player applies a compiled trace's ops to one allocator.
//
// Invariant: live[s] is the allocation in slot s while the trace holds it
// (allocated and not yet freed); failed is true when that alloc ran out of
// memory.
type player struct {
	*plan
	live    []liveID
	ooms    int
	skipped int
	// unrouted counts allocs of a private pool served from the default
	// pools of an allocator without private pools.
	unrouted int
	// firstOOM is set by the first alloc that runs out of memory.
	firstOOM *OOM
}

type liveID struct {
	h      alloc.Handle
	failed bool // the alloc ran out of memory; the id has no block
}

// step applies ops[i] to a.
func (p *player) step(a alloc.Allocator, i int) error {
	op := p.ops[i]
	if p.live == nil {
		p.live = make([]liveID, p.slots)
	}
	switch op.Kind {
	case Alloc:
		b, unrouted, err := allocOp(a, op)
		if unrouted {
			p.unrouted++
		}
		if errors.Is(err, alloc.ErrOutOfMemory) {
			p.ooms++
			p.live[p.slot[i]] = liveID{failed: true}
			if p.firstOOM == nil {
				p.firstOOM = &OOM{Line: lineOf(op, i), ID: op.ID, Size: op.Size, Stream: op.Stream, Message: err.Error()}
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("line %d: alloc of %q (%d bytes): %w", lineOf(op, i), op.ID, op.Size, err)
		}
		p.live[p.slot[i]] = liveID{h: b.Handle}
	case Free:
		l := p.live[p.slot[i]] // set by its alloc: compile checked
		p.live[p.slot[i]] = liveID{}
		if l.failed {
			p.skipped++
			return nil
		}
		if err := a.Free(l.h); err != nil {
			return fmt.Errorf("line %d: free of %q: %w", lineOf(op, i), op.ID, err)
		}
	case EmptyCache:
		a.EmptyCache()
	case Sync:
		if s, ok := a.(alloc.Syncer); ok {
			s.Sync()
		}
	}
	return nil
}
