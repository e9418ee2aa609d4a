package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/loc"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/optrace"
)

// writeReplayReport prints replay results for people: a header saying what
// was replayed, a table with one row per allocator, a legend, and the first
// out-of-memory error of each allocator that had one.
func writeReplayReport(sb *strings.Builder, name string, embedded bool, nops int, capacity, other int64, rs []optrace.Result) {
	what := loc.Printable(name)
	if embedded {
		what = "the embedded example trace (a Llama-3-8B-like server; see gpufrag replay --help)"
	}
	device := "a device of " + mem.FormatBytes(capacity)
	if other > 0 {
		device += " (" + mem.FormatBytes(other) + " of it in other use)"
	}
	plural := "s"
	if len(rs) == 1 {
		plural = ""
	}
	fmt.Fprintf(sb, "%s\n\n", wrap(fmt.Sprintf("Replayed %s ops of %s through %d allocator%s on %s.",
		thousands(nops), what, len(rs), plural, device), 80))

	t := table{
		groups: []group{{1, 2, "reserved"}, {3, 4, "allocated"}, {6, 7, "health"}, {8, 9, "at the end"}},
		head:   []string{"allocator", "peak", "end", "peak", "end", "OOMs", "peak", "end", "largest free", "max allocatable"},
	}
	for _, r := range rs {
		t.rows = append(t.rows, []string{
			r.Allocator,
			human.Bytes(r.PeakReservedBytes), human.Bytes(r.EndReservedBytes),
			human.Bytes(r.PeakAllocatedBytes), human.Bytes(r.EndAllocatedBytes),
			strconv.Itoa(r.OOMs),
			fmt.Sprintf("%.2f", r.AtPeak.Health), fmt.Sprintf("%.2f", r.End.Health),
			human.Bytes(r.End.LargestFreeBlock), human.Bytes(r.End.MaxAllocatable),
		})
	}
	t.write(sb)

	sb.WriteString("\nhealth: largest free block ÷ free memory inside the allocator's segments\n" +
		"        (1 = one piece; below 0.5 it is worth acting on when memory is at stake)\n")
	if len(rs) > 1 {
		lo, hi := rs[0].PeakReservedBytes, rs[0].PeakReservedBytes
		for _, r := range rs {
			lo, hi = min(lo, r.PeakReservedBytes), max(hi, r.PeakReservedBytes)
		}
		if lo != hi {
			fmt.Fprintf(sb, "peak reserved: from %s (%s) to %s (%s)\n",
				human.Bytes(lo), allocatorsWith(rs, lo), human.Bytes(hi), allocatorsWith(rs, hi))
		}
	}

	sb.WriteString("\nAt the end, weighed by the memory at stake:\n")
	for _, r := range rs {
		v := frag.Judge(frag.Stake{Health: r.End.Health, CachedFree: r.EndReservedBytes - r.EndAllocatedBytes,
			Reserved: r.EndReservedBytes, Capacity: capacity, OOMs: r.OOMs})
		fmt.Fprintf(sb, "%s\n", wrapHang(fmt.Sprintf("  %s: %s (%s)", r.Allocator, v.Label, v.Why), 80, 6))
	}

	heading := true
	for _, r := range rs {
		o := r.FirstOOM
		if o == nil {
			continue
		}
		if heading {
			sb.WriteString("\nOut of memory:\n")
			heading = false
		}
		skipped := ""
		if r.SkippedOps > 0 {
			skipped = fmt.Sprintf(", %s later op%s on their ids skipped", thousands(r.SkippedOps), pluralS(r.SkippedOps))
		}
		fmt.Fprintf(sb, "  %s: %s alloc%s failed%s\n", r.Allocator, thousands(r.OOMs), pluralS(r.OOMs), skipped)
		first := fmt.Sprintf("first on line %d (%s, %s): %s", o.Line, loc.Printable(o.ID), human.Bytes(o.Size), loc.Printable(o.Message))
		fmt.Fprintf(sb, "%s\n", indent(wrap(first, 76), "    "))
	}
}

func allocatorsWith(rs []optrace.Result, peak int64) string {
	var names []string
	for _, r := range rs {
		if r.PeakReservedBytes == peak {
			names = append(names, r.Allocator)
		}
	}
	return strings.Join(names, ", ")
}

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// thousands prints n with comma separators (5,000).
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// wrap breaks text into lines of at most width runes at spaces (a word
// longer than width gets a line of its own).
func wrap(text string, width int) string {
	var sb strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		l := len([]rune(w))
		if n > 0 && n+1+l > width {
			sb.WriteByte('\n')
			n = 0
		}
		if n > 0 {
			sb.WriteByte(' ')
			n++
		}
		sb.WriteString(w)
		n += l
	}
	return sb.String()
}

func indent(text, prefix string) string {
	return prefix + strings.ReplaceAll(text, "\n", "\n"+prefix)
}

// table is a plain-text table: the first column left-aligned, the others
// right-aligned, two spaces between columns, and optional group labels over
// runs of columns ("---- reserved ----"). Every cell is printed through
// loc.Printable: a node, run or allocator name from an input file cannot
// put a control character or a line break on the terminal.
type table struct {
	groups []group
	head   []string
	rows   [][]string
}

// group labels columns from..to (inclusive).
type group struct {
	from, to int
	label    string
}

const gap = "  "

func (t table) write(sb *strings.Builder) {
	width := make([]int, len(t.head))
	rows := make([][]string, 0, len(t.rows)+1)
	for _, row := range append([][]string{t.head}, t.rows...) {
		out := make([]string, len(row))
		for i, c := range row {
			out[i] = loc.Printable(c)
		}
		rows = append(rows, out)
	}
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	// Widen the columns of a group whose label does not fit.
	for _, g := range t.groups {
		span := 0
		for i := g.from; i <= g.to; i++ {
			span += width[i]
		}
		span += len(gap) * (g.to - g.from)
		// Room for " label " and two dashes on each side, shared out.
		for i := g.from; span < len([]rune(g.label))+6; i++ {
			width[g.from+(i-g.from)%(g.to-g.from+1)]++
			span++
		}
	}
	if len(t.groups) > 0 {
		var line strings.Builder
		col := 0
		for _, g := range t.groups {
			for ; col < g.from; col++ {
				if col > 0 {
					line.WriteString(gap)
				}
				line.WriteString(strings.Repeat(" ", width[col]))
			}
			if col > 0 {
				line.WriteString(gap)
			}
			span := len(gap) * (g.to - g.from)
			for i := g.from; i <= g.to; i++ {
				span += width[i]
			}
			label := " " + g.label + " "
			left := (span - len([]rune(label))) / 2
			right := span - len([]rune(label)) - left
			line.WriteString(strings.Repeat("-", left) + label + strings.Repeat("-", right))
			col = g.to + 1
		}
		sb.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	for _, row := range rows {
		var line strings.Builder
		for i, c := range row {
			if i > 0 {
				line.WriteString(gap)
			}
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i == 0 {
				line.WriteString(c + pad)
			} else {
				line.WriteString(pad + c)
			}
		}
		sb.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}
