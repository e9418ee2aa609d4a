package pages

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/report"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// diffHTMLDevices caps the device pairs a page details, as
// analyzeHTMLDevices does for analyze.
const diffHTMLDevices = analyzeHTMLDevices

// Comparison is `gpufrag diff --html`'s page: Diff for two files,
// Outliers for more.
func Comparison(c *analysis.Comparison) (report.Page, error) {
	if c.Pair != nil {
		return Diff(c.Names, c.Pair), nil
	}
	return Outliers(c.Outliers, c.Versus)
}

// Diff is `gpufrag diff A B --html`'s page: the comparison of two
// snapshots (names: their files), at most diffHTMLDevices device pairs.
func Diff(names []string, d *analysis.Diff) report.Page {
	page := report.Page{Title: fmt.Sprintf("gpufrag diff: %s vs %s", filepath.Base(names[0]), filepath.Base(names[1])),
		Subtitle: fmt.Sprintf("A: %s; B: %s", names[0], names[1])}
	for i, dd := range d.Devices {
		if i == diffHTMLDevices {
			page.Sections = append(page.Sections, report.Section{Heading: "Other devices",
				Text: fmt.Sprintf("%d more device pairs are compared in the text report and --json.", len(d.Devices)-i)})
			break
		}
		page.Sections = append(page.Sections, deviceDiffSections(dd, "A: "+filepath.Base(names[0]), "B: "+filepath.Base(names[1]))...)
	}
	return page
}

// Outliers is `gpufrag diff --html`'s page of N snapshots: each snapshot
// device against the median, the outliers, and vs, when set, the strongest
// outlier's pair with the reference.
func Outliers(o *analysis.Outliers, vs *analysis.DeviceDiff) (report.Page, error) {
	page := report.Page{Title: fmt.Sprintf("gpufrag diff: %d snapshot devices, which is the outlier", len(o.Units)),
		Subtitle: "Rule: " + analysis.OutlierRule + "."}
	var text bytes.Buffer
	if err := o.WriteText(&text, nil); err != nil {
		return page, err
	}
	t := report.Table{Caption: "Each snapshot device against the median (* an outlier)",
		Header: []string{"snapshot", "device"}, NumericCols: []int{1}}
	for m := range analysis.OutlierMetrics {
		t.Header = append(t.Header, strings.ReplaceAll(analysis.OutlierMetrics[m].Name, "_", " "))
		t.NumericCols = append(t.NumericCols, m+2)
	}
	flagged := map[[2]int]bool{}
	for _, f := range o.Flags {
		flagged[[2]int{f.Unit, f.Metric}] = true
	}
	value := func(m int, v float64) string {
		switch met := analysis.OutlierMetrics[m]; {
		case met.Bytes:
			return mem.FormatBytes(int64(v))
		case met.Ratio:
			return fmt.Sprintf("%.3f", v)
		}
		return fmt.Sprintf("%.0f", v)
	}
	// At most analyzeHTMLRows rows: the outliers first, then the others
	// in order; the text report and --json list every one.
	shown := 0
	addRow := func(u int) {
		row := []string{filepath.Base(o.Units[u].File), fmt.Sprint(o.Units[u].Device.Device)}
		for m := range analysis.OutlierMetrics {
			v := value(m, o.Values[u][m])
			if flagged[[2]int{u, m}] {
				v += " *"
			}
			row = append(row, v)
		}
		t.Rows = append(t.Rows, row)
		shown++
	}
	done := map[int]bool{}
	for _, f := range o.Flags {
		if !done[f.Unit] && shown < analyzeHTMLRows {
			done[f.Unit] = true
			addRow(f.Unit)
		}
	}
	for u := range o.Units {
		if !done[u] && shown < analyzeHTMLRows {
			addRow(u)
		}
	}
	med := []string{"median", ""}
	for m := range analysis.OutlierMetrics {
		med = append(med, value(m, o.Median[m]))
	}
	t.Rows = append(t.Rows, med)
	sec := report.Section{Heading: "Snapshots compared", Tables: []report.Table{t}}
	if n := len(o.Units) - shown; n > 0 {
		sec.Text = fmt.Sprintf("%d more snapshot devices are left out of the table (the text report and --json list them all).", n)
	}
	page.Sections = append(page.Sections, sec)
	ref := o.Units[o.Reference]
	summary := fmt.Sprintf("Reference (nearest the median): %s device %d.", ref.File, ref.Device.Device)
	if len(o.Flags) == 0 {
		summary = "No outlier: every value is within the rule of its median. " + summary
	}
	for i, f := range o.Flags {
		if i == 20 {
			summary += fmt.Sprintf("\n%d more outlying values (the text report and --json list them all).", len(o.Flags)-i)
			break
		}
		summary += fmt.Sprintf("\n%s device %d: %s %s, median %s (%s at stake, z %+.1f)", o.Units[f.Unit].File, o.Units[f.Unit].Device.Device,
			analysis.OutlierMetrics[f.Metric].Name, value(f.Metric, f.Value), value(f.Metric, o.Median[f.Metric]), mem.FormatBytes(f.Stake), f.Z)
	}
	page.Sections = append(page.Sections, report.Section{Heading: "Outliers", Text: untrusted.PrintableText(summary)})
	if vs != nil {
		page.Sections = append(page.Sections, deviceDiffSections(*vs, "reference "+filepath.Base(ref.File),
			"outlier "+filepath.Base(o.Units[o.Flags[0].Unit].File))...)
	}
	return page, nil
}

// deviceDiffSections are one device pair's sections: the figures side by
// side, the segment maps side by side, the sites that moved, the segments
// that appeared or vanished. nameA and nameB label the sides.
func deviceDiffSections(dd analysis.DeviceDiff, nameA, nameB string) []report.Section {
	var za, zb analysis.Device
	a, b := &za, &zb
	if dd.A != nil {
		a = dd.A
	}
	if dd.B != nil {
		b = dd.B
	}
	devName := func(d *analysis.Device) string {
		if d == nil {
			return "absent"
		}
		return fmt.Sprintf("device %d", d.Device)
	}
	heading := fmt.Sprintf("%s %s vs %s %s", nameA, devName(dd.A), nameB, devName(dd.B))
	bytesOf := func(n int64) string { return report.UnitBytes.Format(float64(n)) }
	signed := func(n int64) string {
		switch {
		case n > 0:
			return "+" + bytesOf(n)
		case n < 0:
			return "−" + bytesOf(-n)
		}
		return "0"
	}
	t := report.Table{Caption: "Memory and fragmentation", Header: []string{"", nameA, nameB, "B − A"}, NumericCols: []int{1, 2, 3}}
	for _, r := range []struct {
		name string
		x, y int64
	}{{"reserved", a.Classes.Reserved, b.Classes.Reserved}, {"allocated", a.Classes.Allocated, b.Classes.Allocated},
		{"requested", a.Classes.Requested, b.Classes.Requested}, {"cached free", a.Classes.CachedFree, b.Classes.CachedFree},
		{"rounding waste", a.Classes.InternalWaste, b.Classes.InternalWaste}, {"stranded free", a.Classes.Stranded, b.Classes.Stranded},
		{"largest free block", a.Metrics.LargestFreeBlock, b.Metrics.LargestFreeBlock},
		{"max allocatable", a.Metrics.MaxAllocatable, b.Metrics.MaxAllocatable}} {
		t.Rows = append(t.Rows, []string{r.name, bytesOf(r.x), bytesOf(r.y), signed(r.y - r.x)})
	}
	t.Rows = append(t.Rows, []string{"health", fmt.Sprintf("%.3f", a.Metrics.Health), fmt.Sprintf("%.3f", b.Metrics.Health),
		fmt.Sprintf("%+.3f", b.Metrics.Health-a.Metrics.Health)})
	for _, r := range []struct {
		name string
		x, y int
	}{{"segments", a.Segments, b.Segments}, {"blocks", a.Blocks, b.Blocks}, {"OOM entries", len(a.OOMs), len(b.OOMs)}} {
		t.Rows = append(t.Rows, []string{r.name, fmt.Sprint(r.x), fmt.Sprint(r.y), fmt.Sprintf("%+d", r.y-r.x)})
	}
	text := fmt.Sprintf("Segments (the same address and size is the same segment): %d in both, %d appeared (%s), %d vanished (%s), %d resized (the same address, another size).",
		dd.Kept, dd.AppearedCount, bytesOf(dd.AppearedBytes), dd.VanishedCount, bytesOf(dd.VanishedBytes), dd.ResizedCount)
	for _, side := range []struct {
		name string
		d    *analysis.Device
	}{{nameA, dd.A}, {nameB, dd.B}} {
		if side.d == nil {
			continue
		}
		for i, o := range side.d.OOMs {
			if i == analyzeHTMLOOMs {
				text += fmt.Sprintf("\n%s: %d more out-of-memory entries (the text report and --json list them all).", side.name, len(side.d.OOMs)-i)
				break
			}
			text += fmt.Sprintf("\n%s: out of memory at event %d, requested %s (%s): %s", side.name, o.Event, bytesOf(o.Requested), o.Cause, o.Why)
		}
	}
	secs := []report.Section{{Heading: heading, Text: text, Tables: []report.Table{t}}}

	if svg, note := analysis.SideBySideSegmentMaps(a.Layout, b.Layout, nameA, nameB); svg != nil {
		secs = append(secs, report.Section{Heading: heading + ": segment maps", Text: note, RawSVG: [][]byte{svg}})
	}
	if len(dd.Sites) > 0 {
		st := report.Table{Caption: fmt.Sprintf("Allocation sites whose memory moved most (%d moved; held = allocated + stranded free)", dd.SitesChanged),
			Header: []string{"site", "Δheld", "Δallocated", "Δstranded", "Δrounding", nameA + " held", nameB + " held"}, NumericCols: []int{1, 2, 3, 4, 5, 6}}
		for _, s := range dd.Sites {
			st.Rows = append(st.Rows, []string{s.Site, signed(s.HeldDelta()), signed(s.B.Allocated - s.A.Allocated),
				signed(s.B.Stranded - s.A.Stranded), signed(s.B.Rounding - s.A.Rounding), bytesOf(s.A.Held()), bytesOf(s.B.Held())})
		}
		secs[0].Tables = append(secs[0].Tables, st)
	}
	if len(dd.Appeared)+len(dd.Vanished)+len(dd.Resized) > 0 {
		seg := report.Table{Caption: "Segments that appeared, vanished or changed size, the largest first", Header: []string{"", "address", "size", "pool", "live"},
			NumericCols: []int{2, 4}}
		for _, r := range dd.Resized {
			seg.Rows = append(seg.Rows, []string{"resized", fmt.Sprintf("%#x", r.Address), bytesOf(r.SizeA) + " → " + bytesOf(r.SizeB), r.Pool, ""})
		}
		for _, x := range []struct {
			verb string
			segs []analysis.SegmentRef
		}{{"appeared", dd.Appeared}, {"vanished", dd.Vanished}} {
			for _, s := range x.segs {
				seg.Rows = append(seg.Rows, []string{x.verb, fmt.Sprintf("%#x", s.Address), bytesOf(s.Size), s.Pool, bytesOf(s.Live)})
			}
		}
		secs[0].Tables = append(secs[0].Tables, seg)
	}
	return secs
}
