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

// TestTableStackedAligns checks, for tables of several shapes and widths,
// that a stacked table's every line of figures puts each cell's end where
// its header's ends, one line per part of the columns (stackParts), that
// the parts fit, and that the group labels sit over their columns.
func TestTableStackedAligns(t *testing.T) {
	memory := Table{
		Groups: []Group{{From: 1, To: 1, Label: "reserved"}, {From: 2, To: 4, Label: "fragmentation"}},
		Head:   []string{"kv / allocator", "peak", "p50", "p99", "max", "min health"},
		Rows: [][]string{
			{"contiguous-max / caching", "48.88GiB", "0.51", "0.67", "0.67", "0.33"},
			{"vmm:2MiB – 2MiB…", "56.24GiB", "0.00", "0.00", "0.00", "1.00"},
		},
	}
	for _, tc := range []struct {
		table Table
		width int
		parts int
	}{{bandsLike(0), 40, 1}, {bandsLike(0), 25, 2}, {memory, 60, 1}, {memory, 40, 2}, {memory, 30, 3}} {
		tb := tc.table
		tb.Width = tc.width
		width := tb.widths(tb.cells(), 1)
		parts := tb.stackParts(width, tb.Width-len(stackIndent))
		if len(parts) != tc.parts {
			t.Errorf("width %d: %d parts %v, want %d", tc.width, len(parts), parts, tc.parts)
		}
		lines := strings.Split(strings.TrimSuffix(write(tb), "\n"), "\n")
		next := func() string {
			if len(lines) == 0 {
				t.Fatalf("width %d: the table ends early:\n%s", tc.width, write(tb))
			}
			l := lines[0]
			lines = lines[1:]
			return l
		}
		check := func(line string, cells []string, p [2]int) {
			if n := utf8.RuneCountInString(line); n > tb.Width {
				t.Errorf("width %d: %q is %d characters", tc.width, line, n)
			}
			at := len(stackIndent) - len(gap)
			for i := p[0]; i < p[1]; i++ {
				at += len(gap) + width[i]
				if prefix := string([]rune(line)[:at]); !strings.HasSuffix(prefix, cells[i]) {
					t.Errorf("width %d: %q: cell %q does not end at column %d", tc.width, line, cells[i], at)
				}
			}
			if n := utf8.RuneCountInString(line); n != at {
				t.Errorf("width %d: %q is %d characters, want %d", tc.width, line, n, at)
			}
		}
		if l := next(); l != tb.Head[0] {
			t.Errorf("width %d: first line %q, want the header's name", tc.width, l)
		}
		for _, p := range parts {
			if hasGroup(tb.Groups, p) {
				groups := []rune(next())
				at := len(stackIndent)
				for i := p[0]; i < p[1]; i++ {
					for _, g := range tb.Groups {
						if g.From != i {
							continue
						}
						end := at + len(gap)*(g.To-g.From)
						for j := g.From; j <= g.To; j++ {
							end += width[j]
						}
						span := string(groups[at:end])
						if !strings.HasPrefix(span, "-") || !strings.HasSuffix(span, "-") || !strings.Contains(span, " "+g.Label+" ") {
							t.Errorf("width %d: group %q over columns %d..%d: %q", tc.width, g.Label, g.From, g.To, span)
						}
					}
					at += width[i] + len(gap)
				}
			}
			check(next(), tb.Head, p)
		}
		for _, row := range tb.Rows {
			if l := next(); l != row[0] {
				t.Errorf("width %d: line %q, want the row's name %q", tc.width, l, row[0])
			}
			for _, p := range parts {
				check(next(), row, p)
			}
		}
		if len(lines) > 0 {
			t.Errorf("width %d: lines left over: %q", tc.width, lines)
		}
	}
}

func hasGroup(groups []Group, p [2]int) bool {
	for _, g := range groups {
		if g.From >= p[0] && g.From < p[1] {
			return true
		}
	}
	return false
}

// TestTableStackedTooWide: columns that do not fit on one line take
// several, a group's together; a group wider than the limit on its own is
// left so, every figure whole.
func TestTableStackedTooWide(t *testing.T) {
	want := `kv / allocator
  ----- TTFT ------
          p50   p99
  tokens/s
contiguous-grow / caching:expandable_segments:True
    1.1s–2.3s  5.6s
        71
paged:16 – pool…
  267ms–556ms  3.6s
        73
`
	if got := write(bandsLike(10)); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
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

// TestTableStackedEmptyPart: a row's part with no figures prints as an
// empty line, so that its next part stays under its own header.
func TestTableStackedEmptyPart(t *testing.T) {
	tb := Table{Head: []string{"n", "aaaa", "bbbb"}, Rows: [][]string{{"r", "", "2"}}, Width: 6}
	want := "n\n  aaaa\n  bbbb\nr\n\n     2\n"
	if got := write(tb); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestTableBeside: a first column narrow enough that the other cells fit
// beside it in no more parts than stacked keeps each row's name on its
// figures' line, the further parts indented to the second column; a
// name column that would take more parts stacks.
func TestTableBeside(t *testing.T) {
	tb := Table{
		Groups: []Group{{From: 1, To: 2, Label: "at 100%"}},
		Head:   []string{"policy", "allocated", "share", "failed pods", "first failure"},
		Rows: [][]string{
			{"random", "90.05% ±0.12", "9.95%", "322", "58.2% (42.5% idle)"},
			{"fgd", "97.99% ±0.14", "2.01%", "398", "98.1% (2.4% idle)"},
		},
		Width: 50,
	}
	want := `        ----- at 100% -----
policy     allocated  share  failed pods
             first failure
random  90.05% ±0.12  9.95%          322
        58.2% (42.5% idle)
fgd     97.99% ±0.14  2.01%          398
         98.1% (2.4% idle)
`
	got := write(tb)
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if n := Widest(got); n > tb.Width {
		t.Errorf("%d columns, over %d", n, tb.Width)
	}
	// Names that leave the figures too little room stack.
	tb.Rows[0][0] = "a-policy-with-a-long-name"
	if got := write(tb); !strings.Contains(got, "\na-policy-with-a-long-name\n") {
		t.Errorf("a long name does not stack:\n%s", got)
	}
	// An empty first column (a table whose every column is right-aligned)
	// wraps its columns into parts, each line indented by the gap.
	tb = Table{Head: []string{"", "rank", "kv", "req/s"}, Rows: [][]string{{"", "1", "paged:16", "6.81"}}, Width: 18}
	want = "  rank        kv\n  req/s\n     1  paged:16\n   6.81\n"
	if got := write(tb); got != want {
		t.Errorf("empty first column: got %q, want %q", got, want)
	}
}

// TestTableStackedShortRow: a row with fewer cells than the header stacks
// as far as its cells go, in both stacked layouts: its missing cells print
// nothing, not an empty line for each part of the columns they would be in
// (a row of a name alone is its name's line). Empty cells at a row's end
// read the same; an empty part before a figure still keeps its line
// (TestTableStackedEmptyPart).
func TestTableStackedShortRow(t *testing.T) {
	tb := Table{
		Head:  []string{"n", "aaaa", "bbbb", "cccc"},
		Rows:  [][]string{{"row-1", "1", "2", "3"}, {"row-2", "1"}, {"row-3"}, {"row-4", "", "2"}, {"row-5", "1", "", ""}},
		Width: 8,
	}
	want := "n\n  aaaa\n  bbbb\n  cccc\n" +
		"row-1\n     1\n     2\n     3\n" +
		"row-2\n     1\n" +
		"row-3\n" +
		"row-4\n\n     2\n" +
		"row-5\n     1\n"
	if got := write(tb); got != want {
		t.Errorf("stacked: got %q, want %q", got, want)
	}

	// Beside: short names, their figures in two parts.
	tb = Table{
		Head:  []string{"policy", "allocated", "share", "failed pods", "first failure"},
		Rows:  [][]string{{"random", "90.05%", "9.95%", "322", "58.2% (42.5% idle)"}, {"fgd", "97.99%"}, {"none"}},
		Width: 40,
	}
	want = "policy  allocated  share  failed pods\n" +
		"             first failure\n" +
		"random     90.05%  9.95%          322\n" +
		"        58.2% (42.5% idle)\n" +
		"fgd        97.99%\n" +
		"none\n"
	got := write(tb)
	if got != want {
		t.Errorf("beside: got %q, want %q", got, want)
	}
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			t.Errorf("beside: an empty line:\n%s", got)
		}
	}
}
