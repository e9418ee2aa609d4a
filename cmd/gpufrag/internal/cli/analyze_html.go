package cli

import (
	"bytes"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/internal/loc"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/report"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// segmentMapRows caps the segment map's bars of single segments: beyond a
// few dozen a page gets long without showing more (the segments stranding
// most free memory are kept; the rest are summed per pool).
const segmentMapRows = 40

// analyzeHTMLOOMs is how many out-of-memory errors a device's summary
// explains one by one; the rest are listed by event, at most
// analyzeHTMLOOMEvents of them.
const (
	analyzeHTMLOOMs      = 5
	analyzeHTMLOOMEvents = 20
	// analyzeHTMLMarkers is how many out-of-memory errors the timeline
	// charts mark, the first ones.
	analyzeHTMLMarkers = analyzeHTMLOOMs + analyzeHTMLOOMEvents
)

// The page's size is bounded whatever the snapshot holds (issue 28: 150,000
// blocks made a 21.7 MB page): at most analyzeHTMLDevices devices get their
// sections (those reserving the most; the others are a row each of a table
// of at most analyzeHTMLRows), a table of streams or pools shows at most
// analyzeHTMLRows of them (those reserving the most) and sums the rest in
// one row, and a segment of more than segmentMapBlocks blocks is drawn as
// the shares of its bytes rather than block by block. Each says what it
// left out; the text report and --json list everything.
const (
	analyzeHTMLDevices = 8
	analyzeHTMLRows    = 16
	segmentMapBlocks   = 256
)

// capacityFrom says where analysis.Device.CapacitySource took the capacity.
var capacityFrom = map[string]string{"flag": "--capacity", "oom entry": "from an OOM entry", "default": "assumed"}

// writeAnalyzeHTML writes the analysis as a self-contained HTML page: per
// device the summary, the timeline charts, the segment map and the what-if
// table.
func writeAnalyzeHTML(path, name string, rep *analysis.Report) error {
	page := report.Page{Title: "gpufrag analyze: " + analyzeRunTitle(name, rep),
		Subtitle: fmt.Sprintf("PyTorch memory snapshot %s, format %s", name, rep.Format)}
	if rep.Stats != nil {
		var text bytes.Buffer
		if err := (&analysis.Report{Format: rep.Format, Stats: rep.Stats}).WriteText(&text, name); err != nil {
			return err
		}
		page.Sections = append(page.Sections, report.Section{Heading: "memory_stats()", Text: trimNewline(text.String())})
	}
	devices, others := htmlDevices(rep.Devices)
	for _, d := range devices {
		page.Sections = append(page.Sections, deviceSummary(d))
	}
	if len(others) > 0 {
		page.Sections = append(page.Sections, otherDevices(others, len(rep.Devices)))
	}
	for _, d := range devices {
		if len(d.Timeline) > 0 {
			var x, res, all, fr []float64
			for _, p := range d.Timeline {
				x = append(x, float64(p.Event))
				res = append(res, float64(p.Reserved))
				all = append(all, float64(p.Allocated))
				fr = append(fr, p.FragRate)
			}
			var marks []report.Marker
			for _, o := range d.OOMs[:min(len(d.OOMs), analyzeHTMLMarkers)] {
				marks = append(marks, report.Marker{X: float64(o.Event), Label: "OOM"})
			}
			text := "Replayed through the caching model with the recorded settings; x is the trace event index."
			if len(d.OOMs) > analyzeHTMLMarkers {
				text += fmt.Sprintf(" The first %d of the %d out-of-memory errors are marked.", analyzeHTMLMarkers, len(d.OOMs))
			}
			page.Sections = append(page.Sections, report.Section{
				Heading: fmt.Sprintf("Device %d: timeline", d.Device),
				Text:    text,
				Charts: []report.LineChart{
					{Title: "Reserved and allocated", XLabel: "event", YLabel: "memory", YUnit: report.UnitBytes,
						Series: []report.Series{{Name: "reserved", X: x, Y: res}, {Name: "allocated", X: x, Y: all}}, Markers: marks},
					{Title: "Fragmentation rate (1 − health)", XLabel: "event", YLabel: "frag rate", YUnit: report.UnitRatio,
						Series: []report.Series{{Name: "frag rate", X: x, Y: fr}}, Markers: marks},
				},
			})
		}
		if len(d.Layout.Segments) > 0 {
			svg, note := segmentMap(d.Layout, segmentMapRows)
			page.Sections = append(page.Sections, report.Section{
				Heading: fmt.Sprintf("Device %d: segment map", d.Device),
				Text:    note,
				RawSVG:  [][]byte{svg},
			})
		}
		if w := d.WhatIf; w != nil {
			t := report.Table{Caption: w.Recommendation + ": " + w.Reason,
				Header: []string{"allocator", "peak reserved", "OOMs", "frag rate at peak"}, NumericCols: []int{1, 2, 3}}
			for _, a := range w.Results {
				s := a.Settings
				if a.Recorded {
					s += " (recorded)"
				}
				t.Rows = append(t.Rows, []string{s, report.UnitBytes.Format(float64(a.PeakReserved)),
					fmt.Sprint(a.OOMs), fmt.Sprintf("%.3f", a.PeakFragRate)})
			}
			page.Sections = append(page.Sections, report.Section{Heading: fmt.Sprintf("Device %d: what if", d.Device), Tables: []report.Table{t}})
		}
	}
	var out strings.Builder
	if err := page.WriteHTML(&out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
}

// htmlDevices splits the devices into those the page details (at most
// analyzeHTMLDevices: those reserving the most, in device order) and the
// others.
func htmlDevices(all []analysis.Device) (shown, others []analysis.Device) {
	if len(all) <= analyzeHTMLDevices {
		return all, nil
	}
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return all[order[i]].Classes.Reserved > all[order[j]].Classes.Reserved })
	keep := map[int]bool{}
	for _, i := range order[:analyzeHTMLDevices] {
		keep[i] = true
	}
	for i, d := range all {
		if keep[i] {
			shown = append(shown, d)
		} else {
			others = append(others, d)
		}
	}
	return shown, others
}

// otherDevices is one table of the devices the page does not detail, at
// most analyzeHTMLRows rows of them (those reserving the most).
func otherDevices(others []analysis.Device, total int) report.Section {
	bytesOf := func(n int64) string { return report.UnitBytes.Format(float64(n)) }
	sorted := append([]analysis.Device(nil), others...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Classes.Reserved > sorted[j].Classes.Reserved })
	t := report.Table{Caption: "Devices not detailed here", Header: []string{"device", "segments", "reserved", "allocated", "health", "OOMs"},
		NumericCols: []int{0, 1, 2, 3, 4, 5}}
	for _, d := range sorted[:min(len(sorted), analyzeHTMLRows)] {
		t.Rows = append(t.Rows, []string{fmt.Sprint(d.Device), fmt.Sprint(d.Segments), bytesOf(d.Classes.Reserved),
			bytesOf(d.Classes.Allocated), fmt.Sprintf("%.3f", d.Metrics.Health), fmt.Sprint(len(d.OOMs))})
	}
	text := fmt.Sprintf("The snapshot has %d devices; this page details the %d that reserve the most. The text report and --json detail every one.",
		total, total-len(others))
	if n := len(sorted) - analyzeHTMLRows; n > 0 {
		text += fmt.Sprintf(" The table lists the %d of the others that reserve the most; %d more are left out.", analyzeHTMLRows, n)
	}
	return report.Section{Heading: "Other devices", Text: text, Tables: []report.Table{t}}
}

// capGroups keeps at most analyzeHTMLRows of a device's streams or pools,
// those reserving the most, in their order, and sums the rest in a row
// named for what it stands for.
func capGroups(gs []analysis.Group, kind string) []analysis.Group {
	if len(gs) <= analyzeHTMLRows {
		return gs
	}
	order := make([]int, len(gs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return gs[order[i]].Reserved > gs[order[j]].Reserved })
	keep := map[int]bool{}
	for _, i := range order[:analyzeHTMLRows-1] {
		keep[i] = true
	}
	var out []analysis.Group
	rest := analysis.Group{}
	n := 0
	for i, g := range gs {
		if keep[i] {
			out = append(out, g)
			continue
		}
		n++
		rest.Segments += g.Segments
		rest.Reserved += g.Reserved
		rest.Active += g.Active
		rest.CachedFree += g.CachedFree
		rest.LargestFree = max(rest.LargestFree, g.LargestFree)
	}
	rest.Name = fmt.Sprintf("+%d more %s (summed)", n, kind)
	rest.Health = frag.Health(rest.LargestFree, rest.CachedFree)
	return append(out, rest)
}

// deviceSummary is a device's diagnosis as text and tables.
func deviceSummary(d analysis.Device) report.Section {
	c, m := d.Classes, d.Metrics
	b := report.UnitBytes.Format
	bytesOf := func(n int64) string { return b(float64(n)) }
	sec := report.Section{Heading: fmt.Sprintf("Device %d", d.Device)}
	sec.Text = fmt.Sprintf("%d segments, %d blocks, %d trace events.\n"+
		"Health %.3f (fragmentation rate %.3f; below %.1f is worth acting on): the largest free block is %s of %s cached free. "+
		"Max allocatable %s. %d distinct live block sizes (entropy %.2f bits).",
		d.Segments, d.Blocks, d.TraceEvents, m.Health, m.FragRate, 0.5, bytesOf(m.LargestFreeBlock), bytesOf(m.CachedFree),
		bytesOf(m.MaxAllocatable), m.DistinctSizes, m.SizeEntropy)
	if f := d.Replay; f != nil && f.Skipped == "" && f.Allocs > 0 {
		sec.Text += fmt.Sprintf("\n\nReplay fidelity (settings %q, %d pre-trace segments rebuilt): %d of %d alloc addresses, "+
			"%d of %d segment_alloc sizes and %d of %d final blocks reproduced.", f.Settings, f.SeededSegments,
			f.AddressMatches, f.Allocs, f.SegmentSizeMatches, f.SegmentAllocs, f.FinalBlockMatches, f.FinalBlocks)
		for _, mm := range f.Mismatches {
			sec.Text += "\nmismatch: " + mm.String()
		}
	} else if f != nil && f.Skipped != "" {
		sec.Text += "\n\nNot replayed: " + f.Skipped
	}
	for i, o := range d.OOMs {
		if i == analyzeHTMLOOMs {
			var rest []string
			for _, o := range d.OOMs[i:min(len(d.OOMs), i+analyzeHTMLOOMEvents)] {
				rest = append(rest, fmt.Sprint(o.Event))
			}
			if n := len(d.OOMs) - i - len(rest); n > 0 {
				rest = append(rest, fmt.Sprintf("and %d more", n))
			}
			sec.Text += fmt.Sprintf("\n\n%d more out-of-memory errors, at events %s (the text report and --json list them all).",
				len(d.OOMs)-i, strings.Join(rest, ", "))
			break
		}
		sec.Text += fmt.Sprintf("\n\nOut of memory at event %d (%s): %s", o.Event, o.Cause, o.Why)
	}
	classes := report.Table{Caption: "Memory classes", Header: []string{"class", "bytes", "share of reserved"}, NumericCols: []int{1, 2}}
	for _, r := range []struct {
		name string
		n    int64
	}{{"reserved", c.Reserved}, {"allocated", c.Allocated}, {"requested", c.Requested}, {"active", c.Active},
		{"cached free", c.CachedFree}, {"reserved but unallocated", c.ReservedUnallocated},
		{"rounding waste", c.InternalWaste}, {"stranded free", c.Stranded}} {
		share := "-"
		if c.Reserved > 0 {
			share = fmt.Sprintf("%.1f%%", 100*float64(r.n)/float64(c.Reserved))
		}
		classes.Rows = append(classes.Rows, []string{r.name, bytesOf(r.n), share})
	}
	sec.Tables = append(sec.Tables, classes)
	if len(d.WorstSegments) > 0 {
		t := report.Table{Caption: "Segments that waste most", Header: []string{"address", "size", "pool", "live blocks",
			"free blocks", "stranded free", "largest free", "rounding"}, NumericCols: []int{1, 3, 4, 5, 6, 7}}
		for _, w := range d.WorstSegments {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%#x", w.Address), bytesOf(w.Size), w.Pool, fmt.Sprint(w.LiveBlocks),
				fmt.Sprint(w.FreeBlocks), bytesOf(w.Stranded), bytesOf(w.LargestFree), bytesOf(w.InternalWaste)})
		}
		sec.Tables = append(sec.Tables, t)
	}
	groups := report.Table{Caption: "Per stream and pool", Header: []string{"stream or pool", "segments", "reserved", "active",
		"cached free", "health"}, NumericCols: []int{1, 2, 3, 4, 5}}
	for _, g := range append(capGroups(d.Streams, "streams"), capGroups(d.Pools, "pools")...) {
		groups.Rows = append(groups.Rows, []string{g.Name, fmt.Sprint(g.Segments), bytesOf(g.Reserved), bytesOf(g.Active),
			bytesOf(g.CachedFree), fmt.Sprintf("%.3f", g.Health)})
	}
	sec.Tables = append(sec.Tables, groups)
	if len(d.Sites) > 0 {
		t := report.Table{Caption: "Call sites whose live blocks hold fragmented segments open",
			Header: []string{"call site", "held free", "blocks", "live", "segments"}, NumericCols: []int{1, 2, 3, 4}}
		for _, s := range d.Sites {
			t.Rows = append(t.Rows, []string{s.Frame, bytesOf(s.Held), fmt.Sprint(s.Blocks), bytesOf(s.Live), fmt.Sprint(s.Segments)})
		}
		sec.Tables = append(sec.Tables, t)
	}
	if t, ok := attributionTable(d.Attribution); ok {
		sec.Tables = append(sec.Tables, t)
	}
	return sec
}

// analyzeRunTitle describes what was analysed, for the HTML title and
// heading: the snapshot's file name, its devices with what they reserve,
// and the device capacity the layouts assume (and where it came from).
func analyzeRunTitle(name string, rep *analysis.Report) string {
	var devs []string
	for _, d := range rep.Devices {
		from := capacityFrom[d.CapacitySource]
		if from == "" {
			from = d.CapacitySource
		}
		devs = append(devs, fmt.Sprintf("device %d: %s reserved of %s (%s)", d.Device,
			report.UnitBytes.Format(float64(d.Classes.Reserved)), report.UnitBytes.Format(float64(d.Capacity)), from))
	}
	t := filepath.Base(name)
	switch {
	case len(devs) == 0 && rep.Stats != nil:
		t += ", memory_stats()"
	case len(devs) <= 2:
		t += ", " + strings.Join(devs, "; ")
	default:
		t += fmt.Sprintf(", %d devices", len(devs))
	}
	return t
}

// Segment map geometry, in SVG user units (points).
const (
	segMapWidth = 720 // the width of the page's charts (report.DefaultWidth)
	segMapLabel = 200 // left column: address, size and pool
	segMapRow   = 14
	segMapGap   = 4
	segMapTop   = 24 // the colour key
	segMapFont  = 10
)

// Segment map colours: live bytes, rounding inside live blocks, blocks
// awaiting another stream, free space stranded by a live block, free space
// in a segment empty_cache could release.
var segMapKey = []struct{ col, name string }{
	{"#4e79a7", "live"}, {"#f28e2b", "rounding"}, {"#edc948", "pending free"},
	{"#e15759", "stranded free"}, {"#d9d9d9", "releasable free"},
}

// segBytes sums a segment's bytes by segMapKey's classes.
func segBytes(s mem.Segment) (by [5]int64) {
	live := false
	for _, b := range s.Blocks {
		live = live || b.State != mem.Free
	}
	for _, b := range s.Blocks {
		switch {
		case b.State == mem.PendingFree:
			by[2] += b.Size
		case b.State == mem.Active:
			req := b.Size
			if b.Requested > 0 && b.Requested < b.Size {
				req = b.Requested
			}
			by[0] += req
			by[1] += b.Size - req
		case live:
			by[3] += b.Size
		default:
			by[4] += b.Size
		}
	}
	return by
}

// segmentMap draws a device's segments, one bar each in address order and
// all on one scale (the widest bar is the largest segment drawn), for at
// most maxRows segments: those stranding the most free memory, then the
// largest, leaving out any smaller than a fiftieth of the largest (a bar a
// few pixels wide). The segments left out are summed per pool, a row each
// at the end that shows the shares of their bytes. It returns the SVG and a
// sentence saying what is drawn.
func segmentMap(l mem.Layout, maxRows int) ([]byte, string) {
	return segmentMapAt(l, maxRows, segMapWidth, 0)
}

// segmentMapAt is segmentMap drawn width units wide, on a scale whose full
// bar width is at least scaleTo bytes (0: the largest segment drawn), so
// that two maps side by side share one scale (gpufrag diff).
func segmentMapAt(l mem.Layout, maxRows, width int, scaleTo int64) ([]byte, string) {
	segs := append([]mem.Segment(nil), l.Segments...)
	sort.SliceStable(segs, func(i, j int) bool {
		si, sj := segBytes(segs[i])[3], segBytes(segs[j])[3]
		if si != sj {
			return si > sj
		}
		return segs[i].Size > segs[j].Size
	})
	var largest int64
	for _, s := range segs {
		largest = max(largest, s.Size)
	}
	largest = max(largest, scaleTo)
	var shown, rest []mem.Segment
	for _, s := range segs {
		if len(shown) < maxRows && s.Size*50 >= largest {
			shown = append(shown, s)
		} else {
			rest = append(rest, s)
		}
	}
	sort.Slice(shown, func(i, j int) bool { return shown[i].Addr < shown[j].Addr })
	type agg struct {
		pool  string
		n     int
		total int64
		by    [5]int64
	}
	var aggs []*agg
	byPool := map[string]*agg{}
	for _, s := range rest {
		a := byPool[s.Pool]
		if a == nil {
			a = &agg{pool: s.Pool}
			byPool[s.Pool] = a
			aggs = append(aggs, a)
		}
		a.n++
		a.total += s.Size
		sb := segBytes(s)
		for k := range sb {
			a.by[k] += sb[k]
		}
	}
	sort.SliceStable(aggs, func(i, j int) bool { return aggs[i].pool < aggs[j].pool })

	rows := len(shown) + len(aggs)
	height := segMapTop + rows*(segMapRow+segMapGap) + segMapGap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="'Liberation Sans', Arial, Helvetica, sans-serif" font-size="%d">`+"\n",
		width, height, width, height, segMapFont)
	fmt.Fprintf(&b, "<title>segment map: %d of %d segments drawn</title>\n", len(shown), len(l.Segments))
	x := 0
	for _, e := range segMapKey {
		fmt.Fprintf(&b, `<rect x="%d" y="5" width="11" height="11" fill="%s"/><text x="%d" y="14">%s</text>`+"\n", x, e.col, x+15, e.name)
		x += 15 + 6*len(e.name) + 16
	}
	barW := float64(width - segMapLabel)
	scale := barW / float64(max(largest, 1))
	row := func(i int) int { return segMapTop + i*(segMapRow+segMapGap) }
	// shares draws a bar of width w split by the shares of by's classes.
	shares := func(y int, by [5]int64, total int64, w float64) {
		x0 := float64(segMapLabel)
		for k, v := range by {
			if v == 0 {
				continue
			}
			w := w * float64(v) / float64(max(total, 1))
			fmt.Fprintf(&b, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"><title>%s %s</title></rect>`+"\n",
				x0, y, w, segMapRow, segMapKey[k].col, mem.FormatBytes(v), segMapKey[k].name)
			x0 += w
		}
	}
	crowded := 0 // bars of more than segmentMapBlocks blocks, drawn as shares
	for i, s := range shown {
		y := row(i)
		fmt.Fprintf(&b, `<text x="0" y="%d">%s</text>`+"\n", y+segMapRow-3,
			html.EscapeString(fmt.Sprintf("%#x %s %s", s.Addr, mem.FormatBytes(s.Size), loc.Printable(s.Pool))))
		if len(s.Blocks) > segmentMapBlocks {
			crowded++
			shares(y, segBytes(s), s.Size, float64(s.Size)*scale)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.2f" height="%d" fill="none" stroke="#555" stroke-width="0.5"><title>%d blocks: the shares of their bytes</title></rect>`+"\n",
				segMapLabel, y, float64(s.Size)*scale, segMapRow, len(s.Blocks))
			continue
		}
		live := false
		for _, blk := range s.Blocks {
			live = live || blk.State != mem.Free
		}
		for _, blk := range s.Blocks {
			x0 := float64(segMapLabel) + float64(blk.Addr-s.Addr)*scale
			w := float64(blk.Size) * scale
			col := segMapKey[4].col
			switch {
			case blk.State == mem.PendingFree:
				col = segMapKey[2].col
			case blk.State == mem.Active:
				col = segMapKey[0].col
			case live:
				col = segMapKey[3].col
			}
			fmt.Fprintf(&b, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"><title>%#x %s %s</title></rect>`+"\n",
				x0, y, w, segMapRow, col, blk.Addr, mem.FormatBytes(blk.Size), blk.State)
			if blk.State == mem.Active && blk.Requested > 0 && blk.Requested < blk.Size {
				rw := float64(blk.Size-blk.Requested) * scale
				fmt.Fprintf(&b, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/>`+"\n", x0+w-rw, y, rw, segMapRow, segMapKey[1].col)
			}
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.2f" height="%d" fill="none" stroke="#555" stroke-width="0.5"/>`+"\n",
			segMapLabel, y, float64(s.Size)*scale, segMapRow)
	}
	for i, a := range aggs {
		y := row(len(shown) + i)
		fmt.Fprintf(&b, `<text x="0" y="%d" font-style="italic">%s</text>`+"\n", y+segMapRow-3,
			html.EscapeString(fmt.Sprintf("+%d more %s, %s", a.n, loc.Printable(a.pool), mem.FormatBytes(a.total))))
		shares(y, a.by, a.total, barW)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%d" fill="none" stroke="#555" stroke-width="0.5" stroke-dasharray="3 2"/>`+"\n",
			segMapLabel, y, barW, segMapRow)
	}
	b.WriteString("</svg>\n")

	note := fmt.Sprintf("%d segment%s, one bar each in address order, on one scale: the full width is %s.",
		len(shown), pluralS(len(shown)), mem.FormatBytes(largest))
	if len(rest) > 0 {
		note = fmt.Sprintf("%d of %d segments (those stranding the most free memory, then the largest), one bar each in address order, "+
			"on one scale: the full width is %s. The other %d, smaller or stranding less, are summed per pool in the last %s, "+
			"each bar the shares of those segments' bytes (dashed outline).",
			len(shown), len(l.Segments), mem.FormatBytes(largest), len(rest), map[bool]string{true: "row", false: "rows"}[len(aggs) == 1])
	}
	if crowded > 0 {
		note += fmt.Sprintf(" %d of the bars hold more than %d blocks each and show the shares of their bytes, not the blocks one by one.",
			crowded, segmentMapBlocks)
	}
	note += " Blue: live; orange: rounding inside live blocks; yellow: awaiting another stream; " +
		"red: free but stranded by a live block; grey: free, releasable."
	return []byte(b.String()), note
}
