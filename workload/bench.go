// Benchmark result files as input: the types of one run and ReadBench. See
// ReadBench for the format; bench_json.go reads the text, bench_run.go the
// fields of a run, bench_quirks.go its warnings and bench_trace.go turns a
// run into a Trace.

package workload

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Bounds of ReadBench.
const (
	// MaxBenchBytes bounds a benchmark result file (256 MiB). vLLM v0.8.3's
	// --save-result file of 200 ShareGPT requests with its per-request
	// arrays is 1.1 MB (about 5.5 KB a request, most of it generated_texts
	// and itls), so the bound holds some 45,000 detailed requests, 45 times
	// vLLM's default --num-prompts; summary-only files are a few KB a run.
	// Reading keeps the text and a copy of the known fields' values, so
	// memory is at most about three times the file.
	MaxBenchBytes int64 = 256 << 20
	// MaxBenchRuns bounds the runs of one file (10,000): a sweep appended
	// with --append-result or SGLang's --output-file is a few dozen runs
	// (the datacrunch files hold 6 and 7), so a hundred rates times a
	// hundred setups still fit.
	MaxBenchRuns = 10_000
	// MaxBenchITLs bounds the inter-token gaps kept over all runs of a file
	// (2^25, 256 MiB as float64): 10,000 requests of 3,000 output tokens.
	// Without it, 256 MiB of "0," would decode into a gigabyte of gaps.
	MaxBenchITLs = 1 << 25
)

// Harnesses: which benchmark client wrote a run, told from its keys.
const (
	// HarnessVLLM is vLLM's benchmarks/benchmark_serving.py or
	// vllm bench serve with --save-result (or --append-result).
	HarnessVLLM = "vllm"
	// HarnessSGLang is SGLang's python -m sglang.bench_serving with
	// --output-file (JSONL, one run appended per line).
	HarnessSGLang = "sglang"
)

// BenchResult is one run of a serving benchmark client: the setup it sent
// requests with, the summary metrics it measured, its per-request arrays
// when the file has them, and warnings about known quirks of such files.
// Times are in seconds (the files' *_ms metrics are converted).
type BenchResult struct {
	File string // the name given to ReadBench, for messages
	Run  int    // 1-based index of the run in its file
	Runs int    // the number of runs in the file
	Line int    // the line the run's JSON object starts on
	// Harness is HarnessVLLM or HarnessSGLang.
	Harness string

	// Backend, Model, Tokenizer, Dataset and Date are the client's labels
	// ("" when the file lacks them: SGLang writes no model id, vLLM no
	// dataset name).
	Backend, Model, Tokenizer, Dataset, Date string
	// RequestRate is the rate the client drew arrivals at, in requests per
	// second; +Inf sent every request at once; 0 when the file does not
	// say.
	RequestRate float64
	// Burstiness is the shape of the gamma-distributed gaps between sends
	// (vLLM's --burstiness): 1 is a Poisson process, below 1 burstier,
	// above 1 more regular, +Inf constant gaps. Files without it (SGLang,
	// vLLM before burstiness existed) sent Poisson arrivals: 1, with
	// BurstinessGiven false.
	Burstiness      float64
	BurstinessGiven bool
	// MaxConcurrency is the client's cap on requests in flight (vLLM's and
	// SGLang's --max-concurrency); 0 when there was none.
	MaxConcurrency int
	// NumPrompts is the number of requests the client was asked to send
	// (vLLM's num_prompts); 0 when the file does not say (SGLang).
	NumPrompts int
	// Seed seeds this package's arrival and length draws: the file's "seed"
	// (from vLLM's --metadata seed=N) when SeedGiven, otherwise the
	// client's default (vLLM 0, SGLang 1). The clients draw with numpy's
	// generator, which this package does not reproduce: arrivals drawn
	// here follow the client's process, not its individual draws.
	Seed      uint64
	SeedGiven bool
	// Random holds SGLang's random-dataset lengths (random_input_len,
	// random_output_len, random_range_ratio); nil when the file has none.
	Random *BenchRandom
	// Server holds the server's settings the run records, in the order of
	// ServerKeys (vllm bench sweep's serve parameters, --metadata); nil
	// when it records none.
	Server []BenchArg

	// Completed, Failed, TotalInputTokens and TotalOutputTokens are the
	// file's counts; -1 when it lacks one (SGLang writes no failed count).
	Completed, Failed                   int
	TotalInputTokens, TotalOutputTokens int64
	// Metrics holds the summary metrics the file has, in seconds,
	// requests/s and tokens/s; a metric the file lacks (or writes as NaN)
	// is absent.
	Metrics map[BenchMetric]float64

	// Requests holds the per-request arrays, in the order the client sent
	// the requests; nil when the file has none (vLLM without
	// --save-detailed, SGLang without --output-details). Detail says which
	// arrays there were.
	Requests []BenchRequest
	Detail   BenchDetail

	// Warnings are the known quirks found in the run (stream chunks of
	// several tokens, zero-length outputs, failed requests, metrics that
	// are NaN), each a full sentence without the file name.
	Warnings []string
}

// BenchArg is one of the server's settings a run records: its key and
// its value as written (a string's text, a number's literal, true or
// false), at most MaxIDBytes.
type BenchArg struct{ Key, Value string }

// BenchRandom is SGLang's random dataset: prompts drawn uniformly from
// [max(floor(InputLen·RangeRatio), 1), InputLen] tokens and outputs from
// [floor(OutputLen·RangeRatio), OutputLen] (sglang/bench_serving.py,
// sample_random_requests).
type BenchRandom struct {
	InputLen, OutputLen int
	RangeRatio          float64
}

// BenchRequest is one request of a run's per-request arrays. Fields whose
// array the file lacks are zero (see BenchResult.Detail).
type BenchRequest struct {
	InputTokens, OutputTokens int
	TTFT                      float64   // time to first token, s (0 for a failed request)
	ITLs                      []float64 // gaps between stream chunks after the first, s
	Latency                   float64   // end-to-end latency, s (newer vLLM)
	// Start is when the client sent the request and Queue how long it
	// waited for a --max-concurrency slot before that, s on the client's
	// clock (newer vLLM's start_times and queue_times).
	Start, Queue float64
	// Err is the client's error for a failed request, cut to untrusted.QuoteBytes;
	// "" for a request that succeeded (or when the file has no errors).
	Err string
}

// Failed reports whether the client recorded an error for q.
func (q BenchRequest) Failed() bool { return q.Err != "" }

// BenchDetail says which per-request arrays a run has.
type BenchDetail uint8

// The per-request arrays.
const (
	DetailLens       BenchDetail = 1 << iota // input_lens and output_lens
	DetailTTFTs                              // ttfts
	DetailITLs                               // itls
	DetailLatencies                          // latencies (newer vLLM)
	DetailStartTimes                         // start_times (newer vLLM)
	DetailQueueTimes                         // queue_times (newer vLLM)
	DetailErrors                             // errors
)

// BenchMetric is a summary metric of a run.
type BenchMetric int

// The summary metrics ReadBench keeps. Latencies are in seconds.
const (
	MedianTTFT BenchMetric = iota
	MeanTTFT
	P99TTFT
	MedianTPOT
	MeanTPOT
	P99TPOT
	MedianITL
	MeanITL
	P99ITL
	MedianE2E
	MeanE2E
	P99E2E
	OutputThroughput  // generated tokens per second
	RequestThroughput // completed requests per second
	Duration          // the run's length, s
	numBenchMetrics
)

// benchMetricSpec names a metric and the keys the clients write it under.
type benchMetricSpec struct {
	name string
	keys []string // vLLM's first, then SGLang's where it differs
	ms   bool     // the file gives milliseconds
}

var benchMetricSpecs = [numBenchMetrics]benchMetricSpec{
	MedianTTFT:        {"median_ttft", []string{"median_ttft_ms"}, true},
	MeanTTFT:          {"mean_ttft", []string{"mean_ttft_ms"}, true},
	P99TTFT:           {"p99_ttft", []string{"p99_ttft_ms"}, true},
	MedianTPOT:        {"median_tpot", []string{"median_tpot_ms"}, true},
	MeanTPOT:          {"mean_tpot", []string{"mean_tpot_ms"}, true},
	P99TPOT:           {"p99_tpot", []string{"p99_tpot_ms"}, true},
	MedianITL:         {"median_itl", []string{"median_itl_ms"}, true},
	MeanITL:           {"mean_itl", []string{"mean_itl_ms"}, true},
	P99ITL:            {"p99_itl", []string{"p99_itl_ms"}, true},
	MedianE2E:         {"median_e2e", []string{"median_e2el_ms", "median_e2e_latency_ms"}, true},
	MeanE2E:           {"mean_e2e", []string{"mean_e2el_ms", "mean_e2e_latency_ms"}, true},
	P99E2E:            {"p99_e2e", []string{"p99_e2el_ms", "p99_e2e_latency_ms"}, true},
	OutputThroughput:  {"output_throughput", []string{"output_throughput"}, false},
	RequestThroughput: {"request_throughput", []string{"request_throughput"}, false},
	Duration:          {"duration", []string{"duration"}, false},
}

// String names the metric: "median_ttft", "output_throughput", ...
func (m BenchMetric) String() string {
	if m >= 0 && m < numBenchMetrics {
		return benchMetricSpecs[m].name
	}
	return fmt.Sprintf("BenchMetric(%d)", int(m))
}

// Keys returns the JSON keys the clients write m under (vLLM's first).
func (m BenchMetric) Keys() []string {
	if m >= 0 && m < numBenchMetrics {
		return append([]string(nil), benchMetricSpecs[m].keys...)
	}
	return nil
}

// BenchMetrics lists every metric in the order of the constants.
func BenchMetrics() []BenchMetric {
	ms := make([]BenchMetric, numBenchMetrics)
	for i := range ms {
		ms[i] = BenchMetric(i)
	}
	return ms
}

// ReadBench reads a benchmark result file: vLLM's benchmark_serving.py or
// vllm bench serve --save-result JSON (one object, on one line, or several
// joined by newlines with --append-result; pretty-printed JSON reads too),
// with or without --save-detailed's per-request arrays, or SGLang's
// bench_serving --output-file JSONL (one object per run, appended per
// line, with --output-details' arrays or without). It returns one
// BenchResult per run, in file order.
//
// The text is read as every trace is (binary input refused at its first
// bytes, a BOM dropped, LF, CRLF or CR endings) up to MaxBenchBytes;
// Python's bare Infinity, -Infinity and NaN (SGLang writes
// "request_rate": Infinity) are accepted where a number is, and vLLM's
// "inf" string for a rate. The server's settings a sweep or --metadata
// writes beside a run's keys (ServerKeys: tensor_parallel_size,
// max_num_seqs, ...) are kept as text in BenchResult.Server. Unknown keys
// are ignored (generated_texts among them, which is not kept). A field of the wrong type or out of range, an
// object that has none of the clients' keys (an AccelMark result.json, a
// .pytorch.json array) and per-request arrays of different lengths are
// *Error errors naming the file, the line the run starts on, the field
// (input_lens[17] for an entry) and, when the file holds several runs,
// the run. Missing setup fields are not errors here: the Trace method
// names the one it needs.
func ReadBench(r io.Reader, name string) ([]*BenchResult, error) {
	text, err := readBenchText(r, name)
	if err != nil {
		return nil, err
	}
	objs, e := splitBenchObjects(text)
	if e != nil {
		e.File = name
		return nil, e
	}
	var (
		out  []*BenchResult
		itls int
	)
	for i, o := range objs {
		res, e := parseBenchRun(text, o, i+1, len(objs), &itls)
		if e != nil {
			e.File = name
			return nil, e
		}
		res.File = name
		out = append(out, res)
	}
	return out, nil
}

// prefix is what an error or warning of the run starts its message with:
// "run 3 of 7: " in a file of several runs, "" in a file of one.
func (r *BenchResult) prefix() string {
	if r.Runs > 1 {
		return fmt.Sprintf("run %d of %d: ", r.Run, r.Runs)
	}
	return ""
}

// fieldErr is an ErrField *Error about the run's field.
func (r *BenchResult) fieldErr(field, format string, args ...any) *Error {
	return &Error{File: r.File, Line: r.Line, Field: field, Err: ErrField,
		Msg: r.prefix() + fmt.Sprintf(format, args...)}
}

// Summary describes the run in one line: the harness, the setup and the
// medians, for listing the runs of a file.
func (r *BenchResult) Summary() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "run %d (line %d, %s", r.Run, r.Line, r.Harness)
	if r.Model != "" {
		fmt.Fprintf(&sb, ", %s", r.Model)
	}
	sb.WriteString("): request_rate ")
	switch {
	case math.IsInf(r.RequestRate, 1):
		sb.WriteString("inf")
	case r.RequestRate == 0:
		sb.WriteString("unknown")
	default:
		fmt.Fprintf(&sb, "%g", r.RequestRate)
	}
	if r.MaxConcurrency > 0 {
		fmt.Fprintf(&sb, ", max_concurrency %d", r.MaxConcurrency)
	}
	if r.Completed >= 0 {
		fmt.Fprintf(&sb, ", %d completed", r.Completed)
	}
	if v, ok := r.Metrics[MedianTTFT]; ok {
		fmt.Fprintf(&sb, ", median TTFT %.4g ms", v*1e3)
	}
	return sb.String()
}
