package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/gpufrag/gpufrag/report"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// segmentMapRows caps the segment map: beyond a few hundred bars a page gets
// long without showing more (the segments stranding most free memory are
// kept).
const segmentMapRows = 300

// writeAnalyzeHTML writes the analysis as a self-contained HTML page: per
// device the summary, the timeline charts, the segment map and the what-if
// table.
func writeAnalyzeHTML(path, name string, rep *analysis.Report) error {
	page := report.Page{Title: "gpufrag analyze " + name,
		Subtitle: fmt.Sprintf("PyTorch memory snapshot, format %s, %d device(s)", rep.Format, len(rep.Devices))}
	if rep.Stats != nil {
		var text bytes.Buffer
		if err := (&analysis.Report{Format: rep.Format, Stats: rep.Stats}).WriteText(&text, name); err != nil {
			return err
		}
		page.Sections = append(page.Sections, report.Section{Heading: "memory_stats()", Text: trimNewline(text.String())})
	}
	for _, d := range rep.Devices {
		page.Sections = append(page.Sections, deviceSummary(d))
	}
	for _, d := range rep.Devices {
		if len(d.Timeline) > 0 {
			var x, res, all, fr []float64
			for _, p := range d.Timeline {
				x = append(x, float64(p.Event))
				res = append(res, float64(p.Reserved))
				all = append(all, float64(p.Allocated))
				fr = append(fr, p.FragRate)
			}
			var marks []report.Marker
			for _, o := range d.OOMs {
				marks = append(marks, report.Marker{X: float64(o.Event), Label: "OOM"})
			}
			page.Sections = append(page.Sections, report.Section{
				Heading: fmt.Sprintf("Device %d: timeline", d.Device),
				Text:    "Replayed through the caching model with the recorded settings; x is the trace event index.",
				Charts: []report.LineChart{
					{Title: "Reserved and allocated", XLabel: "event", YLabel: "memory", YUnit: report.UnitBytes,
						Series: []report.Series{{Name: "reserved", X: x, Y: res}, {Name: "allocated", X: x, Y: all}}, Markers: marks},
					{Title: "Fragmentation rate (1 − health)", XLabel: "event", YLabel: "frag rate", YUnit: report.UnitShare,
						Series: []report.Series{{Name: "frag rate", X: x, Y: fr}}, Markers: marks},
				},
			})
		}
		if len(d.Layout.Segments) > 0 {
			page.Sections = append(page.Sections, report.Section{
				Heading: fmt.Sprintf("Device %d: segment map", d.Device),
				Text: fmt.Sprintf("%d segments, one bar each, scaled to its own size. Blue: live; orange: rounding inside live blocks; "+
					"yellow: awaiting another stream; red: free but stranded by a live block; grey: free, releasable.", len(d.Layout.Segments)),
				RawSVG: [][]byte{analysis.SegmentMapSVG(d.Layout, segmentMapRows)},
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
					fmt.Sprint(a.OOMs), report.UnitShare.Format(a.PeakFragRate)})
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
	for _, o := range d.OOMs {
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
			share = report.UnitShare.Format(float64(r.n) / float64(c.Reserved))
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
	for _, g := range append(append([]analysis.Group(nil), d.Streams...), d.Pools...) {
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
	return sec
}
