package analysis_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// section is the lines of text's section that starts with the line title,
// up to the empty line or the end that ends it.
func section(t *testing.T, text, title string) string {
	t.Helper()
	_, s, ok := strings.Cut(text, "\n"+title+"\n")
	if !ok {
		t.Fatalf("no %q in:\n%s", title, text)
	}
	s, _, _ = strings.Cut(s, "\n\n")
	return strings.TrimSuffix(s, "\n") // the report's last section
}

func widestOf(text string) (int, string) {
	n, widest := 0, ""
	for _, line := range strings.Split(text, "\n") {
		if c := utf8.RuneCountInString(line); c > n {
			n, widest = c, line
		}
	}
	return n, widest
}

// TestWorstSegmentsFitTerminal: the table of the segments that waste most
// has fixed columns 83 characters wide, which a pipe or a file keeps
// (WriteText) and so does a terminal wide enough; on a terminal of 80
// columns (it was 83 there too) the columns are as wide as their headings
// and cells, each segment still on one line with all its figures; a long
// pool name (a snapshot's own segment type) keeps its end there.
func TestWorstSegmentsFitTerminal(t *testing.T) {
	r, err := analysis.Analyze(readFixture(t, "modern_p4.pickle", false), analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const title = "Segments that waste most (stranded free + rounding)"
	text := func(width int) string {
		var b strings.Builder
		if err := r.WriteTextWidth(&b, "modern_p4.pickle", width); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	full := section(t, text(0), title)
	wantFull := "  address                size pool      live  free   stranded    largest   rounding\n" +
		"  0x7f0000400000        20MiB large        1     1       8MiB       8MiB       100B\n" +
		"  0x7f0000000000         2MiB small        2     1    2.00MiB    2.00MiB       236B"
	if full != wantFull {
		t.Errorf("without a width:\n%s\nwant:\n%s", full, wantFull)
	}
	if got := section(t, text(83), title); got != full {
		t.Errorf("on 83 columns:\n%s\nwant the fixed columns:\n%s", got, full)
	}
	narrow := section(t, text(80), title)
	want := "  address          size   pool  live  free  stranded  largest  rounding\n" +
		"  0x7f0000400000  20MiB  large     1     1      8MiB     8MiB      100B\n" +
		"  0x7f0000000000   2MiB  small     2     1   2.00MiB  2.00MiB      236B"
	if narrow != want {
		t.Errorf("on 80 columns:\n%s\nwant:\n%s", narrow, want)
	}

	long := "segment type of a snapshot from somebody else"
	r.Devices[0].WorstSegments[0].Pool = long
	if full := section(t, text(0), title); !strings.Contains(full, " "+long+" ") {
		t.Errorf("without a width the pool is not whole:\n%s", full)
	}
	narrow = section(t, text(80), title)
	if n, line := widestOf(narrow); n > 80 {
		t.Errorf("on 80 columns with a long pool a line is %d: %q\n%s", n, line, narrow)
	}
	rows := strings.Split(narrow, "\n")
	if len(rows) != 3 || !strings.HasPrefix(rows[1], "  0x7f0000400000  ") || !strings.Contains(rows[1], " …"+long[len(long)-11:]+" ") ||
		!slices.Equal(strings.Fields(rows[2]), strings.Fields(strings.Split(want, "\n")[2])) {
		t.Errorf("on 80 columns with a long pool:\n%s", narrow)
	}
}

// TestAttributionHeadingFitsTerminal: the attribution table's site column
// is headed "call site (first frame outside PyTorch and Python)", 99
// columns with the figures' headings (a pipe or a file keeps them); on a
// terminal narrower than that the heading wraps within its column, and
// where the sites print under their figures (a terminal too narrow for
// them beside) the heading does too.
func TestAttributionHeadingFitsTerminal(t *testing.T) {
	s := snap(nil, seg(segA, "large", live(4*mib, 4*mib, "serve"), free(4*mib)))
	r, err := analysis.Analyze(s, analysis.Options{NoReplay: true})
	if err != nil {
		t.Fatal(err)
	}
	const title = "Memory by allocation site: live blocks, the free space they strand, rounding"
	text := func(width int) string {
		var b strings.Builder
		if err := r.WriteTextWidth(&b, "attrib", width); err != nil {
			t.Fatal(err)
		}
		return section(t, b.String(), title)
	}
	rows := "        4MiB       4MiB         0B      1     1  model.py:10 serve\n" +
		"        4MiB       4MiB         0B      1     1  total"
	full := "   allocated   stranded   rounding blocks  segs  call site (first frame outside PyTorch and Python)\n" + rows
	for _, width := range []int{0, 99, 120} {
		if got := text(width); got != full {
			t.Errorf("width %d:\n%s\nwant:\n%s", width, got, full)
		}
	}
	want := "   allocated   stranded   rounding blocks  segs  call site (first frame outside\n" +
		"                                                 PyTorch and Python)\n" + rows
	if got := text(80); got != want {
		t.Errorf("width 80:\n%s\nwant:\n%s", got, want)
	}
	want = "   allocated   stranded   rounding blocks  segs\n" +
		"    call site (first frame outside PyTorch and Python)\n" +
		"        4MiB       4MiB         0B      1     1\n" +
		"    model.py:10 serve\n" +
		"        4MiB       4MiB         0B      1     1  total"
	if got := text(60); got != want {
		t.Errorf("width 60:\n%s\nwant:\n%s", got, want)
	}
}
