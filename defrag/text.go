package defrag

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

// WriteText writes plan p of in for people (`gpufrag defrag` without
// --json): the file it was made for (a snapshot's device, or a saved
// layout), whether its goal was reached, a verdict in words (frag.Judge's
// weighing; why nothing can be gained when nothing moves), the moves,
// bytes moved against the lower bound, the bytes freed, the pause on gpu
// under cm, the metrics before and after, the planner's notes and the
// first maxMoves moves (-1: all; 0: none). Names from the file are escaped
// (untrusted.Printable).
func WriteText(w io.Writer, in Input, gpu model.GPU, cm CostModel, p Plan, maxMoves int) error {
	return WriteTextWidth(w, in, gpu, cm, p, maxMoves, 0)
}

// WriteTextWidth is WriteText for a terminal width columns wide (0: no
// limit, the layout of WriteText): a line longer than width wraps at its
// spaces, a sentence's further lines indented (human.WrapLong), a figure's
// (the pause and its cost model) under its value's column; the sentences
// that wrap at 80 columns in every layout wrap at width where that is
// narrower. The table of metrics before and after (54 columns) is left as
// it is.
func WriteTextWidth(w io.Writer, in Input, gpu model.GPU, cm CostModel, p Plan, maxMoves, width int) error {
	var b strings.Builder
	sb := &b
	pauseNs := Cost(p, gpu, cm)
	what := "saved layout"
	if in.Source == "snapshot" {
		what = fmt.Sprintf("snapshot, device %d", in.Device)
	}
	sb.WriteString(human.WrapLong(fmt.Sprintf("%s (%s, %s allocator rules)\n", untrusted.Printable(in.Name), what, p.Allocator), width))
	state := "reached"
	if !p.Reached {
		state = "NOT reached"
	}
	fmt.Fprintf(sb, "goal %s: %s\n%s\n", p.Goal, state, verdict(in, p, gpu, width))
	// A figure's value starts at column 16; one longer than the line
	// wraps under that column.
	row := func(k, v string) {
		if width > 0 && 16+utf8.RuneCountInString(v) > width {
			v = strings.ReplaceAll(human.Wrap(v, max(width-16, 20)), "\n", "\n"+strings.Repeat(" ", 16))
		}
		fmt.Fprintf(sb, "  %-13s %s\n", k, v)
	}
	row("moves", fmt.Sprintf("%d", len(p.Moves)))
	ratio := "-"
	if p.LowerBound > 0 && p.Reached {
		ratio = fmt.Sprintf("%.3f", float64(p.BytesMoved)/float64(p.LowerBound))
	}
	row("bytes moved", mem.FormatBytes(p.BytesMoved))
	row("lower bound", fmt.Sprintf("%s (moved / bound %s)", mem.FormatBytes(p.LowerBound), ratio))
	row("freed", fmt.Sprintf("%s of whole segments (empty_cache returns them)", mem.FormatBytes(p.FreedBytes)))
	if p.UnmapPages > 0 {
		row("remap", fmt.Sprintf("%d pages (%s) unmapped without copying", p.UnmapPages, mem.FormatBytes(p.UnmapBytes)))
	}
	row("pause", fmt.Sprintf("%s on %s (2 x bytes / (%.2f TB/s x %.2f) + %s per move + %s per page)",
		duration(pauseNs), gpu.Name, gpu.MemBandwidth/1e12, cm.Efficiency, duration(cm.LaunchNs), duration(cm.PageNs)))
	sb.WriteString("\n")
	fmt.Fprintf(sb, "  %-22s %14s %14s\n", "", "before", "after")
	mrow := func(k string, f func(m frag.Metrics) string) {
		fmt.Fprintf(sb, "  %-22s %14s %14s\n", k, f(p.Before), f(p.After))
	}
	bytesOf := func(g func(m frag.Metrics) int64) func(m frag.Metrics) string {
		return func(m frag.Metrics) string { return mem.FormatBytes(g(m)) }
	}
	mrow("reserved", bytesOf(func(m frag.Metrics) int64 { return m.Reserved }))
	mrow("allocated", bytesOf(func(m frag.Metrics) int64 { return m.Allocated }))
	mrow("cached free", bytesOf(func(m frag.Metrics) int64 { return m.CachedFree }))
	mrow("largest free block", bytesOf(func(m frag.Metrics) int64 { return m.LargestFreeBlock }))
	mrow("max allocatable (est.)", bytesOf(func(m frag.Metrics) int64 { return m.MaxAllocatable }))
	mrow("health", func(m frag.Metrics) string { return fmt.Sprintf("%.3f", m.Health) })
	mrow("frag rate", func(m frag.Metrics) string { return fmt.Sprintf("%.3f", m.FragRate) })
	mrow("segments", func(m frag.Metrics) string { return fmt.Sprintf("%d", m.Segments) })
	mrow("free blocks", func(m frag.Metrics) string { return fmt.Sprintf("%d", m.FreeBlocks) })
	after := "\n  After: the layout once the moves are done; the freed segments are still\n  reserved until empty_cache.\n"
	if width > 0 && width < 74 { // its first line's width
		after = "\n" + human.Indent(human.Wrap(after, width-2), "  ") + "\n"
	}
	sb.WriteString(after)
	if len(p.Notes) > 0 {
		sb.WriteString("\nNotes:\n")
		for _, n := range p.Notes {
			sb.WriteString(human.WrapLong("  - "+untrusted.Printable(n)+"\n", width))
		}
	}
	if len(p.Moves) > 0 && maxMoves != 0 {
		n := len(p.Moves)
		if maxMoves > 0 && maxMoves < n {
			n = maxMoves
		}
		fmt.Fprintf(sb, "\nMoves (%d of %d, in order):\n", n, len(p.Moves))
		for _, m := range p.Moves[:n] {
			fmt.Fprintf(sb, "  %s\n", m)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// duration prints a duration in the largest unit that keeps it readable.
func duration(ns int64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3f s", float64(ns)/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3f ms", float64(ns)/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f us", float64(ns)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}

// nothingToGain says why plan p of layout l has nothing to gain, "" when
// it has moves or pages to unmap, or when that is not the question: a
// fit goal (its notes say why it needs no moves or found no room) or a
// compaction stopped short of its goal. An allocator that moves no
// blocks is named as the reason; otherwise NothingToGain's explanation,
// which is about emptying segments, is given.
func nothingToGain(l mem.Layout, p Plan) string {
	switch {
	case len(p.Moves) > 0 || p.UnmapPages > 0 || p.Goal.Kind != GoalCompact || !p.Reached:
		return ""
	case p.fixed:
		return fmt.Sprintf("the %s allocator moves no blocks.", untrusted.Printable(p.Allocator))
	}
	return NothingToGain(l, p.Before)
}

// NothingToGain explains a plan without moves of layout l (m: its
// metrics) in a sentence: no free memory, free memory
// already in one piece, or, as the planner decides (doc.go,
// "Compaction"), no group (pool and stream) with as many free bytes as its
// smallest segment holding live blocks: emptying a segment frees its whole
// size, which cannot exceed the group's free bytes.
func NothingToGain(l mem.Layout, m frag.Metrics) string {
	switch {
	case m.CachedFree == 0:
		return "no memory inside the segments is free, so there is no gap to close."
	case m.FreeBlocks <= 1 || m.Health >= 1:
		return "the free memory is already one block."
	}
	type group struct {
		pool           string
		stream         int
		free, smallest int64
	}
	var gs []*group
	find := func(seg mem.Segment) *group {
		for _, g := range gs {
			if g.pool == seg.Pool && g.stream == seg.Stream {
				return g
			}
		}
		g := &group{pool: seg.Pool, stream: seg.Stream, smallest: -1}
		gs = append(gs, g)
		return g
	}
	for _, seg := range l.Segments {
		g := find(seg)
		live := false
		for _, b := range seg.Blocks {
			if b.State == mem.Free {
				g.free += b.Size
			} else {
				live = true
			}
		}
		if live && (g.smallest < 0 || seg.Size < g.smallest) {
			g.smallest = seg.Size
		}
	}
	var parts []string
	for _, g := range gs {
		if g.smallest >= 0 && g.free >= g.smallest {
			return "the live blocks of the segments that could be emptied do not fit in the free blocks of the others " +
				"(a block moves only within its pool and stream), so no segment can be freed."
		}
		if g.free > 0 {
			free, smallest := human.Bytes(g.free), human.Bytes(g.smallest)
			if free == smallest { // rounding hides that free < smallest
				free, smallest = human.Thousands(int(g.free))+" bytes", human.Thousands(int(g.smallest))+" bytes"
			}
			parts = append(parts, fmt.Sprintf("the %s pool (stream %d) has %s free and its smallest segment with live blocks is %s",
				untrusted.Printable(g.pool), g.stream, free, smallest))
		}
	}
	return "compaction frees memory by emptying whole segments into the free blocks of others of their pool and stream, " +
		"so a pool must have at least a segment's worth free; none has: " + strings.Join(parts, "; ") + "."
}
