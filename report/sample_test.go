package report

import (
	"fmt"
	"math"
)

// samplePage is a page exercising every feature, used by several tests.
func samplePage() Page {
	n := 50000
	t := make([]float64, n)
	used := make([]float64, n)
	reserved := make([]float64, n)
	frag := make([]float64, n)
	for i := range n {
		t[i] = float64(i) * 0.01
		used[i] = (20 + 10*math.Sin(float64(i)/3000) + float64(i%997)/200) * (1 << 30)
		reserved[i] = used[i] + (4+3*math.Sin(float64(i)/700))*(1<<30)
		frag[i] = 1 - used[i]/reserved[i]
	}
	used[31000] = 70 * (1 << 30) // a spike that must survive downsampling
	for i := 40000; i < 41000; i++ {
		frag[i] = math.NaN()
	}
	return Page{
		Title:    "Fragmentation report <llama-70b> & co",
		Subtitle: "trace.pkl — 50 000 events, seed 42",
		Sections: []Section{
			{
				Heading: "Memory over time",
				Text:    "Reserved memory tracks allocated memory with a gap of about 4 GiB.\nThe spike at t=310 s is an activation checkpoint.\n\nAn OOM happened at t=420 s.",
				Charts: []LineChart{
					{
						Title: "Allocated vs reserved", XLabel: "time", YLabel: "memory",
						XUnit: UnitSeconds, YUnit: UnitBytes,
						Series:  []Series{{Name: "allocated", X: t, Y: used}, {Name: "reserved", X: t, Y: reserved}},
						Markers: []Marker{{X: 120, Label: "preemption"}, {X: 125, Label: "resume"}, {X: 420, Label: "OOM"}},
					},
					{
						Title: "External fragmentation", XLabel: "time", YLabel: "share of reserved",
						XUnit: UnitSeconds, YUnit: UnitShare,
						Series: []Series{{Name: "fragmentation", X: t, Y: frag}},
					},
				},
				Tables: []Table{{
					Caption:     "Peaks",
					Header:      []string{"metric", "value", "at"},
					Rows:        [][]string{{"allocated", UnitBytes.Format(70 * (1 << 30)), "310 s"}, {"reserved", "74.2 GiB", "310 s"}, {"<script>alert(1)</script>", "1", "2"}},
					NumericCols: []int{1, 2},
				}},
			},
			{
				Heading: "Segment map",
				RawSVG:  [][]byte{[]byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="300" height="40"><rect x="0" y="0" width="200" height="40" fill="#4e79a7"/><rect x="200" y="0" width="100" height="40" fill="#e15759"/></svg>`)},
			},
			{
				Heading: "Edge cases",
				Charts: []LineChart{
					{Title: "Empty"},
					{Title: "Single point", Series: []Series{{Name: "one", X: []float64{1}, Y: []float64{5}}}},
					{Title: "Flat", Series: []Series{{Name: "flat", X: []float64{0, 1, 2}, Y: []float64{3, 3, 3}}}, YUnit: UnitBytes},
					{Title: "Many series", Width: 500, Height: 260, Series: manySeries(14)},
				},
			},
		},
	}
}

func manySeries(k int) []Series {
	out := make([]Series, k)
	for j := range k {
		x := make([]float64, 100)
		y := make([]float64, 100)
		for i := range x {
			x[i] = float64(i)
			y[i] = float64(j) + math.Sin(float64(i)/10)
		}
		out[j] = Series{Name: fmt.Sprintf("rank %d", j), X: x, Y: y}
	}
	return out
}
