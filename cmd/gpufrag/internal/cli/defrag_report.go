package cli

import (
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/loc"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

// writeDefragReport renders a plan for people.
func writeDefragReport(sb *strings.Builder, name, source string, device int, gpu model.GPU, cm defrag.CostModel,
	goal defrag.Goal, p defrag.Plan, pauseNs int64, maxMoves int) {
	what := "saved layout"
	if source == "snapshot" {
		what = fmt.Sprintf("snapshot, device %d", device)
	}
	fmt.Fprintf(sb, "%s (%s, %s allocator rules)\n", loc.Printable(name), what, p.Allocator)
	state := "reached"
	if !p.Reached {
		state = "NOT reached"
	}
	fmt.Fprintf(sb, "goal %s: %s\n\n", goal, state)
	row := func(k, v string) { fmt.Fprintf(sb, "  %-13s %s\n", k, v) }
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
		defragDuration(pauseNs), gpu.Name, gpu.MemBandwidth/1e12, cm.Efficiency, defragDuration(cm.LaunchNs), defragDuration(cm.PageNs)))
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
	sb.WriteString("\n  After: the layout once the moves are done; the freed segments are still\n  reserved until empty_cache.\n")
	if len(p.Notes) > 0 {
		sb.WriteString("\nNotes:\n")
		for _, n := range p.Notes {
			sb.WriteString("  - " + loc.Printable(n) + "\n")
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
}

// defragDuration prints a duration in the largest unit that keeps it readable.
func defragDuration(ns int64) string {
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
