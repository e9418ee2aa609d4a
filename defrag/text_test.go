package defrag_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

// TestWriteText: the text report names the file and its source, the goal
// and whether it was reached, the moves and their count cut at maxMoves,
// the pause on the GPU, and the metrics before and after.
func TestWriteText(t *testing.T) {
	l := benchLayout(t, "caching", 500, 3)
	p, err := defrag.PlanLayout(l, defrag.Goal{}, defrag.Options{Allocator: registry.MustParse("caching")})
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := model.LookupGPU("h100-80g")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := defrag.WriteText(&b, defrag.Input{Name: "s\x1b.pickle", Source: "snapshot", Device: 2, Layout: l}, gpu, defrag.DefaultCostModel, p, 2); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`s\x1b.pickle (snapshot, device 2, caching allocator rules)`, "goal compact: reached\nfragmentation: ",
		"max allocatable assumes the h100-80g's usable", "gpufrag analyze\ntakes --capacity, else the capacity an oom entry of the trace records, else\n80.00GiB",
		fmt.Sprintf("  moves         %d\n", len(p.Moves)), " on h100-80g (2 x bytes", "health",
		fmt.Sprintf("Moves (2 of %d, in order):", len(p.Moves)),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := defrag.WriteText(&b, defrag.Input{Name: "l.json", Source: "layout", Layout: l}, gpu, defrag.DefaultCostModel, p, 0); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.HasPrefix(out, "l.json (saved layout, ") || strings.Contains(out, "Moves (") ||
		strings.Contains(out, "gpufrag analyze assumes") {
		t.Errorf("a layout file with --moves 0:\n%s", out)
	}
}

// TestNothingToGain: each reason a plan has no moves, in words.
func TestNothingToGain(t *testing.T) {
	seg := func(addr uint64, pool string, blocks ...mem.Block) mem.Segment {
		s := mem.Segment{Addr: addr, Pool: pool}
		for _, b := range blocks {
			b.Addr = addr + uint64(s.Size)
			s.Size += b.Size
			s.Blocks = append(s.Blocks, b)
		}
		return s
	}
	live := func(n int64) mem.Block { return mem.Block{Size: n, Requested: n, State: mem.Active} }
	free := func(n int64) mem.Block { return mem.Block{Size: n, State: mem.Free} }
	for _, c := range []struct {
		name string
		l    mem.Layout
		want string
	}{
		{"full", mem.Layout{Segments: []mem.Segment{seg(1<<30, "large", live(2<<20))}}, "no memory inside the segments is free"},
		{"one hole", mem.Layout{Segments: []mem.Segment{seg(1<<30, "large", live(1<<20), free(1<<20))}}, "already one block"},
		{"too little free", mem.Layout{Segments: []mem.Segment{
			seg(1<<30, "large", live(3<<19), free(1<<19)), seg(2<<30, "large", live(3<<19), free(1<<19))}},
			"the large pool (stream 0) has 1.00MiB free and its smallest segment with live blocks is 2.00MiB"},
	} {
		got := defrag.NothingToGain(c.l, frag.Compute(c.l))
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to say %q", c.name, got, c.want)
		}
	}
}
