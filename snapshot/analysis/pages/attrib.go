package pages

import (
	"fmt"

	"github.com/gpufrag/gpufrag/report"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// attributionTable is a device's memory by allocation site for the analyze
// page (the rows the report keeps, then the rest summed and the total);
// ok is false when no block is live.
func attributionTable(a *analysis.Attribution) (t report.Table, ok bool) {
	if a == nil || a.Total.Blocks == 0 {
		return t, false
	}
	what := "call site (first frame outside PyTorch and Python)"
	if a.FullStacks {
		what = "stack (innermost frame first)"
	}
	bytesOf := func(n int64) string { return report.UnitBytes.Format(float64(n)) }
	t = report.Table{Caption: "Memory by allocation site: live blocks, the free space they strand, rounding",
		Header: []string{what, "allocated", "stranded free", "rounding", "blocks", "segments"}, NumericCols: []int{1, 2, 3, 4, 5}}
	row := func(s analysis.SiteStat, name string) {
		segs := "-"
		if s.Segments > 0 {
			segs = fmt.Sprint(s.Segments)
		}
		t.Rows = append(t.Rows, []string{name, bytesOf(s.Allocated), bytesOf(s.Stranded), bytesOf(s.Rounding), fmt.Sprint(s.Blocks), segs})
	}
	for _, s := range a.Sites {
		name := s.Site
		if a.FullStacks && len(s.Stack) > 1 {
			name = fmt.Sprintf("%s (and %d callers)", analysis.FrameString(s.Stack[0]), len(s.Stack)-1)
		}
		row(s, name)
	}
	if a.Other.Site != "" {
		row(a.Other, a.Other.Site)
	}
	row(a.Total, "total")
	return t, true
}
