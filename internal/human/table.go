package human

import (
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// PluralS is "s" unless n is 1.
func PluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Thousands prints n with comma separators (5,000).
func Thousands(n int) string {
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

// Wrap breaks text into lines of at most width runes at spaces (a word
// longer than width gets a line of its own).
func Wrap(text string, width int) string {
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

// ClipName keeps the end of a name longer than n characters, after "…",
// so that a long name does not stretch a table's column: the end tells
// names apart (a file's own name is at the end of its path, a Kubernetes
// node's pool and suffix at the end of its name).
func ClipName(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

// Indent puts prefix before every line of text.
func Indent(text, prefix string) string {
	return prefix + strings.ReplaceAll(text, "\n", "\n"+prefix)
}

// Table is a plain-text table: the first column left-aligned, the others
// right-aligned, two spaces between columns, and optional group labels over
// runs of columns ("---- reserved ----"). Every cell is printed through
// untrusted.Printable: a node, run or allocator name from an input file cannot
// put a control character or a line break on the terminal.
type Table struct {
	Groups []Group
	Head   []string
	Rows   [][]string
}

// Group labels columns from..to (inclusive).
type Group struct {
	From, To int
	Label    string
}

const gap = "  "

// Write appends the table to sb.
func (t Table) Write(sb *strings.Builder) {
	width := make([]int, len(t.Head))
	rows := make([][]string, 0, len(t.Rows)+1)
	for _, row := range append([][]string{t.Head}, t.Rows...) {
		out := make([]string, len(row))
		for i, c := range row {
			out[i] = untrusted.Printable(c)
		}
		rows = append(rows, out)
	}
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	// Widen the columns of a group whose label does not fit.
	for _, g := range t.Groups {
		span := 0
		for i := g.From; i <= g.To; i++ {
			span += width[i]
		}
		span += len(gap) * (g.To - g.From)
		// Room for " label " and two dashes on each side, shared out.
		for i := g.From; span < len([]rune(g.Label))+6; i++ {
			width[g.From+(i-g.From)%(g.To-g.From+1)]++
			span++
		}
	}
	if len(t.Groups) > 0 {
		var line strings.Builder
		col := 0
		for _, g := range t.Groups {
			for ; col < g.From; col++ {
				if col > 0 {
					line.WriteString(gap)
				}
				line.WriteString(strings.Repeat(" ", width[col]))
			}
			if col > 0 {
				line.WriteString(gap)
			}
			span := len(gap) * (g.To - g.From)
			for i := g.From; i <= g.To; i++ {
				span += width[i]
			}
			label := " " + g.Label + " "
			left := (span - len([]rune(label))) / 2
			right := span - len([]rune(label)) - left
			line.WriteString(strings.Repeat("-", left) + label + strings.Repeat("-", right))
			col = g.To + 1
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
