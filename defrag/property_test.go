package defrag_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/mem"
	"pgregory.net/rapid"
)

// workload is one allocator under random alloc/free traffic.
type workload struct {
	name     string
	spec     string
	capacity int64
	streams  int
	size     *rapid.Generator[int64]
	fit      bool // GoalFit applies (not to size-class slots)
}

var workloads = []workload{
	{name: "caching", spec: "caching", capacity: 256 * mem.MiB, streams: 2, fit: true,
		size: rapid.OneOf(rapid.Int64Range(1, mem.MiB), rapid.Int64Range(mem.MiB+1, 12*mem.MiB))},
	{name: "caching-small", spec: "caching", capacity: 64 * mem.MiB, streams: 1, fit: true,
		size: rapid.Int64Range(1, 256*mem.KiB)},
	{name: "caching-expandable", spec: "caching:expandable_segments:True", capacity: 256 * mem.MiB, streams: 1, fit: true,
		size: rapid.OneOf(rapid.Int64Range(1, mem.MiB), rapid.Int64Range(mem.MiB+1, 12*mem.MiB))},
	{name: "arena", spec: "arena:64MiB", capacity: 128 * mem.MiB, streams: 1, fit: true,
		size: rapid.Int64Range(1, 4*mem.MiB)},
	{name: "sizeclass", spec: "sizeclass:64KiB/256KiB/1MiB/4MiB", capacity: 128 * mem.MiB, streams: 1,
		size: rapid.Int64Range(1, 5*mem.MiB)},
}

// TestNothingLost is the byte-backed proof of DESIGN §6: random workloads on
// every allocator with a relocation hook, then plans of every kind applied
// through Relocate, over several rounds. After each plan:
//
//   - the input layout was not modified;
//   - every live block's bytes have the checksum they were written with, and
//     the owner's records point at the allocator's addresses (world.check);
//   - the plan's simulated layout equals the allocator's real one, block for
//     block, and so do the frag metrics (max_allocatable is an estimate);
//   - bytes moved are the sum of the moves and at least the lower bound;
//   - a reached goal is really met on the allocator: the freed segments go
//     back to the device with EmptyCache, the room for a fit exists.
func TestNothingLost(t *testing.T) {
	longtest.Skip(t)
	for _, wl := range workloads {
		t.Run(wl.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) { runWorkload(rt, wl) })
		})
	}
}

func runWorkload(rt *rapid.T, wl workload) {
	w, err := newWorld(wl.spec, wl.capacity)
	if err != nil {
		rt.Fatal(err)
	}
	rounds := rapid.IntRange(1, 3).Draw(rt, "rounds")
	for round := range rounds {
		nops := rapid.IntRange(1, 120).Draw(rt, "ops")
		for range nops {
			hs := w.handles()
			if len(hs) == 0 || rapid.Float64Range(0, 1).Draw(rt, "p") < 0.6 {
				size := wl.size.Draw(rt, "size")
				stream := rapid.IntRange(0, wl.streams-1).Draw(rt, "stream")
				if _, err := w.alloc(size, stream); err != nil && !errors.Is(err, alloc.ErrOutOfMemory) {
					rt.Fatal(err)
				}
				continue
			}
			h := hs[rapid.IntRange(0, len(hs)-1).Draw(rt, "victim")]
			if err := w.free(h); err != nil {
				rt.Fatal(err)
			}
		}
		goal := defrag.Goal{Kind: defrag.GoalCompact}
		if wl.fit && rapid.Bool().Draw(rt, "fit") {
			goal = defrag.Goal{Kind: defrag.GoalFit, Size: wl.size.Draw(rt, "fit-size"),
				Stream: rapid.IntRange(0, wl.streams-1).Draw(rt, "fit-stream")}
		}
		var o defrag.Options
		if rapid.IntRange(0, 3).Draw(rt, "capped") == 0 {
			o.MaxBytes = rapid.Int64Range(0, 16*mem.MiB).Draw(rt, "max-bytes")
		}
		planAndCheck(rt, w, goal, o, round)
	}
}

func planAndCheck(rt *rapid.T, w *world, goal defrag.Goal, o defrag.Options, round int) {
	before := w.a.Layout()
	pristine := w.a.Layout()
	o.Allocator = registry.MustParse(w.a.Spec()) // a layout's rules are its allocator's
	p, err := defrag.PlanLayout(before, goal, o)
	if err != nil {
		rt.Fatalf("round %d: plan %v: %v", round, goal, err)
	}
	if !reflect.DeepEqual(before, pristine) {
		rt.Fatalf("round %d: PlanLayout modified its input", round)
	}
	var sum int64
	for _, m := range p.Moves {
		sum += m.Size
	}
	if sum != p.BytesMoved {
		rt.Fatalf("BytesMoved %d, moves add up to %d", p.BytesMoved, sum)
	}
	if again, _ := defrag.PlanLayout(pristine, goal, o); !reflect.DeepEqual(p, again) {
		rt.Fatalf("round %d: two plans of the same layout differ", round)
	}
	if (p.Reached || (goal.Kind == defrag.GoalCompact && p.Allocator != "arena")) && p.BytesMoved < p.LowerBound {
		rt.Fatalf("moved %d bytes, below the lower bound %d: the bound is wrong", p.BytesMoved, p.LowerBound)
	}
	if o.MaxBytes > 0 && p.BytesMoved > o.MaxBytes {
		rt.Fatalf("moved %d bytes, cap %d", p.BytesMoved, o.MaxBytes)
	}
	if err := p.Layout.Check(); err != nil {
		rt.Fatalf("planned layout: %v", err)
	}
	if p.Before != frag.Compute(before) {
		rt.Fatalf("Before metrics are not those of the input")
	}
	if err := w.apply(p); err != nil {
		rt.Fatalf("round %d: apply: %v\nplan moves: %v\nlayout before:\n%s", round, err, p.Moves, before)
	}
	if err := w.check(); err != nil {
		rt.Fatalf("round %d: after apply: %v", round, err)
	}
	real := w.a.Layout()
	if err := sameLayout(p.Layout, real); err != nil {
		rt.Fatalf("round %d: planned layout != real: %v\nmoves %v\nbefore:\n%s", round, err, p.Moves, before)
	}
	if p.Reached && goal.Kind == defrag.GoalFit && !hasRun(real, goal, p.Allocator) && !mappable(real, goal, p) {
		rt.Fatalf("fit %s reached, but no free run that large in the real layout:\n%s", mem.FormatBytesExact(goal.Size), real)
	}
	if goal.Kind == defrag.GoalCompact && p.Allocator != "arena" {
		reserved := real.Classes().Reserved()
		w.a.EmptyCache()
		if got := reserved - w.a.Layout().Classes().Reserved(); got < p.FreedBytes {
			rt.Fatalf("plan frees %d bytes of segments, EmptyCache returned %d", p.FreedBytes, got)
		}
		if err := w.check(); err != nil {
			rt.Fatalf("after empty-cache: %v", err)
		}
	}
	if goal.Kind == defrag.GoalCompact && p.Allocator == "arena" && p.Reached {
		if m := frag.Compute(real); m.FreeBlocks > 1 {
			rt.Fatalf("arena compaction reached but %d free extents remain", m.FreeBlocks)
		}
	}
}

// hasRun says whether a segment of the pool a fit goal targets has a free
// block of at least the goal's size.
func hasRun(l mem.Layout, g defrag.Goal, allocator string) bool {
	pool := g.Pool
	if pool == "" && allocator == "caching" {
		pool = "large"
		if g.Size <= mem.MiB {
			pool = "small"
		}
	}
	for _, s := range l.Segments {
		if (pool != "" && s.Pool != pool) || (allocator == "caching" && s.Stream != g.Stream) {
			continue
		}
		for _, b := range s.Blocks {
			if b.State == mem.Free && b.Size >= g.Size {
				return true
			}
		}
	}
	return false
}

// mappable says whether a fit goal is met by mapping pages: the layout has
// expandable segments and the device (with the pages the plan unmaps) has room.
func mappable(l mem.Layout, g defrag.Goal, p defrag.Plan) bool {
	for _, s := range l.Segments {
		if s.Expandable {
			return l.DeviceFree+p.UnmapBytes >= g.Size
		}
	}
	return false
}

// TestFixedAllocators: allocators without a relocation hook (vmm, async,
// direct) get plans that move nothing, whatever the layout.
func TestFixedAllocators(t *testing.T) {
	for _, sp := range []string{"vmm:2MiB", "async", "direct"} {
		w, err := newWorld(sp, 256*mem.MiB)
		if err != nil {
			t.Fatal(err)
		}
		var hs []alloc.Handle
		for i := range 20 {
			b, err := w.alloc(int64(i+1)*300*mem.KiB, 0)
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, b.Handle)
		}
		for i := 0; i < len(hs); i += 2 {
			if err := w.free(hs[i]); err != nil {
				t.Fatal(err)
			}
		}
		for _, g := range []defrag.Goal{{Kind: defrag.GoalCompact}, {Kind: defrag.GoalFit, Size: 64 * mem.MiB}} {
			p, err := defrag.PlanAllocator(w.a, g, defrag.Options{})
			if err != nil {
				t.Fatalf("%s %v: %v", sp, g, err)
			}
			if len(p.Moves) != 0 || p.BytesMoved != 0 {
				t.Fatalf("%s %v: %d moves on an allocator that cannot move blocks", sp, g, len(p.Moves))
			}
		}
	}
}
