package defrag_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/testkit"
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

// TestWriteTextWidth: the fragmentation sentence and the pause (112 and
// 105 columns here), which a pipe or a file keeps, wrap on a terminal of 80 columns, the pause under its value's
// column; on 60 the sentences wrapped at 80 in every layout wrap too;
// every word kept; a terminal as wide as the widest line gets WriteText's
// bytes.
func TestWriteTextWidth(t *testing.T) {
	l := benchLayout(t, "caching", 500, 3)
	p, err := defrag.PlanLayout(l, defrag.Goal{}, defrag.Options{Allocator: registry.MustParse("caching")})
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := model.LookupGPU("h100-80g")
	if err != nil {
		t.Fatal(err)
	}
	in := defrag.Input{Name: "serving.pickle", Source: "snapshot", Layout: l}
	text := func(width int) string {
		var b strings.Builder
		if err := defrag.WriteTextWidth(&b, in, gpu, defrag.DefaultCostModel, p, -1, width); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	var plain strings.Builder
	if err := defrag.WriteText(&plain, in, gpu, defrag.DefaultCostModel, p, -1); err != nil {
		t.Fatal(err)
	}
	full := text(0)
	if full != plain.String() {
		t.Errorf("width 0 is not WriteText:\n%s\nwant:\n%s", full, plain.String())
	}
	_, line, _ := strings.Cut(full, "\n  pause ")
	line, _, _ = strings.Cut(line, "\n")
	if n := len("  pause ") + utf8.RuneCountInString(line); n <= 100 {
		t.Fatalf("the pause is %d columns (%q): the test needs one over 100", n, line)
	}
	n, _ := testkit.WidestLine(full)
	if got := text(n); got != full {
		t.Errorf("on %d columns:\n%s\nwant:\n%s", n, got, full)
	}
	sorted := func(text string) []string {
		w := strings.Fields(text)
		slices.Sort(w)
		return w
	}
	for _, cols := range []int{80, 60} {
		got := text(cols)
		if n, line := testkit.WidestLine(got); n > cols {
			t.Errorf("on %d columns a line is %d: %q\n%s", cols, n, line, got)
		}
		if !slices.Equal(sorted(got), sorted(full)) {
			t.Errorf("on %d columns the words differ from the full-width report's:\n%s", cols, got)
		}
	}
	// The pause's further line under its value.
	_, pause, _ := strings.Cut(text(80), "\n  pause         ")
	lines := strings.Split(pause, "\n")
	if !strings.HasPrefix(lines[1], strings.Repeat(" ", 16)+"per move") || !strings.HasSuffix(lines[1], " per page)") {
		t.Errorf("on 80 columns the pause reads:\n%s\n%s", lines[0], lines[1])
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
		// 2 MiB less 1 KiB free against a 2 MiB segment: both round to
		// 2.00MiB, so the bytes are given exactly.
		{"rounding", mem.Layout{Segments: []mem.Segment{
			seg(1<<30, "small", live(1<<20+512), free(1<<20-512)), seg(2<<30, "small", live(1<<20+512), free(1<<20-512))}},
			"the small pool (stream 0) has 2,096,128 bytes free and its smallest segment with live blocks is 2,097,152 bytes"},
	} {
		got := defrag.NothingToGain(c.l, frag.Compute(c.l))
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to say %q", c.name, got, c.want)
		}
	}
}

// The text's "nothing to gain" explains a compaction without moves: why
// no segment can be emptied, or that the allocator moves no blocks. It is
// not given for a fit goal, which is about room, not segments (reached
// with no moves, or not reached, as the notes say), nor for a compaction
// cut short of its goal (it said "no segment can be freed" beside
// "reached" and beside the fit notes).
func TestWriteTextNothingToGain(t *testing.T) {
	seg := func(addr uint64, liveN, freeN int64) mem.Segment {
		return mem.Segment{Addr: addr, Pool: "large", Size: liveN + freeN, Blocks: []mem.Block{
			{Addr: addr, Size: liveN, Requested: liveN, State: mem.Active}, {Addr: addr + uint64(liveN), Size: freeN, State: mem.Free}}}
	}
	// Two 20 MiB segments, each 16 MiB live: 8 MiB free in all, less than
	// a segment, so compaction cannot empty one.
	l := mem.Layout{Capacity: 80 << 30, DeviceFree: 80<<30 - 40<<20, Segments: []mem.Segment{seg(1<<30, 16<<20, 4<<20), seg(2<<30, 16<<20, 4<<20)}}
	gpu, err := model.LookupGPU("h100-80g")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, alloc string
		goal        defrag.Goal
		opts        defrag.Options
		want        string // "" for no such line
	}{
		{"compact", "caching", defrag.Goal{}, defrag.Options{}, "nothing to gain: compaction frees memory by emptying whole segments"},
		{"buddy", "buddy", defrag.Goal{}, defrag.Options{}, "nothing to gain: the buddy allocator moves no blocks.\n"},
		{"vmm", "vmm", defrag.Goal{}, defrag.Options{}, "nothing to gain: the vmm allocator moves no blocks.\n"},
		{"fit reached", "caching", defrag.Goal{Kind: defrag.GoalFit, Size: 2 << 20}, defrag.Options{}, ""},
		{"fit not reached", "caching", defrag.Goal{Kind: defrag.GoalFit, Size: 40 << 20}, defrag.Options{}, ""},
	} {
		c.opts.Allocator = registry.MustParse(c.alloc)
		p, err := defrag.PlanLayout(l, c.goal, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(p.Moves) != 0 {
			t.Fatalf("%s: %d moves, want none", c.name, len(p.Moves))
		}
		var b strings.Builder
		if err := defrag.WriteText(&b, defrag.Input{Name: "l.json", Source: "layout", Layout: l}, gpu, defrag.DefaultCostModel, p, 0); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if got := strings.Count(out, "nothing to gain"); c.want == "" && got != 0 || c.want != "" && (got != 1 || !strings.Contains(out, c.want)) {
			t.Errorf("%s: want %q:\n%s", c.name, c.want, out)
		}
	}
	// Two segments, 4 MiB live in each: one could be emptied into the
	// other, but a cap of 1 byte moved stops the compaction first.
	l = mem.Layout{Capacity: 80 << 30, DeviceFree: 80<<30 - 40<<20, Segments: []mem.Segment{seg(1<<30, 4<<20, 16<<20), seg(2<<30, 4<<20, 16<<20)}}
	p, err := defrag.PlanLayout(l, defrag.Goal{}, defrag.Options{Allocator: registry.MustParse("caching"), MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := defrag.WriteText(&b, defrag.Input{Name: "l.json", Source: "layout", Layout: l}, gpu, defrag.DefaultCostModel, p, 0); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); len(p.Moves) != 0 || p.Reached || strings.Contains(out, "nothing to gain") {
		t.Errorf("capped: %d moves, reached %v:\n%s", len(p.Moves), p.Reached, out)
	}
}
