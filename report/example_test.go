package report_test

import (
	"bytes"
	"fmt"
	"log"
	"strings"

	"github.com/gpufrag/gpufrag/report"
)

func Example() {
	// Memory in use over time, with an OOM marker.
	t := []float64{0, 10, 20, 30, 40, 50}
	used := []float64{2 << 30, 6 << 30, 9 << 30, 7 << 30, 12 << 30, 15 << 30}
	chart := report.LineChart{
		Title:  "Allocated memory",
		XLabel: "time", YLabel: "memory",
		XUnit: report.UnitSeconds, YUnit: report.UnitBytes,
		Series:  []report.Series{{Name: "allocated", X: t, Y: used}},
		Markers: []report.Marker{{X: 50, Label: "OOM"}},
	}
	page := report.Page{
		Title:    "Replay of trace.pkl",
		Subtitle: "allocator: caching, seed 1",
		Sections: []report.Section{{
			Heading: "Memory",
			Text:    "The job ran out of memory after 50 s.",
			Charts:  []report.LineChart{chart},
			Tables: []report.Table{{
				Header:      []string{"metric", "value"},
				Rows:        [][]string{{"peak allocated", report.UnitBytes.Format(15 << 30)}},
				NumericCols: []int{1},
			}},
		}},
	}
	var buf bytes.Buffer
	if err := page.WriteHTML(&buf); err != nil {
		log.Fatal(err)
	}
	html := buf.String()
	fmt.Println(strings.HasPrefix(html, "<!DOCTYPE html>"))
	fmt.Println(strings.Contains(html, "<svg"), strings.Contains(html, "<script"))
	fmt.Println(report.UnitBytes.Format(15<<30), report.UnitShare.Format(0.375))
	// Output:
	// true
	// true false
	// 15 GiB 37.5%
}

func ExampleLineChart_SVG() {
	c := report.LineChart{
		Title:  "Fragmentation",
		YUnit:  report.UnitShare,
		Series: []report.Series{{Name: "external", X: []float64{0, 1, 2}, Y: []float64{0.1, 0.3, 0.2}}},
	}
	svg, err := c.SVG()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(svg[:4]))
	// Output: <svg
}
