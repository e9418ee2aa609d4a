package experiments

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// The defrag suite (experiments/23-*.yaml to 34-*.yaml) replays variants of
// the shared traces kept in experiments/testdata/defrag-suite, so that its
// reduced runs use data in the repository. TestDefragSuiteTraces rebuilds
// them from ../shared/data/traces and fails when the files in the
// repository differ; -update-defrag-suite writes them:
//
//	go test ./experiments -run TestDefragSuiteTraces -update-defrag-suite
var updateDefragSuite = flag.Bool("update-defrag-suite", false, "rewrite experiments/testdata/defrag-suite from ../shared/data/traces")

// suiteTrace is one variant: the first minutes (timed traces) or rows
// (length-only ones) of a shared trace, every prompt multiplied by scale
// and rounded. Rates are not changed here: the experiment files rescale a
// timed trace's time (trace.rate) and give a length-only one Poisson
// arrivals drawn with the scenario's seed.
type suiteTrace struct {
	out     string  // file under experiments/testdata/defrag-suite
	src     string  // file under ../shared/data/traces
	minutes float64 // timed: keep arrivals before this many minutes
	rows    int     // length-only: keep this many rows
	scale   float64 // prompt multiplier
}

var suiteTraces = []suiteTrace{
	{out: "mooncake-20m.jsonl", src: "mooncake_conversation_trace.jsonl", minutes: 20, scale: 1},
	{out: "mooncake-long-20m.jsonl", src: "mooncake_conversation_trace.jsonl", minutes: 20, scale: 1.5},
	{out: "azure-conv-15m.jsonl", src: "AzureLLMInferenceTrace_conv.csv", minutes: 15, scale: 1},
	{out: "azure-conv-long-15m.jsonl", src: "AzureLLMInferenceTrace_conv.csv", minutes: 15, scale: 4},
	{out: "fineserve-30m.jsonl", src: "fineserve_Dense_30to100B.part1.csv", minutes: 30, scale: 1},
	{out: "sharegpt-3000.csv", src: "sharegpt_8k_filtered_stats_llama2_tokenizer.part1.csv", rows: 3000, scale: 1},
	{out: "arxiv-2000.csv", src: "arxiv_summarization_stats_llama2_tokenizer_filtered_v2.part1.csv", rows: 2000, scale: 1},
}

// build renders the variant: Mooncake JSONL without hash_ids (timestamp in
// ms) for a timed trace, a Vidur length CSV for a length-only one.
func (s suiteTrace) build(dir string) ([]byte, error) {
	f, err := os.Open(filepath.Join(dir, s.src))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr, err := workload.Read(f, s.src, workload.Auto, workload.ReadOptions{MaxRows: s.rows})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if s.rows == 0 {
		if !tr.Timed {
			return nil, fmt.Errorf("%s: not timed", s.src)
		}
		limit := int64(s.minutes * 60e9)
		for _, r := range tr.Requests {
			if r.Arrival >= limit {
				break
			}
			fmt.Fprintf(&b, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d}\n",
				r.Arrival/1_000_000, s.prompt(r.PromptTokens), r.OutputTokens)
		}
		return b.Bytes(), nil
	}
	b.WriteString("num_prefill_tokens,num_decode_tokens\n")
	for _, r := range tr.Requests {
		fmt.Fprintf(&b, "%d,%d\n", s.prompt(r.PromptTokens), r.OutputTokens)
	}
	return b.Bytes(), nil
}

func (s suiteTrace) prompt(n int) int { return max(1, int(math.Round(float64(n)*s.scale))) }

func TestDefragSuiteTraces(t *testing.T) {
	shared := filepath.Join(root, "..", "shared", "data", "traces")
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("%s absent: the committed variants cannot be checked", shared)
	}
	dir := filepath.Join("testdata", "defrag-suite")
	for _, s := range suiteTraces {
		got, err := s.build(shared)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, s.out)
		if *updateDefragSuite {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./experiments -run TestDefragSuiteTraces -update-defrag-suite writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what %s gives (go test ./experiments -run TestDefragSuiteTraces -update-defrag-suite rewrites it)", path, s.src)
		}
	}
}
