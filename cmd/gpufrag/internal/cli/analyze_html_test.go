package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/sim/scenario"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

func TestSimulateRunTitle(t *testing.T) {
	for _, tc := range []struct {
		o    scenario.Report
		want string
	}{
		{scenario.Report{Scenario: "long-context-chat", Model: "llama-3.1-8b", GPU: "h100-80g", TP: 1, Source: "43 generated chat turns", Duration: 600},
			"long-context-chat: llama-3.1-8b on h100-80g, TP 1, 10m00s simulated"},
		// applyRun's title of a --trace run names model and GPU already.
		{scenario.Report{Scenario: "azure_conv.csv: qwen2.5-7b on l40s-48g (tp 2)", Model: "qwen2.5-7b", GPU: "l40s-48g", TP: 2,
			Source: "trace data/azure_conv.csv (azure, 20 requests)"},
			"azure_conv.csv: qwen2.5-7b on l40s-48g (tp 2), to the end of the workload"},
		{scenario.Report{Scenario: "long-context-chat with --gpu a100-40g", Model: "llama-3.1-8b", GPU: "a100-40g", TP: 1, Duration: 180},
			"long-context-chat with --gpu a100-40g: llama-3.1-8b on a100-40g, TP 1, 3m00s simulated"},
	} {
		if got := simulateRunTitle(&tc.o); got != tc.want {
			t.Errorf("simulateRunTitle = %q, want %q", got, tc.want)
		}
	}
}

// The analyze page's size is bounded whatever the snapshot holds (issue 28:
// 150,000 blocks made a 21.7 MB page): 4× the blocks, segments, streams,
// oom entries and devices make no larger a page, and the page says what it
// left out. Without the bounds the larger page was 4× the smaller.
func TestAnalyzeHTMLBounded(t *testing.T) {
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
		out := filepath.Join(t.TempDir(), "page.html")
		if err := writeAnalyzeHTML(out, "crafted", rep); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
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
