// Plans: goals, moves, options and the entry point PlanLayout.
// See doc.go for the overview.

package defrag

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
)

// Sentinel errors.
var (
	// ErrGoal: a goal that cannot be parsed or does not apply to the layout
	// (a fit goal of no positive size, a fit goal on size-class slots).
	ErrGoal = errors.New("bad goal")
	// ErrLayout: the layout is not one the planner can work on (it fails
	// mem.Layout.Check, or names an allocator the planner does not know).
	ErrLayout = errors.New("bad layout")
	// ErrMove: Apply could not perform a move (unknown address, or the
	// allocator refused the relocation). The error names the move.
	ErrMove = errors.New("defrag: move failed")
)

// GoalKind says what a plan is for.
type GoalKind uint8

const (
	// GoalCompact frees as many whole segments as possible (their bytes can then
	// go back to the device through EmptyCache). On an arena, whose single
	// segment is never returned, it gathers the free memory into one extent.
	GoalCompact GoalKind = iota
	// GoalFit makes a free run of at least Goal.Size bytes inside one segment
	// of the pool and stream a request of that size would use: the request
	// that failed.
	GoalFit
)

// String returns the goal kind's CLI name.
func (k GoalKind) String() string {
	if k == GoalFit {
		return "fit"
	}
	return "compact"
}

// Goal is what a plan must achieve.
type Goal struct {
	Kind GoalKind
	// Size is the request a GoalFit plan must make room for, in bytes.
	Size int64
	// Pool restricts GoalFit to segments of this pool. Empty means the pool a
	// request of Size would use: "small" for at most 1 MiB and "large" above
	// on the caching allocator, any pool elsewhere.
	Pool string
	// Stream is the stream of the request (GoalFit on the caching allocator).
	Stream int
}

// String renders the goal as ParseGoal reads it.
func (g Goal) String() string {
	if g.Kind == GoalFit {
		return "fit:" + mem.FormatBytesExact(g.Size)
	}
	return "compact"
}

// ParseGoal reads "compact" or "fit:SIZE" (SIZE with units, "fit:64MiB").
func ParseGoal(s string) (Goal, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "compact":
		return Goal{Kind: GoalCompact}, nil
	case strings.HasPrefix(s, "fit:"):
		n, err := mem.ParseBytes(strings.TrimPrefix(s, "fit:"))
		if err != nil {
			return Goal{}, fmt.Errorf("%w: %q: %w", ErrGoal, s, err)
		}
		if n <= 0 {
			return Goal{}, fmt.Errorf("%w: %q: the size must be positive", ErrGoal, s)
		}
		return Goal{Kind: GoalFit, Size: n}, nil
	}
	return Goal{}, fmt.Errorf("%w: %q (want compact or fit:SIZE)", ErrGoal, s)
}

// Move relocates the live block that starts at From to To. Size is the
// block's size, so a plan can be priced and checked without the layout.
type Move struct {
	From, To uint64
	Size     int64
}

// String renders the move for people: "@20MiB -> @0B (1MiB)".
func (m Move) String() string {
	return fmt.Sprintf("%s -> %s (%s)", mem.FormatAddr(m.From), mem.FormatAddr(m.To), mem.FormatBytesExact(m.Size))
}

// Unmap describes physical pages that a VMM-backed segment (expandable
// segments, vmm) can unmap and map again elsewhere in its virtual range
// without copying anything: Pages whole free pages of PageSize bytes starting
// at Addr.
type Unmap struct {
	Addr     uint64
	Pages    int64
	PageSize int64
}

// Plan is what a planner returns: the moves in the order they must be applied,
// what they cost and achieve, and the bound any plan for the same goal must pay.
type Plan struct {
	Goal      Goal
	Allocator string // the rules the plan follows: caching, arena, sizeclass (vmm, async, direct: no moves)
	Moves     []Move
	// BytesMoved is Σ Moves[i].Size: every byte is read once and written once.
	BytesMoved int64
	// LowerBound is a number of bytes that every plan reaching the same goal
	// (freeing FreedBytes of segments, or making the same room) must move;
	// see doc.go for how it is computed and why it is a bound.
	LowerBound int64
	// FreedBytes is the net gain in bytes of wholly free segments (After minus
	// the layout's), what EmptyCache would then give back to the device.
	FreedBytes int64
	// Reached says whether the goal is met by the moves. A GoalCompact plan is
	// always reached unless Options capped it; a GoalFit plan may find no room.
	Reached bool
	// Unmaps and UnmapPages describe VMM-backed segments, which are never
	// compacted by copying: whole free pages are unmapped (and remapped where
	// needed) instead, priced per page.
	Unmaps     []Unmap
	UnmapPages int64
	UnmapBytes int64
	// Notes explain what the planner skipped and why, for people.
	Notes []string
	// Before and After are the fragmentation metrics of the layout and of
	// Layout, the layout the moves produce. After.MaxAllocatable is an
	// estimate (see estimateMaxAllocatable): only the allocator knows its rules.
	Before, After frag.Metrics
	// Layout is the layout after the moves, computed on a copy.
	Layout mem.Layout
	// fixed: the allocator moves no blocks (rules.fixed), so a plan
	// without moves says nothing of the layout (the text's verdict).
	fixed bool
}

// Options tune a planner.
type Options struct {
	// Allocator names the allocator whose rules the layout follows: a
	// parsed allocator spec (alloc/registry.Spec; only its kind and
	// capabilities count: alloc.Caps.Relocation says how blocks move).
	// Allocators with no relocation hook (alloc.Caps.Relocates false: vmm,
	// async, direct) get plans that move nothing and only list VMM pages.
	// It is required; alloc/registry.ForPools names the allocator of a layout
	// that does not say from its pool names.
	Allocator alloc.Described
	// MaxBytes caps the bytes moved (0: no cap), for online policies that may
	// move at most B bytes per engine step. Segments are evacuated whole or not
	// at all, so a capped plan never leaves a segment half moved.
	MaxBytes int64
	// MaxMoves caps the number of moves (0: no cap).
	MaxMoves int
	// PageSize is the physical page of VMM-backed segments of the "vmm" pool;
	// 0 means mem.PageSize. The caching allocator's expandable segments use
	// its own 2 MiB (small) and 20 MiB (large) pages whatever this says.
	PageSize int64
}

// rules are what the planner must know about an allocator: its kind's
// name (Plan.Allocator), how its relocation hook moves blocks and how its
// layout behaves (alloc.Caps.Relocation, which the allocator declares), and
// whether anything can move at all.
type rules struct {
	name string
	alloc.Relocation
	// fixed: nothing can move (no relocation hook: direct, vmm, async); the
	// planner only describes VMM pages that can be unmapped, and free
	// segments go back to the device.
	fixed bool
}

// rulesFor reads the rules from a's capabilities (its arguments are not
// the planner's business).
func rulesFor(a alloc.Described) (rules, error) {
	if a == nil {
		return rules{}, fmt.Errorf("%w: no allocator (Options.Allocator): the rules a layout follows are its allocator's; "+
			"registry.ForPools (alloc/registry) names one from the pool names", ErrLayout)
	}
	c := a.Caps()
	if !c.Relocates {
		return rules{name: a.Name(), Relocation: alloc.Relocation{Releasable: true}, fixed: true}, nil
	}
	return rules{name: a.Name(), Relocation: c.Relocation}, nil
}

// PlanLayout plans moves that reach g on layout l, following the relocation
// rules of the allocator that produced it. It never modifies l: every slice of
// the returned plan, Layout included, is new. The result depends only on its
// arguments. See doc.go for the algorithms and the lower bounds.
func PlanLayout(l mem.Layout, g Goal, o Options) (Plan, error) {
	if g.Kind == GoalFit && g.Size <= 0 {
		return Plan{}, fmt.Errorf("%w: fit needs a positive size, got %d", ErrGoal, g.Size)
	}
	if g.Kind != GoalFit && g.Kind != GoalCompact {
		return Plan{}, fmt.Errorf("%w: unknown kind %d", ErrGoal, g.Kind)
	}
	r, err := rulesFor(o.Allocator)
	if err != nil {
		return Plan{}, err
	}
	st, err := checkScan(l)
	if err != nil {
		return Plan{}, fmt.Errorf("%w: %w", ErrLayout, err)
	}
	pl := newPlanner(l, r, o)
	p := Plan{Goal: g, Allocator: r.name, fixed: r.fixed}
	switch {
	case g.Kind == GoalFit && r.Slots:
		return Plan{}, fmt.Errorf("%w: fit on size-class slots: free slots never merge, so moving blocks cannot make a larger run; use compact to free slabs", ErrGoal)
	case g.Kind == GoalFit:
		pl.planFit(&p, g)
	case !r.Releasable:
		pl.planCoalesce(&p)
	default:
		pl.planCompact(&p)
	}
	pl.planUnmaps(&p, g)
	after, err := simulate(pl, p.Moves)
	if err != nil {
		return Plan{}, err
	}
	p.Layout = after
	for _, m := range p.Moves {
		p.BytesMoved += m.Size
	}
	facts := pl.scanAfter(after)
	for _, f := range facts.freed {
		p.FreedBytes += f
	}
	if g.Kind == GoalCompact && r.Releasable {
		p.LowerBound = pl.compactBound(facts.freed)
	}
	p.Before = beforeMetrics(l, st)
	p.Layout.MaxAllocatable = estimateMaxAllocatable(l, after, r, p.Before.LargestFreeBlock, facts)
	p.After = afterMetrics(p.Before, p.Layout, facts.largest, facts.free)
	if g.Kind == GoalFit && !p.Reached && p.Before.MaxAllocatable >= g.Size {
		// The goal is room inside the segments held; the request itself
		// needs none where the device can still give a segment.
		p.Notes = append(p.Notes, fmt.Sprintf("a request of %s succeeds without compaction here: the allocator can take a new segment from the device's free memory (max allocatable, estimated: %s); this goal asks for room inside the segments it holds, which it cannot make",
			mem.FormatBytes(g.Size), mem.FormatBytes(p.Before.MaxAllocatable)))
	}
	return p, nil
}

// afterFacts is what PlanLayout needs to know of the layout a plan
// produces, gathered by scanAfter in one pass over its blocks.
type afterFacts struct {
	// freed is, per group, the bytes of segments wholly free in after but
	// not in the planner's layout (segments keep their indices in after).
	freed []int64
	// whole is wholeFreeBytes(after).
	whole int64
	// largest and free are the largest free block and the number of free
	// blocks (frag.Metrics' LargestFreeBlock and FreeBlocks).
	largest int64
	free    int
	// largestServe is the largest free block of a non-expandable segment a
	// request could use (not the caching allocator's small pool): see
	// estimateMaxAllocatable.
	largestServe int64
}

// scanAfter gathers afterFacts of after in one pass.
func (pl *planner) scanAfter(after mem.Layout) afterFacts {
	f := afterFacts{freed: make([]int64, len(pl.groups))}
	for si := range after.Segments {
		s := &after.Segments[si]
		serve := !s.Expandable && (!pl.r.SizePools || s.Pool != "small")
		var used int64
		bs := s.Blocks
		for j := range bs {
			b := &bs[j]
			if b.State != mem.Free {
				used += b.Size
				continue
			}
			f.free++
			f.largest = max(f.largest, b.Size)
			if serve {
				f.largestServe = max(f.largestServe, b.Size)
			}
		}
		if s.Expandable || used != 0 {
			continue
		}
		f.whole += s.Size
		if pl.segs[si].used != 0 {
			f.freed[pl.segs[si].group] += s.Size
		}
	}
	return f
}

// wholeFreeBytes is Σ sizes of segments that hold no block in use and could be
// returned to the device (VMM-backed runs are counted as pages, not here).
func wholeFreeBytes(l mem.Layout) int64 {
	var n int64
	for _, s := range l.Segments {
		if s.Expandable {
			continue
		}
		if segUsed(s) == 0 {
			n += s.Size
		}
	}
	return n
}

func segUsed(s mem.Segment) int64 {
	var n int64
	for _, b := range s.Blocks {
		if b.State != mem.Free {
			n += b.Size
		}
	}
	return n
}

// estimateMaxAllocatable estimates the largest request the allocator could
// serve after the moves. Only the allocator knows its rules, so this is an
// estimate, the one package snapshot makes for a PyTorch snapshot: the larger
// of the biggest free block of a non-expandable segment and device-free
// memory plus wholly free segments (which the allocator releases before giving
// up), rounded down to 2 MiB. On an arena, which never releases anything, it
// is exact: the largest free extent rounded down to 512 bytes.
// beforeLargest is frag.LargestFreeBlock(before) and f after's facts, which
// PlanLayout knows.
func estimateMaxAllocatable(before, after mem.Layout, r rules, beforeLargest int64, f afterFacts) int64 {
	largest := f.largestServe
	if !r.Releasable {
		return largest &^ 511
	}
	afterWhole := f.whole
	avail := after.DeviceFree + afterWhole
	avail -= avail % mem.PageSize
	est := max(largest, avail)
	if before.MaxAllocatable > est && afterWhole >= wholeFreeBytes(before) && largest >= beforeLargest {
		// Nothing the estimate looks at got smaller: keep the allocator's own figure.
		est = before.MaxAllocatable
	}
	return est
}

// PlanAllocator plans for allocator a's current layout under its own rules
// (Options.Allocator defaults to a's own description: its canonical spec,
// the kind named there, alloc.CapsOf(a)). Apply then performs the plan
// through a.(alloc.Relocator).
func PlanAllocator(a alloc.Allocator, g Goal, o Options) (Plan, error) {
	if o.Allocator == nil {
		o.Allocator = built{a}
	}
	return PlanLayout(a.Layout(), g, o)
}

// built describes a built allocator by itself (alloc.Described).
type built struct{ a alloc.Allocator }

func (b built) String() string   { return b.a.Spec() }
func (b built) Caps() alloc.Caps { return alloc.CapsOf(b.a) }

// Name is the kind's name, the canonical spec's text before its first ':'
// (alloc.Allocator.Spec: "NAME[:ARGS]").
func (b built) Name() string { name, _, _ := strings.Cut(b.a.Spec(), ":"); return name }

// sortedSegs returns segment indices in address order (allocators may build
// layouts in any order; the input is never sorted in place).
func sortedSegs(l mem.Layout) []int32 {
	idx := make([]int32, len(l.Segments))
	for i := range idx {
		idx[i] = int32(i)
	}
	if slices.IsSortedFunc(l.Segments, func(a, b mem.Segment) int { return cmpAddr(a.Addr, b.Addr) }) {
		return idx // what mem.Layout.Check requires, so the usual case
	}
	slices.SortFunc(idx, func(a, b int32) int {
		switch x, y := l.Segments[a].Addr, l.Segments[b].Addr; {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return idx
}

// cmpAddr is the three-way comparison of two addresses.
func cmpAddr(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
