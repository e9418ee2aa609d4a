package cli

import (
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// TestSegmentMapReadable: a layout of 516 segments draws at most
// segmentMapRows bars of single segments, on one scale, and sums the rest
// per pool in rows that say how many they stand for.
func TestSegmentMapReadable(t *testing.T) {
	var l mem.Layout
	addr := uint64(1 << 40)
	add := func(size int64, pool string, live int64) {
		s := mem.Segment{Addr: addr, Size: size, Pool: pool}
		if live > 0 {
			s.Blocks = append(s.Blocks, mem.Block{Addr: addr, Size: live, Requested: live - 100, State: mem.Active})
		}
		if size > live {
			s.Blocks = append(s.Blocks, mem.Block{Addr: addr + uint64(live), Size: size - live, State: mem.Free})
		}
		l.Segments = append(l.Segments, s)
		addr += uint64(size)
	}
	for i := range 60 {
		add(int64(64+i)<<20, "large", int64(i+1)<<20)
	}
	for i := range 456 {
		add(2<<20, "small", int64(i%2)<<20)
	}
	svg, note := segmentMap(l, segmentMapRows)
	s := string(svg)
	if n := strings.Count(s, `stroke="#555" stroke-width="0.5"/>`); n != segmentMapRows {
		t.Errorf("%d single-segment bars, want %d", n, segmentMapRows)
	}
	for _, want := range []string{"+20 more large, ", "+456 more small, 912MiB", "40 of 516 segments drawn"} {
		if !strings.Contains(s, want) {
			t.Errorf("segment map lacks %q", want)
		}
	}
	if !strings.Contains(note, "on one scale: the full width is 123MiB") || !strings.Contains(note, "The other 476") {
		t.Errorf("note: %s", note)
	}
	// A few segments: all drawn, no summary row.
	l.Segments = l.Segments[:3]
	svg, note = segmentMap(l, segmentMapRows)
	if strings.Contains(string(svg), "more") || !strings.HasPrefix(note, "3 segments, one bar each") {
		t.Errorf("3 segments: %s\n%s", note, svg)
	}
}

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
