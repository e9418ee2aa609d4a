package optrace_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/optrace"
)

// trace builds ops from a compact description, one op per string:
// "a ID SIZE [STREAM]", "f ID", "e" (empty_cache), "s" (sync).
func trace(t testing.TB, lines ...string) []optrace.Op {
	t.Helper()
	var ops []optrace.Op
	for _, l := range lines {
		f := strings.Fields(l)
		var op optrace.Op
		switch f[0] {
		case "a":
			n, err := mem.ParseBytes(f[2])
			if err != nil {
				t.Fatal(err)
			}
			op = optrace.Op{Kind: optrace.Alloc, ID: f[1], Size: n}
			if len(f) > 3 {
				fmt.Sscan(f[3], &op.Stream)
			}
		case "f":
			op = optrace.Op{Kind: optrace.Free, ID: f[1]}
		case "e":
			op = optrace.Op{Kind: optrace.EmptyCache}
		case "s":
			op = optrace.Op{Kind: optrace.Sync}
		default:
			t.Fatalf("bad op %q", l)
		}
		ops = append(ops, op)
	}
	return ops
}

// contractTrace is the replay contract's trace (../shared/checks/contracts,
// area replay): 8 allocs of 16 MiB, 8 frees, then 4 allocs of 32 MiB. A cache that cannot merge separate segments (PyTorch's,
// and the toy) holds 128 MiB of free 16 MiB segments that cannot serve the
// 32 MiB requests, and peaks at 256 MiB.
func contractTrace(t testing.TB) []optrace.Op {
	var l []string
	for i := 1; i <= 8; i++ {
		l = append(l, fmt.Sprintf("a s%d 16MiB", i))
	}
	for i := 1; i <= 8; i++ {
		l = append(l, fmt.Sprintf("f s%d", i))
	}
	for i := 1; i <= 4; i++ {
		l = append(l, fmt.Sprintf("a l%d 32MiB", i))
	}
	return trace(t, l...)
}

func TestReplayContractShape(t *testing.T) {
	r, err := optrace.Replay(contractTrace(t), newToy(mem.MustDevice(80*mem.GiB, 0)))
	if err != nil {
		t.Fatal(err)
	}
	want := optrace.Result{Allocator: "toy", Ops: 20,
		PeakReservedBytes: 256 * mem.MiB, PeakAllocatedBytes: 128 * mem.MiB,
		EndReservedBytes: 256 * mem.MiB, EndAllocatedBytes: 128 * mem.MiB, PeakLine: 20}
	got := r
	got.AtPeak, got.End = want.AtPeak, want.End
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if r.AtPeak != r.End {
		t.Fatalf("the peak is the end, but AtPeak %+v != End %+v", r.AtPeak, r.End)
	}
	e := r.End
	if e.Reserved != 256*mem.MiB || e.CachedFree != 128*mem.MiB || e.LargestFreeBlock != 16*mem.MiB ||
		e.Health != 0.125 || e.FragRate != 0.875 || e.UnallocReserved != 0.5 {
		t.Fatalf("end metrics %+v", e)
	}
}

// TestReplayPeakInTheMiddle checks that the peak metrics are those after the
// op that first reached the peak, found by replaying a clone, and that
// empty_cache reaches the allocator.
func TestReplayPeakInTheMiddle(t *testing.T) {
	ops := trace(t,
		"a a 30MiB", // 30
		"a b 32MiB", // 62: the peak, first reached here (op 2, line 11)
		"f a",       // reserved stays 62, allocated 32
		"a c 30MiB", // reuses a's segment: reserved 62 again, not a new peak
		"f c",
		"f b",
		"e",        // everything returned
		"a d 2MiB", // 2
	)
	for i := range ops {
		ops[i].Line = 10 + i // as if read from a file with a header of blank lines
	}
	r, err := optrace.Replay(ops, newToy(mem.MustDevice(80*mem.GiB, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakReservedBytes != 62*mem.MiB || r.PeakAllocatedBytes != 62*mem.MiB || r.PeakLine != 11 {
		t.Fatalf("peak %d reserved, %d allocated, line %d", r.PeakReservedBytes, r.PeakAllocatedBytes, r.PeakLine)
	}
	if p := r.AtPeak; p.Reserved != 62*mem.MiB || p.Allocated != 62*mem.MiB || p.ActiveBlocks != 2 || p.Health != 1 {
		t.Fatalf("peak metrics %+v", p)
	}
	if e := r.End; r.EndReservedBytes != 2*mem.MiB || e.Reserved != 2*mem.MiB || e.Allocated != 2*mem.MiB || e.Segments != 1 {
		t.Fatalf("end %d, metrics %+v", r.EndReservedBytes, e)
	}
}

func TestReplayOOMSkipsLaterOps(t *testing.T) {
	ops := trace(t,
		"a a 40MiB",
		"a b 30MiB", // OOM on a 64 MiB device
		"f b",       // skipped
		"a b 20MiB", // the id is free again: this one fits
		"f a",
		"a c 60MiB", // OOM: a's 40 MiB segment is cached, the toy never releases it
		"f c",       // skipped
		"f b",
	)
	a := newToy(mem.MustDevice(64*mem.MiB, 0))
	r, err := optrace.Replay(ops, a)
	if err != nil {
		t.Fatal(err)
	}
	if r.OOMs != 2 || r.SkippedOps != 2 || r.Ops != 8 {
		t.Fatalf("OOMs %d, skipped %d, ops %d", r.OOMs, r.SkippedOps, r.Ops)
	}
	f := r.FirstOOM
	if f == nil || f.Line != 2 || f.ID != "b" || f.Size != 30*mem.MiB ||
		!strings.HasPrefix(f.Message, "out of memory: tried to allocate 30MiB") {
		t.Fatalf("first OOM %+v", f)
	}
	if st := a.Stats(); st.LiveBlocks != 0 || r.EndAllocatedBytes != 0 || r.EndReservedBytes != 60*mem.MiB {
		t.Fatalf("end: %+v, result %+v", st, r)
	}
}

func TestReplaySync(t *testing.T) {
	a := newToy(mem.MustDevice(80*mem.GiB, 0))
	a.syncTrims = true
	r, err := optrace.Replay(trace(t, "a a 4MiB 1", "f a", "s", "s"), a)
	if err != nil {
		t.Fatal(err)
	}
	if a.syncs != 2 || r.EndReservedBytes != 0 || r.PeakReservedBytes != 4*mem.MiB {
		t.Fatalf("syncs %d, result %+v", a.syncs, r)
	}
}

func TestReplayEmptyTrace(t *testing.T) {
	dev := mem.MustDevice(mem.GiB, 0)
	a := newToy(dev)
	if _, err := a.Alloc(mem.MiB, 0); err != nil { // state before the trace counts
		t.Fatal(err)
	}
	r, err := optrace.Replay(nil, a)
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakLine != 0 || r.PeakReservedBytes != 2*mem.MiB || r.AtPeak != r.End || r.End.ActiveBlocks != 1 {
		t.Fatalf("%+v", r)
	}
}

// An invalid trace is refused with Validate's error before any op reaches
// the allocator: the trace is checked and compiled once, then replayed.
func TestReplayInvalidTrace(t *testing.T) {
	a := newToy(mem.MustDevice(mem.GiB, 0))
	_, err := optrace.Replay(trace(t, "a a 1MiB", "f a", "f a"), a)
	if !errors.Is(err, optrace.ErrDoubleFree) || err.Error() != `line 3: field "id": double free of id "a" (already freed at line 2)` {
		t.Fatalf("got %v", err)
	}
	if st := a.Stats(); st.Allocs != 0 || st.Reserved != 0 {
		t.Errorf("the allocator was used before the trace was refused: %+v", st)
	}
}

// A replay keeps allocations in slots, one per live id, reused once freed:
// an id allocated again, and another reusing a freed id's slot while the
// first lives on, free exactly their own blocks.
func TestReplaySlots(t *testing.T) {
	r, err := optrace.Replay(trace(t, "a x 1MiB", "a y 2MiB", "f x", "a z 4MiB", "a x 8MiB", "f y", "f z"),
		newToy(mem.MustDevice(mem.GiB, 0)))
	if err != nil {
		t.Fatal(err)
	}
	// Left live: x (8 MiB); cached: the segments of the 1, 2 and 4 MiB.
	if r.EndAllocatedBytes != 8*mem.MiB || r.End.ActiveBlocks != 1 || r.End.FreeBlocks != 3 || r.PeakAllocatedBytes != 14*mem.MiB {
		t.Fatalf("%+v", r)
	}
}

// nondet is a toy whose clones start with an extra 2 MiB allocation: the
// kind of nondeterminism Replay must catch rather than report wrong peaks.
type nondet struct{ *toy }

func (n nondet) Clone() alloc.Allocator {
	c := n.toy.Clone()
	if _, err := c.Alloc(mem.MiB, 0); err != nil {
		panic(err)
	}
	return c
}

func TestReplayCatchesNondeterminism(t *testing.T) {
	_, err := optrace.Replay(trace(t, "a a 8MiB", "f a", "e"), nondet{newToy(mem.MustDevice(mem.GiB, 0))})
	if err == nil || !strings.Contains(err.Error(), "is not deterministic") {
		t.Fatalf("got %v", err)
	}
}

// broken fails every free, as an allocator with a bug might.
type broken struct{ *toy }

func (broken) Free(alloc.Handle) error { return alloc.ErrInvalidHandle }

func TestReplayAllocatorError(t *testing.T) {
	_, err := optrace.Replay(trace(t, "a a 8MiB", "f a"), broken{newToy(mem.MustDevice(mem.GiB, 0))})
	if !errors.Is(err, alloc.ErrInvalidHandle) || !strings.HasPrefix(err.Error(), `line 2: free of "a": `) {
		t.Fatalf("got %v", err)
	}
}

func TestReplayAll(t *testing.T) {
	var built []string
	factory := func(s string) (alloc.Allocator, error) {
		built = append(built, s)
		switch strings.TrimSpace(s) {
		case "toy":
			return newToy(mem.MustDevice(80*mem.GiB, 0)), nil
		case "tiny":
			return newToy(mem.MustDevice(100*mem.MiB, 0)), nil
		}
		return nil, fmt.Errorf("%w: unknown allocator %q", alloc.ErrBadSpec, s)
	}
	rs, err := optrace.ReplayAll(contractTrace(t), []string{"tiny", " toy"}, factory)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Allocator != "tiny" || rs[1].Allocator != "toy" ||
		rs[0].OOMs != 6 || rs[0].SkippedOps != 2 || rs[1].OOMs != 0 || rs[1].PeakReservedBytes != 256*mem.MiB {
		t.Fatalf("%+v", rs)
	}

	built = nil
	if _, err := optrace.ReplayAll(contractTrace(t), []string{"toy", "nope", "toy"}, factory); !errors.Is(err, alloc.ErrBadSpec) || len(built) != 2 {
		t.Fatalf("bad spec: %v after building %v", err, built)
	}
	built = nil
	if _, err := optrace.ReplayAll(trace(t, "f x"), []string{"toy"}, factory); !errors.Is(err, optrace.ErrUnknownID) || len(built) != 0 {
		t.Fatalf("bad trace: %v after building %v", err, built)
	}
	if _, err := optrace.ReplayAll(trace(t, "a a 8MiB", "f a"), []string{"x"}, func(string) (alloc.Allocator, error) {
		return broken{newToy(mem.MustDevice(mem.GiB, 0))}, nil
	}); err == nil || !strings.HasPrefix(err.Error(), `allocator "x": line 2: free of "a": `) {
		t.Fatalf("allocator error: %v", err)
	}
}
