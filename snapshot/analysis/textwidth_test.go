package analysis_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/snapshot"
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
	if n, line := testkit.WidestLine(narrow); n > 80 {
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

// TestDiffWriteTextWidth: diff's sites table puts the site after six
// figures 71 columns wide, which a pipe or a file keeps, and so does a
// terminal as wide as the widest line; on a terminal of 80 columns the
// sites, and the column's heading, go on lines of their own under their
// figures, a long stack wrapped at its spaces and a word longer than the
// line keeping its end; the segments sentence wraps.
func TestDiffWriteTextWidth(t *testing.T) {
	a := report(t, snap(nil, baseSegments()...))
	grown := stackSeg(segC,
		snapshot.Block{Size: 8 * mib, RequestedSize: 8*mib - 1000, Frames: at("cache.py", 5, "grow")},
		snapshot.Block{Size: 12 * mib, State: snapshot.StateInactive})
	d := analysis.DiffReports(a, report(t, snap(nil, append(baseSegments(), grown)...)), analysis.DiffOptions{})
	text := func(width int) string {
		var b strings.Builder
		if err := d.WriteTextWidth(&b, "a.pickle", "b.pickle", width); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	var plain strings.Builder
	if err := d.WriteText(&plain, "a.pickle", "b.pickle"); err != nil {
		t.Fatal(err)
	}
	full := text(0)
	if full != plain.String() {
		t.Errorf("width 0 is not WriteText:\n%s\nwant:\n%s", full, plain.String())
	}
	const title = "Allocation sites whose memory moved most (held = allocated + stranded free; 1 moved)"
	wantFull := "        Δheld  Δallocated   Δstranded   Δrounding     A held     B held  site\n" +
		"       +20MiB       +8MiB      +12MiB      +1000B         0B      20MiB  cache.py:5 grow"
	if got := section(t, full, title); got != wantFull {
		t.Errorf("without a width:\n%s\nwant:\n%s", got, wantFull)
	}
	widest, _ := testkit.WidestLine(full)
	if got := text(widest); got != full {
		t.Errorf("on %d columns:\n%s\nwant:\n%s", widest, got, full)
	}
	got := text(80)
	if n, line := testkit.WidestLine(got); n > 80 {
		t.Errorf("on 80 columns a line is %d: %q\n%s", n, line, got)
	}
	_, sites, _ := strings.Cut(got, "\nAllocation sites whose memory moved most (held = allocated + stranded free; 1\n  moved)\n")
	want := "        Δheld  Δallocated   Δstranded   Δrounding     A held     B held\n" +
		"    site\n" +
		"       +20MiB       +8MiB      +12MiB      +1000B         0B      20MiB\n" +
		"    cache.py:5 grow\n"
	if sites != want {
		t.Errorf("on 80 columns the sites:\n%s\nwant:\n%s\nin:\n%s", sites, want, got)
	}
	if !slices.Equal(strings.Fields(got), strings.Fields(full)) {
		t.Errorf("on 80 columns the words differ from the full report's:\n%s", got)
	}

	long := "/srv/" + strings.Repeat("a", 100) + "/cache.py:5"
	d.Devices[0].Sites[0].Site = long + " grow" + strings.Repeat(" < serve.py:12 main", 5)
	got = text(80)
	if n, line := testkit.WidestLine(got); n > 80 {
		t.Errorf("on 80 columns with a long stack a line is %d: %q\n%s", n, line, got)
	}
	_, sites, _ = strings.Cut(got, "20MiB\n")
	want = "    …" + long[len(long)-73:] + "\n" +
		"      grow < serve.py:12 main < serve.py:12 main < serve.py:12 main <\n" +
		"      serve.py:12 main < serve.py:12 main\n"
	if sites != want {
		t.Errorf("on 80 columns the long stack:\n%s\nwant:\n%s", sites, want)
	}
	if !strings.Contains(text(0), "      20MiB  "+d.Devices[0].Sites[0].Site+"\n") {
		t.Errorf("without a width the stack is not whole on its line:\n%s", text(0))
	}
}

// TestOutliersWriteTextWidth: the outlier table's fixed columns, 126
// characters, which a pipe or a file keeps, narrow to their contents
// through human.Table on a terminal of 80 columns (83 columns with the
// names beside, so each name is on a line over its seven figures); the
// sentences wrap; a terminal as wide as the
// widest line gets WriteText's bytes.
func TestOutliersWriteTextWidth(t *testing.T) {
	us := units(t, 0, 0, 0, 0, 0, 2048*mib, 0, 0)
	o, err := analysis.FindOutliers(us)
	if err != nil {
		t.Fatal(err)
	}
	vs := analysis.DiffDevices(us[o.Reference].Device, us[o.Flags[0].Unit].Device, analysis.DiffOptions{})
	text := func(width int) string {
		var b strings.Builder
		if err := o.WriteTextWidth(&b, &vs, width); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	var plain strings.Builder
	if err := o.WriteText(&plain, &vs); err != nil {
		t.Fatal(err)
	}
	full := text(0)
	if full != plain.String() {
		t.Errorf("width 0 is not WriteText:\n%s\nwant:\n%s", full, plain.String())
	}
	widest, _ := testkit.WidestLine(full)
	if widest != 126 {
		t.Errorf("the full-width text is %d columns, want the table's 126", widest)
	}
	if got := text(126); got != full {
		t.Errorf("on 126 columns:\n%s\nwant:\n%s", got, full)
	}
	got := text(80)
	if n, line := testkit.WidestLine(got); n > 80 {
		t.Errorf("on 80 columns a line is %d: %q\n%s", n, line, got)
	}
	if !slices.Equal(strings.Fields(got), strings.Fields(full)) {
		t.Errorf("on 80 columns the words differ from the full report's:\n%s", got)
	}
	// 83 columns beside its names: each name on a line, its figures under it.
	_, table, _ := strings.Cut(got, "\n\n")
	table, _, _ = strings.Cut(table, "\n\n")
	want := "  snapshot (device)\n" +
		"    reserved  allocated  stranded  rounding  health  segments  OOMs\n"
	for i := range 8 {
		figures := "       40MiB      28MiB     12MiB      1MiB   1.000         2     0\n"
		if i == 5 {
			figures = "    2.04GiB*   2.03GiB*     12MiB      1MiB   1.000        3*     0\n"
		}
		want += fmt.Sprintf("  rank%d (0)\n", i) + figures
	}
	want += "  median\n       40MiB      28MiB     12MiB      1MiB   1.000         2     0"
	if table != want {
		t.Errorf("on 80 columns the table:\n%s\nwant:\n%s", table, want)
	}
}
