package pages

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/report"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

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
// one row, and the segment map (analysis.SegmentMapSVG) draws at most
// analysis.SegmentMapRows bars and a crowded segment as the shares of its
// bytes. Each says what it left out; the text report and --json list
// everything.
const (
	analyzeHTMLDevices = 8
	analyzeHTMLRows    = 16
)

// capacityFrom says where analysis.Device.CapacitySource took the capacity.
var capacityFrom = map[string]string{"flag": "--capacity", "oom entry": "from an OOM entry", "default": "assumed"}

// Analyze is `gpufrag analyze --html`'s page of the analysis of the
// snapshot name: per device the summary, the timeline charts, the segment
// map and the what-if table.
func Analyze(name string, rep *analysis.Report) (report.Page, error) {
	page := report.Page{Title: "gpufrag analyze: " + analyzeRunTitle(name, rep),
		Subtitle: fmt.Sprintf("PyTorch memory snapshot %s, format %s", name, rep.Format)}
	if rep.Stats != nil {
		var text bytes.Buffer
		if err := (&analysis.Report{Format: rep.Format, Stats: rep.Stats}).WriteText(&text, name); err != nil {
			return page, err
		}
		page.Sections = append(page.Sections, report.Section{Heading: "memory_stats()", Text: strings.TrimSuffix(text.String(), "\n")})
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
			svg, note := analysis.SegmentMapSVG(d.Layout, analysis.SegmentMapRows, 0, 0)
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
	return page, nil
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
