// Package pages builds the HTML pages of `gpufrag analyze --html` and
// `gpufrag diff --html` from snapshot/analysis's reports (Analyze, Diff,
// Outliers), as report.Page values the command writes: per device the
// summary, the timeline charts, the segment maps (analysis.SegmentMapSVG)
// and the what-if table; for a diff the figures and the maps side by side,
// the sites that moved and the segments that appeared or vanished; for N
// snapshots the outliers. Each page is bounded whatever the snapshot holds
// (analyze.go says how) and says what it left out. docs/html-reports.md
// describes the pages.
package pages
