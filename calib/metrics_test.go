package calib

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// benchFixture is a file of workload's benchmark fixtures
// (workload/testdata/README.md gives their origin and licence).
func benchFixture(name string) string {
	return filepath.Join("..", "workload", "testdata", "bench", name)
}

// sharedBench returns the path of a file under ../shared/data/bench, or
// skips the test when the shared checkout is absent (it lives beside the
// repository in the project workspace, not in it); the fixtures cut from
// the same files keep the checks that need no full run always on.
func sharedBench(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "data", "bench", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared benchmark results not present (%v); workload/testdata/bench covers the same input cut short", err)
	}
	return p
}

// surajssd names the shared vLLM v0.8.3 runs at rate q ("01", "16", "inf").
func surajssd(q string) string {
	return "surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_" + q + ".json"
}

func readFile(t testing.TB, path string) *File {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := ReadFile(fh, path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPercentile holds percentile to numpy.percentile's linear method and
// numpy.median, computed by hand.
func TestPercentile(t *testing.T) {
	tests := []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{nil, 50, 0},                      // np.median(xs or 0) of no samples
		{[]float64{7}, 50, 7},             // one sample
		{[]float64{7}, 99, 7},             // one sample
		{[]float64{1, 2, 3, 4}, 50, 2.5},  // even count: the mean of the middle two (rank 1.5)
		{[]float64{1, 2, 3}, 50, 2},       // odd count: the middle one
		{[]float64{1, 2, 3, 4}, 99, 3.97}, // rank 0.99 × 3 = 2.97: 3 + 0.97 × (4 − 3)
		{[]float64{10, 20}, 99, 19.9},     // rank 0.99: 10 + 0.99 × 10
		{[]float64{0, 10, 20, 30, 40}, 100, 40},
		{[]float64{0, 10, 20, 30, 40}, 0, 0},
	}
	for _, tt := range tests {
		if got := percentile(tt.xs, tt.p); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("percentile(%v, %v) = %v, want %v", tt.xs, tt.p, got, tt.want)
		}
	}
}

// TestMeasuredFromArrays holds the metrics recomputed from per-request
// arrays to the client's own: the synthetic detailed file's summary was
// computed by hand from its arrays as vLLM's calculate_metrics does
// (failed request 5 left out; TPOT (latency − ttft) ÷ 9 = 20, 20, 21, 22
// ms, median 20.5; p99 TTFT 70 + 0.97 × 10 = 79.7 ms; median E2E (240 +
// 259) ÷ 2 = 249.5 ms), so every metric matches and no mismatch is
// reported.
func TestMeasuredFromArrays(t *testing.T) {
	f := readFile(t, benchFixture("vllm_bench_detailed_synthetic.json"))
	c, err := newCase(f, f.Runs[0], false, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[Metric]float64{MedianTTFT: 0.065, P99TTFT: 0.0797, MedianTPOT: 0.0205, MedianITL: 0.0205, MedianE2E: 0.2495, OutputThroughput: 12.5}
	for m, w := range want {
		ms := c.measured[m]
		if !ms.ok || math.Abs(ms.v-w) > 1e-9 {
			t.Errorf("%v = %v (ok %v), want %v", m, ms.v, ms.ok, w)
		}
	}
	if src := c.measured[MedianTTFT].source; src != "per-request arrays" {
		t.Errorf("median_ttft source %q, want the arrays", src)
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, "differ from those its per-request arrays give") {
			t.Errorf("a consistent file reported a mismatch: %s", w)
		}
	}
	if !hasWarning(c, "1 failed requests are replayed as prefill-only") {
		t.Errorf("the failed request is not reported: %q", c.Warnings)
	}
}

// TestMeasuredShared recomputes the shared surajssd runs' metrics from
// their arrays: they equal the file's own summary within summaryTolerance
// (calib/README.md: to 1e-6), with TPOT from ttft + Σ itls as v0.8.3's
// client computed latency (its own latency, the last chunk's time less
// the start, differs from that sum by float rounding: 2e-8 relative), and
// no mismatch is reported.
func TestMeasuredShared(t *testing.T) {
	for _, q := range []string{"01", "16", "inf"} {
		f := readFile(t, sharedBench(t, surajssd(q)))
		run := f.Runs[0]
		pr, ok := collect(run)
		if !ok {
			t.Fatalf("qps %s: no per-request arrays", q)
		}
		for _, m := range []Metric{MedianTTFT, P99TTFT, MedianTPOT, MedianITL} {
			v, _ := pr.value(m)
			want := run.Metrics[benchMetric[m]]
			if math.Abs(v-want) > summaryTolerance*want {
				t.Errorf("qps %s: %v from the arrays %.12g, file %.12g", q, m, v, want)
			}
		}
		if pr.outputs != run.TotalOutputTokens {
			t.Errorf("qps %s: arrays hold %d output tokens, file %d", q, pr.outputs, run.TotalOutputTokens)
		}
		c, err := newCase(f, run, false, 1)
		if err != nil {
			t.Fatal(err)
		}
		if hasWarning(c, "differ from those") {
			t.Errorf("qps %s: a mismatch was reported: %q", q, c.Warnings)
		}
	}
}

// TestMeasuredCutFile: a file whose arrays were cut to 6 of its 200
// requests keeps its 200-request summary; the arrays' figures are the
// measurements (they are what is replayed), the mismatch is reported and
// the throughput, whose duration is the 200 requests', is not fitted.
func TestMeasuredCutFile(t *testing.T) {
	f := readFile(t, benchFixture("vllm_bench_qps1_cut.json"))
	c, err := newCase(f, f.Runs[0], false, 1)
	if err != nil {
		t.Fatal(err)
	}
	// ttfts of the 6 requests sorted: 31.6, 38.8, 58.9, 59.7, 70.7, 89.1 ms;
	// the median is (58.86 + 59.70) ÷ 2.
	if got, want := c.measured[MedianTTFT].v, (0.058860330000243266+0.059704400999635254)/2; math.Abs(got-want) > 1e-12 {
		t.Errorf("median_ttft %v, want %v", got, want)
	}
	if !hasWarning(c, "differ from those its per-request arrays give") {
		t.Errorf("no mismatch warning: %q", c.Warnings)
	}
	if ex := c.measured[OutputThroughput].excluded; !strings.Contains(ex, "total_output_tokens 42722") {
		t.Errorf("throughput exclusion %q, want the token counts", ex)
	}
}

// TestQuirkExclusions: SGLang's detailed synthetic run streams chunks of
// three tokens (gaps 4, 3, 4 for 12, 9, 12 tokens) and has a zero-length
// output: ITL is excluded for the chunks, TTFT and E2E for the empty
// output; TPOT stays.
func TestQuirkExclusions(t *testing.T) {
	f := readFile(t, benchFixture("sglang_bench_details_synthetic.jsonl"))
	c, err := newCase(f, f.Runs[0], false, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ex := c.measured[MedianITL].excluded; !strings.Contains(ex, "11 gaps for 33 tokens") {
		t.Errorf("ITL exclusion %q, want the chunks named", ex)
	}
	checkNoTextExcluded(t, c)
}

// TestQuirkExclusionsLensOnly: a file with per-request lengths but no
// per-request times (the summary is what is measured) has its TTFT and
// E2E excluded for a successful request with output_lens 0 too: the
// client's printed percentiles count it at a TTFT of 0 all the same.
func TestQuirkExclusionsLensOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lens.json")
	doc := `{"backend": "vllm", "model_id": "m", "num_prompts": 4, "request_rate": 2.0, "duration": 3.0, "completed": 4, ` +
		`"total_input_tokens": 40, "total_output_tokens": 12, "median_ttft_ms": 20.0, "p99_ttft_ms": 30.0, "median_tpot_ms": 5.0, ` +
		`"input_lens": [10, 10, 10, 10], "output_lens": [4, 0, 4, 4]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	f := readFile(t, path)
	if _, arrays := collect(f.Runs[0]); arrays {
		t.Fatal("the file has per-request times; the test wants lengths only")
	}
	c, err := newCase(f, f.Runs[0], false, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ms := c.measured[MedianTTFT]; !ms.ok || ms.source != "summary" {
		t.Errorf("median TTFT %+v, want the summary's", ms)
	}
	checkNoTextExcluded(t, c)
}

// checkNoTextExcluded: c's TTFT and E2E are excluded for its one
// successful request with output_lens 0, and its TPOT is not.
func checkNoTextExcluded(t *testing.T, c *Case) {
	t.Helper()
	for _, m := range []Metric{MedianTTFT, P99TTFT, MedianE2E} {
		if ex := c.measured[m].excluded; !strings.Contains(ex, "1 successful requests have output_lens 0") {
			t.Errorf("%v exclusion %q, want the zero-length output named", m, ex)
		}
	}
	if ex := c.measured[MedianTPOT].excluded; ex != "" {
		t.Errorf("TPOT excluded: %q", ex)
	}
}

func hasWarning(c *Case, s string) bool {
	for _, w := range c.Warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}

// TestCollectNeedsArrays: a summary-only run gives no per-request samples.
func TestCollectNeedsArrays(t *testing.T) {
	f := readFile(t, benchFixture("sglang_bench_online.jsonl"))
	if _, ok := collect(f.Runs[0]); ok {
		t.Error("collect read arrays from a summary-only run")
	}
	var r workload.BenchResult
	if _, ok := collect(&r); ok {
		t.Error("collect read arrays from an empty run")
	}
}

// TestNoTextRequests counts the successful requests with no output, not
// the failed ones, and none in a file without per-request lengths.
func TestNoTextRequests(t *testing.T) {
	r := &workload.BenchResult{Detail: workload.DetailLens, Requests: []workload.BenchRequest{
		{InputTokens: 5, OutputTokens: 0}, {InputTokens: 5, OutputTokens: 3}, {InputTokens: 5, OutputTokens: 0, Err: "boom"},
		{InputTokens: 7, OutputTokens: 0},
	}}
	if n := noTextRequests(r); n != 2 {
		t.Errorf("noTextRequests = %d, want 2 (the failed one is not counted)", n)
	}
	r.Detail = 0
	if n := noTextRequests(r); n != 0 {
		t.Errorf("without lengths: %d, want 0", n)
	}
}

// TestClientTTFT takes a simulated TTFT percentile as the client takes it:
// the requests with a first token at their times, plus a 0 for each
// request that returned no text, with numpy's interpolation.
func TestClientTTFT(t *testing.T) {
	res := &sim.Result{RequestTimes: []sim.RequestTime{
		{Output: 4, TTFT: 3, HasTTFT: true}, {Output: 0}, {Output: 2, TTFT: 1, HasTTFT: true}, {Output: 9, TTFT: 2, HasTTFT: true},
	}}
	for _, tc := range []struct {
		zeros int
		p     float64
		want  float64
	}{
		{0, 50, 2},       // 1 2 3
		{2, 50, 1},       // 0 0 1 2 3
		{3, 50, 0.5},     // 0 0 0 1 2 3: the mean of the middle two
		{2, 99, 2.96},    // rank 0.99 × 4 = 3.96: between 2 and 3
		{5, 50, 0},       // most are zeros
		{4, 90, 2.4},     // 0 0 0 0 1 2 3: rank 5.4
		{2, 60, 1.4},     // rank 2.4
		{3, 50.5, 0.525}, // rank 2.525, between a zero and 1
		{1, 0, 0},        // the lowest is a zero
		{1, 100, 3},      // the highest
	} {
		got, ok := clientTTFT(res, tc.zeros, tc.p)
		if !ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("zeros %d, p%v: %v, %v; want %v", tc.zeros, tc.p, got, ok, tc.want)
		}
	}
	if _, ok := clientTTFT(&sim.Result{}, 3, 50); ok {
		t.Error("a run without request times gave a client TTFT")
	}
}

// TestSummaryChunkedITL: a run with only its summary cannot count its
// stream chunks, so a median ITL well above its median TPOT (a chunk of
// several tokens makes one gap of several steps) is left out, and one at
// or below it (a token a chunk) is kept.
func TestSummaryChunkedITL(t *testing.T) {
	for _, tc := range []struct {
		itl, tpot float64
		kept      bool
	}{
		{0.200, 0.025, false}, // 8 tokens a chunk
		{0.030, 0.025, true},  // a few stalls
		{0.020, 0.025, true},
	} {
		c := &Case{Run: &workload.BenchResult{Metrics: map[workload.BenchMetric]float64{
			workload.MedianITL: tc.itl, workload.MedianTPOT: tc.tpot, workload.MedianTTFT: 0.1,
		}}}
		c.measure()
		ms := c.measured[MedianITL]
		if !ms.ok || (ms.excluded == "") != tc.kept {
			t.Errorf("ITL %g, TPOT %g: measured %v, excluded %q; want kept %v", tc.itl, tc.tpot, ms.ok, ms.excluded, tc.kept)
		}
		if !tc.kept && !strings.Contains(ms.excluded, "8.00 times its median TPOT") {
			t.Errorf("ITL %g: excluded %q", tc.itl, ms.excluded)
		}
	}
}

// TestMeasuredNoLatencies: a file that saved no latencies has its TPOT and
// E2E recomputed from ttft + Σ itls, which the client's own latency
// exceeds slightly (it ends after the stream), so a summary within
// summaryNoLatencyTolerance of that is no mismatch (crusoe-cookbook's
// unedited vLLM 0.5.5 files differ by about 1e-4), while one 5% off is.
func TestMeasuredNoLatencies(t *testing.T) {
	data, err := os.ReadFile(benchFixture("vllm_bench_detailed_synthetic.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "latencies")
	measure := func(tpotScale float64) *Case {
		t.Helper()
		doc["median_tpot_ms"] = 20.5 * tpotScale // the fixture's itls sum to its latencies: 20.5 ms from the arrays either way
		doc["median_e2el_ms"] = 249.5
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ReadFile(bytes.NewReader(b), "nolat.json")
		if err != nil {
			t.Fatal(err)
		}
		c, err := newCase(f, f.Runs[0], false, 1)
		if err != nil {
			t.Fatal(err)
		}
		if v := c.measured[MedianTPOT].v; math.Abs(v-0.0205) > 1e-9 {
			t.Fatalf("median TPOT from ttft + Σ itls %v, want 0.0205", v)
		}
		return c
	}
	const mismatch = "differ from those its per-request arrays give"
	if c := measure(1.0001); hasWarning(c, mismatch) {
		t.Errorf("a summary TPOT 1e-4 above ttft + Σ itls's is reported: %q", c.Warnings)
	}
	if c := measure(1.05); !hasWarning(c, mismatch) {
		t.Errorf("a summary TPOT 5%% off is not reported: %q", c.Warnings)
	}
}
