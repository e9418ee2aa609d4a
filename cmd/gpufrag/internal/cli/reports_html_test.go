package cli

import (
	"context"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/report"
	"github.com/gpufrag/gpufrag/report/browsercheck"
)

// Bounds the browser test holds the reports to.
const (
	// maxLabelOverlaps is the most pairs of marker labels in one chart
	// that may overlap (by more than 2 px²): none, the chart places them
	// apart; a browser whose font is wider than Liberation Sans's metrics
	// may push one pair together.
	maxLabelOverlaps = 1
	// phoneWidth is a phone's window, in CSS pixels (an iPhone 12 to 15).
	phoneWidth = 390
	// minLegendPixels is the fewest pixels of a legend entry's colour that
	// its chart's plot must show for the entry to count as drawn; a line
	// hidden under another shows none, a visible one hundreds.
	minLegendPixels = 20
)

// htmlReportCase is one report the browser test writes and loads.
type htmlReportCase struct {
	name string
	args func(dir, out string) []string
	// wantMarkers: a chart of this report must carry marker labels (the
	// input has OOMs), so the overlap check is not vacuous.
	wantMarkers bool
}

// TestHTMLReportsInBrowser writes every HTML report the CLI has (simulate,
// analyze, cluster simulate; replay, advise and defrag write none) from
// small inputs in the repository, loads each in headless Chromium at a
// 1400 px window, at the page's design width (1040 px, the main column's
// max-width) and at a phone's (390 px), and checks what a reader sees:
// nothing wider than the main column and no horizontal scrolling of the
// page, no table that needs sideways scrolling at 1400 or 390 px (a phone
// gets each row as a card), no chart that scrolls sideways at 1040 and
// 1400 px, every chart's smallest text (axis labels, legend, marker
// labels) at least report.MinTextPx high at every width (a phone scrolls
// the chart instead of shrinking it to a third), marker labels that do not
// pile up, and every legend entry's line visible in its chart's
// screenshot. It
// saves the screenshots to $REPORT_SCREENSHOT_DIR (or a temporary
// directory) for a person to look at. Skipped in -short mode, with the
// self-checks on (-race, -tags invariants) and where no Chromium is on PATH
// (Debian: apt-get install chromium).
func TestHTMLReportsInBrowser(t *testing.T) {
	longtest.Skip(t)
	if testkit.SlowBuild {
		t.Skip("renders pages, checks no allocator: the plain go test run covers it, and with every self-check on (-race, -tags invariants) its simulations are slow")
	}
	browser, shots := browsercheck.Require(t)
	dir := t.TempDir()
	snap := filepath.Join(dir, "many-segments.pickle")
	if err := os.WriteFile(snap, manySegmentsSnapshot(), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []htmlReportCase{
		{name: "simulate-default", args: func(_, out string) []string {
			// The default scenario's six memory setups: the widest results table.
			return []string{"simulate", "--duration", "3m", "--html", out}
		}},
		{name: "simulate-ooms", wantMarkers: true, args: func(_, out string) []string {
			// Thousands of OOMs and some preemptions on a 40 GB GPU.
			return []string{"simulate", "--gpu", "a100-40g", "--duration", "3m", "--rate", "2",
				"--kv", "contiguous-grow,paged:16", "--alloc", "caching,caching:expandable_segments:True", "--html", out}
		}},
		{name: "analyze", wantMarkers: true, args: func(_, out string) []string {
			return []string{"analyze", snap, "--capacity", "8GiB", "--html", out}
		}},
		{name: "analyze-small", args: func(_, out string) []string {
			return []string{"analyze", filepath.Join(snapshotFixtures, "mid.pickle"), "--capacity", "1GiB", "--html", out}
		}},
		{name: "diff", args: func(dir, out string) []string {
			// A small snapshot against one of 516 segments: maps of unequal length, side by side.
			return []string{"diff", writeFile(t, dir, "pair-a.pickle", pairSnapshot(0)), snap, "--capacity", "8GiB", "--html", out}
		}},
		{name: "diff-outliers", args: func(dir, out string) []string {
			args := []string{"diff", "--html", out}
			for i, extra := range []int64{0, 0, 16 << 20, 0, 0} {
				args = append(args, writeFile(t, dir, fmt.Sprintf("rank%d.pickle", i), pairSnapshot(extra)))
			}
			return args
		}},
		{name: "cluster", args: func(_, out string) []string {
			return []string{"cluster", "simulate", "--nodes", clusterNodes, "--pods", clusterPods,
				"--policy", "bestfit,fgd,recommended", "--seeds", "1-2", "--html", out}
		}},
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2) // two Chromiums at once: the CI machine has two cores
	for _, tc := range cases {
		page := filepath.Join(shots, tc.name+".html")
		code, _, errs := run(t, "", tc.args(dir, page)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, errs)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			checkReportInBrowser(ctx, t, browser, tc, page, dir, shots)
		}()
	}
	wg.Wait()
	t.Logf("%d reports checked in %s (%s); screenshots in %s", len(cases), time.Since(start).Round(100*time.Millisecond), browser, shots)
}

func checkReportInBrowser(ctx context.Context, t *testing.T, browser string, tc htmlReportCase, page, work, shots string) {
	// First at the design width, which also gives the page's height, then
	// at 1400 px with a screenshot of the whole page, then at a phone's
	// width with a screenshot of its first screens.
	var wide browsercheck.Layout
	var img image.Image
	h := 1000
	for _, width := range []int{1040, 1400, phoneWidth} {
		shot := ""
		switch width {
		case 1400:
			shot = filepath.Join(shots, tc.name+".png")
		case phoneWidth:
			shot = filepath.Join(shots, tc.name+"-phone.png")
			h = 2400
		}
		l, im, err := browsercheck.Measure(ctx, browser, page, work, width, h, shot)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			return
		}
		h = min(int(l.ScrollHeight)+1, 16000)
		if !l.ChartFont {
			t.Errorf("%s: neither Liberation Sans nor Arial is installed, so the charts' text is not set in the font its layout assumes: install fonts-liberation (Debian)", tc.name)
			return
		}
		if l.InnerWidth != float64(width) {
			t.Errorf("%s: laid out %.0f px wide, not %d", tc.name, l.InnerWidth, width)
		}
		if l.ScrollWidth > l.InnerWidth {
			t.Errorf("%s at %d px: the page scrolls sideways: scrollWidth %.0f > innerWidth %.0f", tc.name, width, l.ScrollWidth, l.InnerWidth)
		}
		for _, b := range l.Overflows() {
			t.Errorf("%s at %d px: %q reaches x=%.0f, past the main column's right edge %.0f", tc.name, width, b.What, b.Rect.Right(), l.Main.Right())
		}
		for _, f := range l.Figures {
			if f.MinText != "" && f.MinTextPx < report.MinTextPx-0.05 {
				t.Errorf("%s at %d px: chart %q: text %q is %.1f px high (want ≥ %g)", tc.name, width, f.Title, f.MinText, f.MinTextPx, report.MinTextPx)
			}
		}
		for _, b := range l.Boxes {
			switch {
			case width != phoneWidth && b.Scrolls() && strings.HasPrefix(b.What, "figure"):
				t.Errorf("%s at %d px: %q scrolls sideways (%.0f px of chart in %.0f): it should fit the column", tc.name, width, b.What, b.ScrollWidth, b.Rect.W)
			case width == phoneWidth && b.Scrolls() && strings.HasPrefix(b.What, "table"):
				t.Errorf("%s at %d px: %q needs sideways scrolling (%.0f px of content in %.0f): a phone should get each row as a card", tc.name, width, b.What, b.ScrollWidth, b.Rect.W)
			}
		}
		if width == 1400 {
			wide, img = l, im
			for _, b := range l.Boxes {
				if b.Scrolls() && strings.HasPrefix(b.What, "table") {
					t.Errorf("%s at 1400 px: %q needs sideways scrolling (%.0f px of content in %.0f): columns are cut off", tc.name, b.What, b.ScrollWidth, b.Rect.W)
				}
			}
		}
	}
	if len(wide.Figures) == 0 {
		t.Errorf("%s: no figures found", tc.name)
	}
	labels := 0
	for _, f := range wide.Figures {
		labels += len(f.MarkerLabels)
		overlaps := 0
		for i := range f.MarkerLabels {
			for j := i + 1; j < len(f.MarkerLabels); j++ {
				if f.MarkerLabels[i].Rect.Overlap(f.MarkerLabels[j].Rect) > 2 {
					overlaps++
				}
			}
		}
		if overlaps > maxLabelOverlaps {
			t.Errorf("%s: chart %q: %d pairs of marker labels overlap (at most %d)", tc.name, f.Title, overlaps, maxLabelOverlaps)
		}
	}
	if tc.wantMarkers && labels == 0 {
		t.Errorf("%s: no marker labels in any chart, though the input has OOMs", tc.name)
	}
	// The legend check, on the screenshot of the whole page at 1400 px.
	h = img.Bounds().Dy()
	for _, f := range wide.Figures {
		if len(f.Legend) == 0 || f.Rect.Y+f.Rect.H > float64(h) {
			continue
		}
		plot := f.Rect
		plot.H = f.LegendRect.Y - f.Rect.Y // above the legend
		var counts []string
		for _, e := range f.Legend {
			n := browsercheck.ColorPixels(img, plot, e.Color, 10)
			counts = append(counts, fmt.Sprintf("%s %d", e.Text, n))
			if n < minLegendPixels {
				t.Errorf("%s: chart %q: legend entry %q (%s) has %d pixels of its colour in the plot (want ≥ %d): its line is not visible",
					tc.name, f.Title, e.Text, e.Color, n, minLegendPixels)
			}
		}
		if testing.Verbose() {
			t.Logf("%s: %q: %s", tc.name, f.Title, strings.Join(counts, ", "))
		}
	}
}

// manySegmentsSnapshot is a PyTorch snapshot pickle with what made the
// segment map unreadable: 516 segments (16 large ones of 64 to 544 MiB
// with live blocks and stranded holes, 500 small 2 MiB ones), and a trace
// with 40 OOMs, some close together, for the timeline's markers.
func manySegmentsSnapshot() []byte {
	const mib = 1 << 20
	var segs []any
	addr := uint64(0x7f0000000000)
	seg := func(size int64, pool string, blocks [][3]int64) {
		var bl []any
		var alloc, active, req int64
		at := addr
		for _, b := range blocks { // size, requested (0: free), pending
			state := "inactive"
			switch {
			case b[1] > 0 && b[2] == 1:
				state = "active_pending_free"
			case b[1] > 0:
				state = "active_allocated"
			}
			d := snaptest.Dict{{"address", at}, {"size", b[0]}, {"requested_size", b[1]}, {"state", state}}
			bl = append(bl, d)
			at += uint64(b[0])
			if state == "active_allocated" {
				alloc += b[0]
			}
			if state != "inactive" {
				active += b[0]
				req += b[1]
			}
		}
		segs = append(segs, snaptest.Dict{{"device", int64(0)}, {"address", addr}, {"total_size", size},
			{"allocated_size", alloc}, {"active_size", active}, {"requested_size", req}, {"stream", int64(0)},
			{"segment_type", pool}, {"segment_pool_id", snaptest.Tuple{0, 0}}, {"is_expandable", false}, {"blocks", bl}})
		addr += uint64(size) + 32*mib
	}
	for i := range 16 {
		size := int64(64+32*i) * mib
		live := size / 4
		seg(size, "large", [][3]int64{{live, live - 4096, 0}, {size / 8, 0, 0}, {size / 8, size/8 - 1000, 0}, {size - live - size/4, 0, 0}})
	}
	for i := range 500 {
		switch i % 3 {
		case 0:
			seg(2*mib, "small", [][3]int64{{512 << 10, 500 << 10, 0}, {1536 << 10, 0, 0}})
		case 1:
			seg(2*mib, "small", [][3]int64{{2 * mib, 0, 0}})
		default:
			seg(2*mib, "small", [][3]int64{{mib, mib - 512, 0}, {512 << 10, 400 << 10, 1}, {512 << 10, 0, 0}})
		}
	}
	var trace []any
	t0 := int64(1_700_000_000_000_000)
	for i := range 200 {
		e := snaptest.Dict{{"action", "alloc"}, {"addr", uint64(0x7f0000000000)}, {"size", int64(mib)}, {"stream", int64(0)}, {"time_us", t0 + int64(2*i)}}
		if i%5 == 2 || (i > 100 && i < 110) {
			e = snaptest.Dict{{"action", "oom"}, {"size", int64(900 * mib)}, {"device_free", int64(100 * mib)}, {"time_us", t0 + int64(2*i)}}
		}
		trace = append(trace, e)
		if e.Get("action") == "alloc" {
			trace = append(trace, snaptest.Dict{{"action", "free_requested"}, {"addr", uint64(0x7f0000000000)}, {"size", int64(mib)}, {"stream", int64(0)}, {"time_us", t0 + int64(2*i+1)}},
				snaptest.Dict{{"action", "free_completed"}, {"addr", uint64(0x7f0000000000)}, {"size", int64(mib)}, {"stream", int64(0)}, {"time_us", t0 + int64(2*i+1)}})
		}
	}
	doc := snaptest.Dict{{"segments", segs}, {"device_traces", []any{trace}}}
	return snaptest.Encode(doc)
}
