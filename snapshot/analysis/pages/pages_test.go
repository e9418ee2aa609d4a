package pages_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/snapshot/analysis/pages"
)

// The analyze page's size is bounded whatever the snapshot holds (issue 28:
// 150,000 blocks made a 21.7 MB page): 4× the blocks, segments, streams,
// oom entries and devices make no larger a page, and the page says what it
// left out. Without the bounds the larger page was 4× the smaller.
func TestAnalyzeHTMLBounded(t *testing.T) {
	if testkit.SlowBuild {
		t.Skip("-race or -tags invariants: this package starts no goroutine and the plain go test run covers it; its replays of 80,000 blocks take minutes with every self-check on")
	}
	page := func(k int) string {
		// Every bound is crossed already at k = 1: 30 streams, 10 devices,
		// 100 oom entries, small segments of 4,096 blocks.
		c := snaptest.Crafted{Segments: 30 * k, Streams: 30 * k, TinyBlocks: 5_000 * k, Events: 700 * k, OOMEvery: 1}
		s, err := snapshot.ReadOptions(bytes.NewReader(snaptest.Encode(c.Doc())), "crafted", &snapshot.Options{SkipTraceFrames: true})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{"caching"}})
		if err != nil {
			t.Fatal(err)
		}
		for d := 1; d < 10*k; d++ { // more devices, copies of device 0
			dev := rep.Devices[0]
			dev.Device = d
			rep.Devices = append(rep.Devices, dev)
		}
		p, err := pages.Analyze("crafted", rep)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := p.WriteHTML(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	small, large := page(1), page(4)
	t.Logf("page: %d bytes; with 4× the input, %d bytes", len(small), len(large))
	if len(large) > len(small)+len(small)/10 || len(large) > 1<<20 {
		t.Errorf("4× the input made a page of %d bytes from %d: it grows with the input", len(large), len(small))
	}
	for _, want := range []string{
		"this page details the 8 that reserve the most", "more are left out", // devices
		"more streams (summed)",                                   // per-stream rows
		"The first 25 of the 311 out-of-memory errors are marked", // timeline
		", and 286 more (the text report",                         // the oom entries listed after the 25th
	} {
		if !strings.Contains(large, want) {
			t.Errorf("the large page lacks %q", want)
		}
	}
	if want := "hold more than 256 blocks each and show the shares of their bytes"; !strings.Contains(small, want) {
		t.Errorf("the small page lacks %q", want)
	}
}

// crafted analyses a crafted snapshot of k segments.
func crafted(t *testing.T, k int) *analysis.Report {
	t.Helper()
	c := snaptest.Crafted{Segments: k, Streams: 1, TinyBlocks: 10 * k, Events: 50}
	s, err := snapshot.ReadOptions(bytes.NewReader(snaptest.Encode(c.Doc())), "crafted", &snapshot.Options{SkipTraceFrames: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analysis.Analyze(s, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestDiffPages: the page of two snapshots titles them and draws their
// segment maps side by side; the page of N names the reference and the
// median row.
func TestDiffPages(t *testing.T) {
	a, b := crafted(t, 2), crafted(t, 4)
	page := pages.Diff([]string{"dir/a.pickle", "dir/b.pickle"}, analysis.DiffReports(a, b, analysis.DiffOptions{}))
	var out strings.Builder
	if err := page.WriteHTML(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gpufrag diff: a.pickle vs b.pickle", "segment maps side by side", "A: a.pickle", "B: b.pickle"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diff page lacks %q", want)
		}
	}
	var units []analysis.Unit
	for i, r := range []*analysis.Report{a, b, crafted(t, 3), crafted(t, 2)} {
		units = append(units, analysis.Unit{File: []string{"a", "b", "c", "d"}[i], Device: &r.Devices[0]})
	}
	o, err := analysis.FindOutliers(units)
	if err != nil {
		t.Fatal(err)
	}
	page, err = pages.Outliers(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := page.WriteHTML(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"4 snapshot devices, which is the outlier", "Reference (nearest the median)", ">median<"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("outliers page lacks %q", want)
		}
	}
}
