// Command gensuite writes the traces the defrag suite replays
// (experiments/23-*.yaml to 36-*.yaml), kept in experiments/testdata/defrag-suite
// so that the suite's reduced runs use data in the repository: variants of
// the shared traces in ../shared/data/traces, the development data beside
// the repository. go generate runs it in experiments/:
//
//	go generate ./experiments
//
// Without ../shared/data/traces (a clone alone) it leaves the files as they
// are, saying so on stderr. TestDefragSuiteTraces fails when a committed
// file differs from what it writes.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/gpufrag/gpufrag/workload"
)

// The directories seen from experiments/, where go generate runs this
// command.
const (
	sharedFromExperiments = "../../shared/data/traces"
	outFromExperiments    = "testdata/defrag-suite"
)

func main() {
	shared := flag.String("shared", sharedFromExperiments, "the shared traces the variants are made from")
	out := flag.String("out", outFromExperiments, "the directory to write")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: gensuite [-shared DIR] [-out DIR]")
		os.Exit(2)
	}
	if err := run(*out, *shared, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gensuite:", err)
		os.Exit(1)
	}
}

// run writes every variant of suiteTraces into out. Where shared is
// absent, it writes nothing and log says so.
func run(out, shared string, log io.Writer) error {
	if _, err := os.Stat(shared); err != nil {
		fmt.Fprintf(log, "gensuite: %s absent: the %d traces of %s are left as they are\n", shared, len(suiteTraces), out)
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, s := range suiteTraces {
		b, err := s.build(shared)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, s.out), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

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
