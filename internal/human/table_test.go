package human

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// bandsLike is a table shaped like simulate's: a long first column, a group
// label over two columns, and cells with en dashes and ellipses (one
// character each, several bytes in UTF-8).
func bandsLike(width int) Table {
	return Table{
		Groups: []Group{{From: 1, To: 2, Label: "TTFT"}},
		Head:   []string{"kv / allocator", "p50", "p99", "tokens/s"},
		Rows: [][]string{
			{"contiguous-grow / caching:expandable_segments:True", "1.1s–2.3s", "5.6s", "71"},
			{"paged:16 – pool…", "267ms–556ms", "3.6s", "73"},
		},
		Width: width,
	}
}

func write(t Table) string {
	var sb strings.Builder
	t.Write(&sb)
	return sb.String()
}

func TestTableWide(t *testing.T) {
	want := `                                                    ----- TTFT ------
kv / allocator                                              p50   p99  tokens/s
contiguous-grow / caching:expandable_segments:True    1.1s–2.3s  5.6s        71
paged:16 – pool…                                    267ms–556ms  3.6s        73
`
	// No limit, and limits the table fits, print the one layout.
	for _, w := range []int{0, 79, 80, 200} {
		if got := write(bandsLike(w)); got != want {
			t.Errorf("Width %d:\n%s\nwant:\n%s", w, got, want)
		}
	}
}

func TestTableStacked(t *testing.T) {
	want := `kv / allocator
  ----- TTFT ------
          p50   p99  tokens/s
contiguous-grow / caching:expandable_segments:True
    1.1s–2.3s  5.6s        71
paged:16 – pool…
  267ms–556ms  3.6s        73
`
	for _, w := range []int{78, 60, 50} {
		got := write(bandsLike(w))
		if got != want {
			t.Errorf("Width %d:\n%s\nwant:\n%s", w, got, want)
		}
	}
}

// TestTableStackedAligns checks, for tables of several shapes, that a
// stacked table's lines of figures all end at the same column (the last
// column is right-aligned), that every other column's cells end where its
// header does, and that the group labels sit over their columns.
func TestTableStackedAligns(t *testing.T) {
	tables := []Table{
		bandsLike(40),
		{
			Groups: []Group{{From: 1, To: 1, Label: "reserved"}, {From: 2, To: 4, Label: "fragmentation"}},
			Head:   []string{"kv / allocator", "peak", "p50", "p99", "max", "min health"},
			Rows: [][]string{
				{"contiguous-max / caching", "48.88GiB", "0.51", "0.67", "0.67", "0.33"},
				{"vmm:2MiB / vmm:2MiB", "56.24GiB", "0.00", "0.00", "0.00", "1.00"},
			},
			Width: 30,
		},
	}
	for _, tb := range tables {
		width := tb.widths(tb.cells(), 1)
		lines := strings.Split(strings.TrimSuffix(write(tb), "\n"), "\n")
		// Header: name, groups, heads; then a name and a figures line a row.
		if want := 3 + 2*len(tb.Rows); len(lines) != want {
			t.Fatalf("%d lines, want %d:\n%s", len(lines), want, strings.Join(lines, "\n"))
		}
		figures := []string{lines[2]}
		for i := range tb.Rows {
			if lines[3+2*i] != tb.Rows[i][0] {
				t.Errorf("line %d = %q, want the row's name %q", 3+2*i, lines[3+2*i], tb.Rows[i][0])
			}
			figures = append(figures, lines[4+2*i])
		}
		// Each column's right edge, in characters from the line's start.
		edge := make([]int, len(width))
		at := len(stackIndent) - len(gap)
		for i := 1; i < len(width); i++ {
			at += len(gap) + width[i]
			edge[i] = at
		}
		for r, line := range figures {
			cells := append([]string{""}, tb.Head[1:]...)
			if r > 0 {
				cells = tb.Rows[r-1]
			}
			for i := 1; i < len(cells); i++ {
				prefix := string([]rune(line)[:edge[i]])
				if !strings.HasSuffix(prefix, cells[i]) {
					t.Errorf("%q: cell %q does not end at column %d", line, cells[i], edge[i])
				}
			}
			if n := utf8.RuneCountInString(line); n != edge[len(edge)-1] {
				t.Errorf("%q is %d characters, want %d", line, n, edge[len(edge)-1])
			}
		}
		// Each label's dashes span its columns exactly.
		groups := []rune(lines[1])
		for _, g := range tb.Groups {
			from, to := edge[g.From]-width[g.From], edge[g.To]
			span := string(groups[from:to])
			if !strings.HasPrefix(span, "-") || !strings.HasSuffix(span, "-") || !strings.Contains(span, " "+g.Label+" ") {
				t.Errorf("group %q over columns %d..%d: %q", g.Label, g.From, g.To, span)
			}
		}
	}
}

// TestTableStackedTooWide: a table that does not fit even stacked prints
// stacked, every figure whole.
func TestTableStackedTooWide(t *testing.T) {
	got := write(bandsLike(10))
	if got != write(bandsLike(78)) {
		t.Errorf("Width 10:\n%s", got)
	}
	for _, row := range bandsLike(10).Rows {
		for _, c := range row {
			if !strings.Contains(got, c) {
				t.Errorf("cell %q is missing:\n%s", c, got)
			}
		}
	}
}

// TestTableStackedEdges: a group over the first column keeps its other
// columns' part, a row without a name prints no empty line, and a cell with
// a control character prints escaped in both layouts.
func TestTableStackedEdges(t *testing.T) {
	tb := Table{
		Groups: []Group{{From: 0, To: 1, Label: "both"}},
		Head:   []string{"name", "value"},
		Rows:   [][]string{{"a\x1b[2Jb", "1"}, {"", "2"}},
		Width:  5,
	}
	want := `name
  -- both --
       value
a\x1b[2Jb
           1
           2
`
	if got := write(tb); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
