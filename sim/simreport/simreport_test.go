package simreport

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
	"github.com/gpufrag/gpufrag/workload"
)

// TestDescribe: a run as written keeps the scenario's name and leaves the
// report alone; a --trace run is named by the trace's file, model and GPU
// (a config.json's base name, the TP degree); other flags are listed with
// their values; "about" says where the run started and what changed.
func TestDescribe(t *testing.T) {
	plan := func(source string) *scenario.Plan {
		return &scenario.Plan{Source: source, Model: model.Model{Name: "dir/config.json"}, GPU: model.GPU{Name: "a100-40g"},
			Requests: make([]workload.Request, 2), Configs: []sim.Config{{KVDType: model.FP32}}}
	}
	s := scenario.Default()
	r := Describe(s, plan("43 chats"), true, nil, nil)
	o := &scenario.Report{Scenario: "kept", About: "kept"}
	r.Apply(o)
	if r.Title != s.Name || len(r.Changed) != 0 || r.Changed == nil || r.Trace != nil || o.Scenario != "kept" || r.KVDType != "fp32" {
		t.Errorf("as written: %+v, report %+v", r, o)
	}

	s.TP = 2
	s.Workload.Trace = &scenario.Trace{File: "data/conv.csv", Rate: 3}
	r = Describe(s, plan("trace data/conv.csv (azure, 2 requests)"), true, []string{"--rate", "--trace"}, []string{"--rate 3", "--trace data/conv.csv"})
	r.Apply(o)
	if r.Title != "conv.csv: config.json on a100-40g (tp 2)" || r.Trace == nil || r.Trace.Format != "azure" || r.Trace.Requests != 2 ||
		o.Scenario != r.Title || o.About != "the embedded scenario "+s.Name+" changed by --rate, --trace; KV cache fp32; arrivals at 3 requests/s" {
		t.Errorf("--trace: %+v, trace %+v, report %+v", r, r.Trace, o)
	}

	s.Workload.Trace.Format = "vidur"
	r = Describe(s, plan("generated"), false, []string{"--gpu"}, []string{"--gpu a100-40g"})
	if r.Title != s.Name+" with --gpu a100-40g" || r.Trace.Format != "vidur" || r.about() != "the scenario "+s.Name+" changed by --gpu; KV cache fp32; arrivals at 3 requests/s" {
		t.Errorf("--gpu: %+v, about %q", r, r.about())
	}
}

func TestTitle(t *testing.T) {
	for _, tc := range []struct {
		o    scenario.Report
		want string
	}{
		{scenario.Report{Scenario: "long-context-chat", Model: "llama-3.1-8b", GPU: "h100-80g", TP: 1, Source: "43 generated chat turns", Duration: 600},
			"long-context-chat: llama-3.1-8b on h100-80g, TP 1, 10m00s simulated"},
		// Apply's title of a --trace run names model and GPU already.
		{scenario.Report{Scenario: "azure_conv.csv: qwen2.5-7b on l40s-48g (tp 2)", Model: "qwen2.5-7b", GPU: "l40s-48g", TP: 2,
			Source: "trace data/azure_conv.csv (azure, 20 requests)"},
			"azure_conv.csv: qwen2.5-7b on l40s-48g (tp 2), to the end of the workload"},
		{scenario.Report{Scenario: "long-context-chat with --gpu a100-40g", Model: "llama-3.1-8b", GPU: "a100-40g", TP: 1, Duration: 180},
			"long-context-chat with --gpu a100-40g: llama-3.1-8b on a100-40g, TP 1, 3m00s simulated"},
	} {
		if got := Title(&tc.o); got != tc.want {
			t.Errorf("Title = %q, want %q", got, tc.want)
		}
	}
}

// report is a report of two runs on a 40 GiB GPU: a paged run whose
// compaction was skipped and whose health fell to 0.2 beside its KV pool,
// and a contiguous run whose compaction ran.
func testReport() *scenario.Report {
	const gib = 1 << 30
	series := sim.Series{Time: []float64{0, 1, 2}, Health: []float64{1, 0.2, 0.9},
		Reserved: []int64{gib, 30 * gib, 30 * gib}, Allocated: []int64{gib, 4 * gib, 29 * gib},
		Requested: []int64{gib, 4 * gib, 29 * gib}, KVHeld: []int64{0, gib, gib}, Running: []int{1, 2, 3}, Waiting: []int{0, 0, 1}}
	return &scenario.Report{Scenario: "s\x1b", Model: "m", GPU: "a100-40g", TP: 1, Source: "src", Duration: 60, Seed: 7, Recommended: -1,
		Results: []sim.Result{
			{KV: "paged:16", Allocator: "caching", KVPoolBytes: 20 * gib, Series: series, Steps: 10,
				Defrag: &sim.DefragResult{Policy: "threshold", Skipped: "paged:16 keeps no KV to move"}},
			{KV: "contiguous-grow", Allocator: "caching", RequestsFailedOOM: 3, Steps: 10,
				Defrag: &sim.DefragResult{Policy: "threshold", Runs: 2, BytesMoved: gib, LowerBound: gib / 2, FreedBytes: 2 * gib,
					Pause: sim.Quantiles{P50: 0.01, P99: 0.02, Max: 0.03}, PauseTotal: 0.05, OOMsWithout: 9}},
		}}
}

// TestWriteText: the header (through untrusted.Printable), both tables, the
// compaction notes (skipped, and what ran with the OOMs without), the
// fragmentation verdict with the KV pool's explanation, no bands or
// recommendation when there are none, and both when there are.
func TestWriteText(t *testing.T) {
	o := testReport()
	var sb strings.Builder
	if err := WriteText(&sb, o, 40<<30); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		"s\\x1b\nm on a100-40g (tp 1); src; simulated for 1m0s; seed 7.\n",
		"kv / allocator", "paged:16 / caching", "contiguous-grow / caching",
		"Compaction (--defrag threshold):\n  paged:16 / caching: did not run: paged:16 keeps no KV to move\n",
		"  contiguous-grow / caching: 2 runs, 1.00GiB moved (lower bound 512.00MiB),\n      2.00GiB freed, pauses p50 10ms,",
		"3 with compaction, 9 without\n",
		"Fragmentation at the lowest health, weighed by the memory at stake:\n  paged:16 / caching: ",
		"the KV pool is one 20.00GiB block",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "Error bands") || strings.Contains(out, "Recommended") ||
		strings.Contains(out, "  contiguous-grow / caching: minor") {
		t.Errorf("report:\n%s", out)
	}
	o.Recommended, o.Reason = 0, "paged:16 / caching: fewest OOMs"
	o.Results[0].TTFT = sim.Latency{P50: 0.2, P50Band: &sim.Band{Quantile: 0.8, Lower: 0.1, Upper: 0.3, RelLower: -0.5, RelUpper: 0.5, Basis: "b"}}
	sb.Reset()
	if err := WriteText(&sb, o, 40<<30); err != nil {
		t.Fatal(err)
	}
	out = sb.String()
	for _, want := range []string{"\nError bands: where the measured figure should fall, 80% of the time",
		"  paged:16 / caching", "  TTFT: -50% to +50% of the simulated value, from b\n", "\nRecommended: paged:16 / caching: fewest OOMs.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestAddBands: runs with steps get calib's bands of the step model that
// timed them around their figures; a run without steps gets none.
func TestAddBands(t *testing.T) {
	o := &scenario.Report{GPU: "a100-80g", Results: []sim.Result{
		{Steps: 100, BatchSizeMean: 8, TTFT: sim.Latency{P50: 0.2}, TPOT: sim.Latency{P50: 0.02}, OutputTokensPerS: 900},
		{TTFT: sim.Latency{P50: 0.2}},
	}}
	if err := AddBands(o); err != nil {
		t.Fatal(err)
	}
	bands, err := calib.EmbeddedBands()
	if err != nil {
		t.Fatal(err)
	}
	setup := calib.BandSetup{Model: sim.StepTimeRoofline, GPU: "a100-80g"} // no timing: the roofline
	r := o.Results[0]
	for _, c := range []struct {
		m    calib.BandMetric
		v    float64
		band *sim.Band
	}{{calib.BandTTFT, 0.2, r.TTFT.P50Band}, {calib.BandTPOT, 0.02, r.TPOT.P50Band}, {calib.BandThroughput, 900, r.OutputTokensPerSBand}} {
		want := bands.Around(setup, c.m, 8, c.v)
		if want == nil || c.band == nil || *c.band != *want {
			t.Errorf("%v: band %+v, want %+v", c.m, c.band, want)
		}
	}
	if o.Results[1].TTFT.P50Band != nil {
		t.Errorf("a run without steps got a band")
	}
	o.Timing = &scenario.Timing{Profile: &scenario.ProfileReport{From: "mine.yaml"}}
	if s := bandSetup(o); s.Model != calib.BandProfileFile || s.Profile != "mine.yaml" {
		t.Errorf("a profile file's setup: %+v", s)
	}
}

// TestMarkers: a thousand events of one kind become at most markerBins
// markers whose counts add up; each kind keeps its own; the legend counts
// them in order of first appearance.
func TestMarkers(t *testing.T) {
	var evs []sim.Event
	for i := range 1000 {
		evs = append(evs, sim.Event{Time: float64(i), Kind: "oom"})
	}
	evs = append(evs, sim.Event{Time: 5, Kind: "preempt"})
	ms := markers(evs)
	total := map[string]int{}
	for _, m := range ms {
		total[m.Label] += m.Count
	}
	if len(ms) > markerBins+1 || total["oom"] != 1000 || total["preempt"] != 1 {
		t.Errorf("%d markers, counts %v", len(ms), total)
	}
	if got := markerLegend(evs); got != "oom ×1000, preempt ×1" {
		t.Errorf("legend %q", got)
	}
	if markers(nil) != nil || markerLegend(nil) != "none" {
		t.Error("no events: want no markers and legend none")
	}
}

// TestWriteHTML: the page names the run, has the comparison, a section
// with charts per run and the text report.
func TestWriteHTML(t *testing.T) {
	o := testReport()
	o.Scenario = "chat"
	var sb strings.Builder
	if err := WriteHTML(&sb, o); err != nil {
		t.Fatal(err)
	}
	page := sb.String()
	for _, want := range []string{"gpufrag simulate: " + Title(o), "Comparison", "Text report",
		fmt.Sprintf("%d completed, %d failed with OOM", 0, 3), "contiguous-grow / caching: memory", ">ITL p99</th>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestNew: the document says what ran, recommends and carries bands.
func TestNew(t *testing.T) {
	s := scenario.Default()
	plan := &scenario.Plan{Source: "src", Model: model.Model{Name: "m"}, GPU: model.GPU{Name: "a100-80g"}}
	results := []sim.Result{{KV: "paged:16", Allocator: "caching", Steps: 10, BatchSizeMean: 4, TTFT: sim.Latency{P50: 0.1},
		RequestsCompleted: 5}}
	d, err := New(s, plan, results, true, []string{"--gpu"}, []string{"--gpu a100-80g"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Report.Scenario != s.Name+" with --gpu a100-80g" || d.Run.Title != d.Report.Scenario || d.Report.Results[0].TTFT.P50Band == nil {
		t.Errorf("New: report %q, run %+v, band %v", d.Report.Scenario, d.Run, d.Report.Results[0].TTFT.P50Band)
	}
}

// TestWriteTextWidth: with no limit, or one the tables fit, the report is
// WriteText's byte for byte; narrower, the memory, service and band tables
// print stacked (a run's name alone on its line, the band table's indented
// as the table is) and every line fits.
func TestWriteTextWidth(t *testing.T) {
	o := testReport()
	o.Results[0].TTFT = sim.Latency{P50: 0.2, P50Band: &sim.Band{Quantile: 0.8, Lower: 0.1, Upper: 0.3, RelLower: -0.5, RelUpper: 0.5, Basis: "b"}}
	o.Results[1].Allocator = "caching:expandable_segments:True,max_split_size_mb:64" // the band table wider than 80 too
	write := func(width int) string {
		var sb strings.Builder
		if err := WriteTextWidth(&sb, o, 40<<30, width); err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	var sb strings.Builder
	if err := WriteText(&sb, o, 40<<30); err != nil {
		t.Fatal(err)
	}
	full := sb.String()
	widest := 0
	for _, line := range strings.Split(full, "\n") {
		widest = max(widest, utf8.RuneCountInString(line))
	}
	for _, w := range []int{0, widest, widest + 40} {
		if got := write(w); got != full {
			t.Errorf("width %d:\n%s\nwant WriteText's:\n%s", w, got, full)
		}
	}
	got := write(80)
	for i, line := range strings.Split(got, "\n") {
		// The legend's OOM line is prose of 83 characters, in every layout.
		if n := utf8.RuneCountInString(line); n > 80 && !strings.HasPrefix(line, "OOM: ") {
			t.Errorf("line %d is %d characters: %q", i+1, n, line)
		}
	}
	for _, want := range []string{"\nkv / allocator\n", "\ncontiguous-grow / caching:expandable_segments:True,max_split_size_mb:64\n",
		"\n  paged:16 / caching\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("report at 80 columns lacks %q:\n%s", want, got)
		}
	}
	if widest <= 80 {
		t.Errorf("the full report is %d wide: the test needs one wider than 80", widest)
	}
}
