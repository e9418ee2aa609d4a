package human

import (
	"strconv"
	"strings"
	"unicode/utf8"

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
//
// A table wider than Width (a terminal's columns; 0, the default, is no
// limit: pipes, files and golden outputs) prints stacked: each row's first
// cell on a line of its own and its other cells on the next line, indented,
// under the header's, which is stacked the same way with the group labels
// over its columns. Where the other cells do not fit on one line they take
// several, the header's and every row's split at the same columns and never
// inside a group. The columns keep their widths, so the figures line up
// under their headers; a column or group wider than Width on its own is left
// so (the terminal wraps it), never cut. Where the other cells fit beside
// the first column in no more lines than they take stacked (a short first
// cell: a policy, a rank), each row's first cell stays at the start of its
// line instead, and the lines of its further parts are indented to the
// second column (besideParts): the name's own line is saved. A row with
// fewer cells than the header is laid out as if its missing cells were
// empty; in either stacked layout a row ends at its last part with a
// figure, so missing or empty cells at its end print no empty lines.
type Table struct {
	Groups []Group
	Head   []string
	Rows   [][]string
	Width  int
}

// Group labels columns from..to (inclusive).
type Group struct {
	From, To int
	Label    string
}

const gap = "  "

// stackIndent indents a stacked table's lines of figures under their row's
// name: as wide as the gap between columns, so that a stacked line is never
// wider than the row's line was.
const stackIndent = "  "

// Write appends the table to sb.
func (t Table) Write(sb *strings.Builder) {
	rows := t.cells()
	if t.Width <= 0 {
		t.writeWide(sb, rows, t.widths(rows, 0))
		return
	}
	var wide strings.Builder
	t.writeWide(&wide, rows, t.widths(rows, 0))
	if Widest(wide.String()) <= t.Width {
		sb.WriteString(wide.String())
		return
	}
	width := t.widths(rows, 1)
	if parts, ok := t.besideParts(width); ok {
		t.writeBeside(sb, rows, width, parts)
		return
	}
	t.writeStacked(sb, rows, width)
}

// cells returns the header and rows as they print, through
// untrusted.Printable.
func (t Table) cells() [][]string {
	rows := make([][]string, 0, len(t.Rows)+1)
	for _, row := range append([][]string{t.Head}, t.Rows...) {
		out := make([]string, len(row))
		for i, c := range row {
			out[i] = untrusted.Printable(c)
		}
		rows = append(rows, out)
	}
	return rows
}

// widths returns each column's width in characters, widened where a
// group's label needs the room over its columns from column from on (1 for
// the stacked layout, whose group labels leave out the first column).
func (t Table) widths(rows [][]string, from int) []int {
	width := make([]int, len(t.Head))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	// Widen the columns of a group whose label does not fit.
	for _, g := range t.Groups {
		if g.To < from {
			continue
		}
		g.From = max(g.From, from)
		span := 0
		for i := g.From; i <= g.To; i++ {
			span += width[i]
		}
		span += len(gap) * (g.To - g.From)
		// Room for " label " and two dashes on each side, shared out.
		for i := g.From; span < utf8.RuneCountInString(g.Label)+6; i++ {
			width[g.From+(i-g.From)%(g.To-g.From+1)]++
			span++
		}
	}
	return width
}

// writeWide writes the table one line per row.
func (t Table) writeWide(sb *strings.Builder, rows [][]string, width []int) {
	if len(t.Groups) > 0 {
		sb.WriteString(strings.TrimRight(groupLine(t.Groups, width, 0, len(width)), " ") + "\n")
	}
	for _, row := range rows {
		sb.WriteString(strings.TrimRight(cellLine(row, width, 0, len(width)), " ") + "\n")
	}
}

// writeStacked writes each row (the header too) as its first cell on a
// line, then its other cells on the next, indented, or on the next few
// where they do not fit on one (stackParts); the group labels go over the
// header's cells.
func (t Table) writeStacked(sb *strings.Builder, rows [][]string, width []int) {
	parts := t.stackParts(width, t.Width-len(stackIndent))
	for r, row := range rows {
		if len(row) > 0 {
			writeLine(sb, "", row[0])
		}
		last := lastPart(row, width, parts)
		for i, p := range parts {
			if r == 0 && len(t.Groups) > 0 {
				writeLine(sb, stackIndent, groupLine(t.Groups, width, p[0], p[1]))
			}
			if i > last {
				continue // no figures left in the row: no empty lines after it
			}
			line := cellLine(row, width, p[0], p[1])
			if strings.TrimSpace(line) == "" {
				sb.WriteString("\n") // the row's next part stays on its own line
				continue
			}
			writeLine(sb, stackIndent, line)
		}
	}
}

// lastPart is the index of the last of parts in which row has a cell that
// is not empty, -1 when none is: a stacked row prints its parts up to it,
// an empty part before it as an empty line (its next part stays under its
// own header) and none after it. A row with fewer cells than the header
// (missing cells print as empty ones) or with empty cells at its end so
// ends at its last figure instead of with empty lines.
func lastPart(row []string, width []int, parts [][2]int) int {
	last := -1
	for i, p := range parts {
		if strings.TrimSpace(cellLine(row, width, p[0], p[1])) != "" {
			last = i
		}
	}
	return last
}

// besideParts returns the parts of columns 1 on (stackParts) for the
// layout that keeps each row's first cell beside its other cells
// (writeBeside), and whether that layout is the one to print: every part
// fits beside the first column, in no more parts than the stacked layout
// takes (so a row takes fewer lines than stacked, its name on no line of
// its own). A short name, a policy or a rank, stays on its figures' line;
// a long one, beside which the figures would take more lines, stacks.
func (t Table) besideParts(width []int) ([][2]int, bool) {
	if len(width) < 2 {
		return nil, false
	}
	avail := t.Width - width[0] - len(gap)
	parts := t.stackParts(width, avail)
	if len(parts) > len(t.stackParts(width, t.Width-len(stackIndent))) {
		return nil, false
	}
	for _, p := range parts {
		w := len(gap) * (p[1] - p[0] - 1)
		for i := p[0]; i < p[1]; i++ {
			w += width[i]
		}
		if w > avail {
			return nil, false
		}
	}
	return parts, true
}

// writeBeside writes each row (the header too) as its first cell, padded
// to its column, then its other cells' first part on the same line, and
// each further part on a line of its own, indented to the same column; the
// group labels go over the header's cells of each part.
func (t Table) writeBeside(sb *strings.Builder, rows [][]string, width []int, parts [][2]int) {
	indent := strings.Repeat(" ", width[0]+len(gap))
	for r, row := range rows {
		// The first part's line holds the row's name too; after the last
		// part with figures (lastPart) the row prints nothing more.
		last := lastPart(row, width, parts)
		if last < 0 && len(row) > 0 && strings.TrimSpace(row[0]) != "" {
			last = 0
		}
		for i, p := range parts {
			if r == 0 && len(t.Groups) > 0 {
				writeLine(sb, indent, groupLine(t.Groups, width, p[0], p[1]))
			}
			if i > last {
				continue
			}
			prefix := indent
			if i == 0 {
				prefix = cellLine(row, width, 0, 1) + gap
			}
			line := strings.TrimRight(prefix+cellLine(row, width, p[0], p[1]), " ")
			sb.WriteString(line + "\n") // an empty part stays a line: the next part stays under its header
		}
	}
}

// stackParts splits columns 1 on into runs [from, to) that each fit in
// avail characters, filled in order; a group's columns stay in one run. A
// run wider than avail is a group or a column that is so alone.
func (t Table) stackParts(width []int, avail int) [][2]int {
	var parts [][2]int
	start, used := 1, 0
	for col := 1; col < len(width); {
		end := col + 1 // the unit: the column, or its group's columns
		for _, g := range t.Groups {
			if g.From <= col && col <= g.To {
				end = g.To + 1
			}
		}
		w := len(gap) * (end - col - 1)
		for i := col; i < end; i++ {
			w += width[i]
		}
		if used > 0 && used+len(gap)+w > avail {
			parts = append(parts, [2]int{start, col})
			start, used = col, 0
		}
		if used > 0 {
			used += len(gap)
		}
		used += w
		col = end
	}
	return append(parts, [2]int{start, len(width)})
}

// writeLine writes prefix and line, without trailing spaces; nothing when
// line has nothing but spaces.
func writeLine(sb *strings.Builder, prefix, line string) {
	if line = strings.TrimRight(line, " "); line != "" {
		sb.WriteString(prefix + line + "\n")
	}
}

// cellLine lays out row's cells in columns [from, to): column 0
// left-aligned, the others right-aligned, gap between them.
func cellLine(row []string, width []int, from, to int) string {
	var line strings.Builder
	for i := from; i < min(to, len(row)); i++ {
		c := row[i]
		if i > from {
			line.WriteString(gap)
		}
		pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
		if i == 0 {
			line.WriteString(c + pad)
		} else {
			line.WriteString(pad + c)
		}
	}
	return line.String()
}

// groupLine lays out the group labels over columns [from, to), each
// centred in dashes over its columns; a group's columns outside them are
// left out.
func groupLine(groups []Group, width []int, from, to int) string {
	var line strings.Builder
	col := from
	for _, g := range groups {
		if g.To < from || g.From >= to {
			continue
		}
		g.From, g.To = max(g.From, from), min(g.To, to-1)
		for ; col < g.From; col++ {
			if col > from {
				line.WriteString(gap)
			}
			line.WriteString(strings.Repeat(" ", width[col]))
		}
		if col > from {
			line.WriteString(gap)
		}
		span := len(gap) * (g.To - g.From)
		for i := g.From; i <= g.To; i++ {
			span += width[i]
		}
		label := " " + g.Label + " "
		n := utf8.RuneCountInString(label)
		left := max(span-n, 0) / 2
		right := max(span-n-left, 0)
		line.WriteString(strings.Repeat("-", left) + label + strings.Repeat("-", right))
		col = g.To + 1
	}
	return line.String()
}

// Widest is the width in characters of text's longest line: whether a
// text fits a terminal of that many columns.
func Widest(text string) int {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		n = max(n, utf8.RuneCountInString(line))
	}
	return n
}
