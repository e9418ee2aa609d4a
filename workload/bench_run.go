// The fields of one benchmark run: which keys vLLM and SGLang write, their
// types and bounds. See ReadBench.

package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// benchRaw holds the keys of a run this package reads, undecoded. vLLM's
// benchmark_serving.py (v0.5-v0.9) and vllm bench serve write date,
// backend, model_id, tokenizer_id, num_prompts, request_rate ("inf" for
// infinity), burstiness, max_concurrency, then duration, completed,
// (failed), totals, throughputs, the per-request arrays (with
// --save-detailed in newer versions; always in v0.8.3) and the metrics.
// SGLang's bench_serving writes backend, dataset_name, request_rate
// (Infinity), max_concurrency, sharegpt_output_len, random_input_len,
// random_output_len, random_range_ratio, duration, completed, totals and
// metrics, and the arrays with --output-details. The server's settings that
// vllm bench sweep writes beside a run's keys, or --metadata KEY=VALUE adds,
// are kept under the serve arguments' names (ServerKeys). Other keys
// (generated_texts, other metadata) are skipped without being kept. encoding/json matches keys
// case-insensitively; the clients write them in lower case.
type benchRaw struct {
	Date              json.RawMessage `json:"date"`
	Backend           json.RawMessage `json:"backend"`
	EndpointType      json.RawMessage `json:"endpoint_type"`
	ModelID           json.RawMessage `json:"model_id"`
	TokenizerID       json.RawMessage `json:"tokenizer_id"`
	NumPrompts        json.RawMessage `json:"num_prompts"`
	RequestRate       json.RawMessage `json:"request_rate"`
	Burstiness        json.RawMessage `json:"burstiness"`
	MaxConcurrency    json.RawMessage `json:"max_concurrency"`
	Seed              json.RawMessage `json:"seed"`
	DatasetName       json.RawMessage `json:"dataset_name"`
	RandomInputLen    json.RawMessage `json:"random_input_len"`
	RandomOutputLen   json.RawMessage `json:"random_output_len"`
	RandomRangeRatio  json.RawMessage `json:"random_range_ratio"`
	Completed         json.RawMessage `json:"completed"`
	Failed            json.RawMessage `json:"failed"`
	TotalInputTokens  json.RawMessage `json:"total_input_tokens"`
	TotalOutputTokens json.RawMessage `json:"total_output_tokens"`
	Retokenized       json.RawMessage `json:"total_output_tokens_retokenized"`

	InputLens  json.RawMessage `json:"input_lens"`
	OutputLens json.RawMessage `json:"output_lens"`
	TTFTs      json.RawMessage `json:"ttfts"`
	ITLs       json.RawMessage `json:"itls"`
	Latencies  json.RawMessage `json:"latencies"`
	StartTimes json.RawMessage `json:"start_times"`
	QueueTimes json.RawMessage `json:"queue_times"`
	Errors     json.RawMessage `json:"errors"`

	// The metrics, each under every key benchMetricSpecs lists.
	MedianTTFT json.RawMessage `json:"median_ttft_ms"`
	MeanTTFT   json.RawMessage `json:"mean_ttft_ms"`
	P99TTFT    json.RawMessage `json:"p99_ttft_ms"`
	MedianTPOT json.RawMessage `json:"median_tpot_ms"`
	MeanTPOT   json.RawMessage `json:"mean_tpot_ms"`
	P99TPOT    json.RawMessage `json:"p99_tpot_ms"`
	MedianITL  json.RawMessage `json:"median_itl_ms"`
	MeanITL    json.RawMessage `json:"mean_itl_ms"`
	P99ITL     json.RawMessage `json:"p99_itl_ms"`
	MedianE2EL json.RawMessage `json:"median_e2el_ms"`
	MeanE2EL   json.RawMessage `json:"mean_e2el_ms"`
	P99E2EL    json.RawMessage `json:"p99_e2el_ms"`
	MedianE2E  json.RawMessage `json:"median_e2e_latency_ms"`
	MeanE2E    json.RawMessage `json:"mean_e2e_latency_ms"`
	P99E2E     json.RawMessage `json:"p99_e2e_latency_ms"`
	OutputTput json.RawMessage `json:"output_throughput"`
	RequestTpt json.RawMessage `json:"request_throughput"`
	Duration   json.RawMessage `json:"duration"`

	// The server's settings (ServerKeys), in that order.
	TensorParallelSize   json.RawMessage `json:"tensor_parallel_size"`
	DType                json.RawMessage `json:"dtype"`
	Quantization         json.RawMessage `json:"quantization"`
	KVCacheDType         json.RawMessage `json:"kv_cache_dtype"`
	MaxModelLen          json.RawMessage `json:"max_model_len"`
	MaxNumSeqs           json.RawMessage `json:"max_num_seqs"`
	MaxNumBatchedTokens  json.RawMessage `json:"max_num_batched_tokens"`
	EnableChunkedPrefill json.RawMessage `json:"enable_chunked_prefill"`
	EnablePrefixCaching  json.RawMessage `json:"enable_prefix_caching"`
	GPUMemoryUtilization json.RawMessage `json:"gpu_memory_utilization"`

	// AccelMark's result.json, recognised to be refused with a reason.
	SchemaVersion json.RawMessage `json:"schema_version"`
	SuiteID       json.RawMessage `json:"suite_id"`
}

// ServerKeys are the keys of the server's settings a run's object may
// hold, vLLM's serve arguments in their Python names: vllm bench sweep
// writes the serve parameters it varies beside each run's keys
// (max_num_seqs), and vllm bench serve --metadata KEY=VALUE adds any key
// (tensor_parallel_size=8). BenchResult.Server holds those a run has.
func ServerKeys() []string {
	return []string{"tensor_parallel_size", "dtype", "quantization", "kv_cache_dtype", "max_model_len", "max_num_seqs",
		"max_num_batched_tokens", "enable_chunked_prefill", "enable_prefix_caching", "gpu_memory_utilization"}
}

// serverRaw returns the raw values of ServerKeys, in that order.
func (b *benchRaw) serverRaw() []json.RawMessage {
	return []json.RawMessage{b.TensorParallelSize, b.DType, b.Quantization, b.KVCacheDType, b.MaxModelLen, b.MaxNumSeqs,
		b.MaxNumBatchedTokens, b.EnableChunkedPrefill, b.EnablePrefixCaching, b.GPUMemoryUtilization}
}

// metricRaw returns the raw value of metric m and the key it was under.
func (b *benchRaw) metricRaw(m BenchMetric) (json.RawMessage, string) {
	vals := map[BenchMetric][]json.RawMessage{
		MedianTTFT: {b.MedianTTFT}, MeanTTFT: {b.MeanTTFT}, P99TTFT: {b.P99TTFT},
		MedianTPOT: {b.MedianTPOT}, MeanTPOT: {b.MeanTPOT}, P99TPOT: {b.P99TPOT},
		MedianITL: {b.MedianITL}, MeanITL: {b.MeanITL}, P99ITL: {b.P99ITL},
		MedianE2E: {b.MedianE2EL, b.MedianE2E}, MeanE2E: {b.MeanE2EL, b.MeanE2E}, P99E2E: {b.P99E2EL, b.P99E2E},
		OutputThroughput: {b.OutputTput}, RequestThroughput: {b.RequestTpt}, Duration: {b.Duration},
	}[m]
	for i, v := range vals {
		if v != nil {
			return v, benchMetricSpecs[m].keys[i]
		}
	}
	return nil, benchMetricSpecs[m].keys[0]
}

// known reports whether the object has any key a benchmark client writes.
func (b *benchRaw) known() bool {
	for _, v := range []json.RawMessage{b.RequestRate, b.Completed, b.Duration, b.InputLens, b.OutputLens,
		b.MedianTTFT, b.OutputTput, b.NumPrompts, b.Backend} {
		if v != nil {
			return true
		}
	}
	return false
}

// harness tells which client wrote the run: keys only vLLM writes
// (burstiness, tokenizer_id, num_prompts) make it vLLM, keys only SGLang
// writes (dataset_name, random_*, total_output_tokens_retokenized) SGLang;
// a run with neither is read as vLLM's.
func (b *benchRaw) harness() string {
	if b.Burstiness != nil || b.TokenizerID != nil || b.NumPrompts != nil {
		return HarnessVLLM
	}
	if b.DatasetName != nil || b.RandomInputLen != nil || b.RandomRangeRatio != nil || b.Retokenized != nil {
		return HarnessSGLang
	}
	return HarnessVLLM
}

// The clients' default seeds (vLLM's --seed 0, SGLang's --seed 1), used when
// a file does not record its seed.
const (
	vllmDefaultSeed   = 0
	sglangDefaultSeed = 1
)

// Bounds on burstiness: vLLM asserts it is positive; outside [1e-4, 1e4]
// (a coefficient of variation of 100 to 0.01, the bounds of Gamma) float64
// sampling degenerates (nearly every gap zero, or all gaps equal, which
// +Inf states exactly).
const (
	minBurstiness = 1e-4
	maxBurstiness = 1e4
)

// parseBenchRun decodes the object o of text as run number run of runs,
// adding its inter-token gaps to *itls.
func parseBenchRun(text []byte, o benchObject, run, runs int, itls *int) (*BenchResult, *Error) {
	var b benchRaw
	if err := json.Unmarshal(text[o.start:o.end], &b); err != nil {
		e := syntaxErr(text, o, err)
		if runs > 1 {
			e.Msg = fmt.Sprintf("run %d of %d: %s", run, runs, e.Msg)
		}
		return nil, e
	}
	r := &BenchResult{Run: run, Runs: runs, Line: o.line, Completed: -1, Failed: -1,
		TotalInputTokens: -1, TotalOutputTokens: -1, Metrics: map[BenchMetric]float64{}}
	at := func(e *Error) *Error { // the run's line and prefix on an entry's error
		e.Line = o.line
		e.Msg = r.prefix() + e.Msg
		return e
	}
	if b.SchemaVersion != nil && b.SuiteID != nil {
		return nil, at(&Error{Err: ErrFormat, Msg: "an AccelMark result.json (schema_version, suite_id), a different harness: " +
			"it records p50/p90/p99 per target QPS, but no per-request lengths and no arrival process of its own, " +
			"so it cannot be replayed as a trace: replay its workload from a JSONL trace of the dataset's lengths, and compare " +
			"with the file's figures by hand (docs/fidelity.md does so for AccelMark's sharegpt_standard_v1 runs)"})
	}
	if !b.known() {
		return nil, at(&Error{Err: ErrFormat, Msg: "a JSON object with none of the keys a benchmark client writes " +
			"(request_rate, completed, duration, input_lens, median_ttft_ms, ...): want a vLLM --save-result " +
			"file or SGLang bench_serving JSONL"})
	}
	r.Harness = b.harness()
	var e *Error
	for _, s := range []struct {
		field string
		raw   json.RawMessage
		dst   *string
	}{{"date", b.Date, &r.Date}, {"backend", b.Backend, &r.Backend}, {"model_id", b.ModelID, &r.Model},
		{"tokenizer_id", b.TokenizerID, &r.Tokenizer}, {"dataset_name", b.DatasetName, &r.Dataset}} {
		s2, _, good := benchString(s.raw)
		if !good {
			return nil, at(fieldErr(s.field, "must be a string or null (got %s)", describeValue(s.raw)))
		}
		*s.dst = clipLabel(s2)
	}
	if r.Backend == "" {
		if s, _, good := benchString(b.EndpointType); good {
			r.Backend = clipLabel(s)
		}
	}
	if e = r.setup(&b); e != nil {
		return nil, at(e)
	}
	if e = r.counts(&b); e != nil {
		return nil, at(e)
	}
	for _, m := range BenchMetrics() {
		raw, key := b.metricRaw(m)
		v, ok, good := benchFloat(raw)
		switch {
		case !good:
			return nil, at(fieldErr(key, "must be a number or null (got %s)", describeValue(raw)))
		case !ok:
		case math.IsNaN(v):
			r.warn("%s is NaN: the client measured nothing for it; it is left out", key)
		case math.IsInf(v, 0):
			return nil, at(fieldErr(key, "must be finite (got %s)", describeValue(raw)))
		case v < 0 || v > maxBenchMetric:
			return nil, at(fieldErr(key, "must be from 0 to %g, a time or a rate a client measured (got %s)", float64(maxBenchMetric), describeValue(raw)))
		default:
			if benchMetricSpecs[m].ms {
				v /= 1e3
			}
			r.Metrics[m] = v
		}
	}
	if e = r.perRequest(&b, itls); e != nil {
		return nil, at(e)
	}
	r.quirks()
	return r, nil
}

// maxBenchMetric bounds a run's summary figure in the file's own unit
// (milliseconds, seconds, tokens or requests a second): 10^15 is some 30
// years in milliseconds, more than any client measures.
const maxBenchMetric = 1e15

// clipLabel keeps a label within MaxIDBytes, as every id of a trace.
func clipLabel(s string) string {
	if len(s) > MaxIDBytes {
		return s[:MaxIDBytes]
	}
	return s
}

// setup reads how the client sent its requests.
func (r *BenchResult) setup(b *benchRaw) *Error {
	v, ok, good := benchFloat(b.RequestRate)
	if !good || ok && (math.IsNaN(v) || !(v > 0)) {
		return fieldErr("request_rate", "must be a positive number of requests per second or \"inf\" (got %s)", describeValue(b.RequestRate))
	}
	r.RequestRate = v
	r.Burstiness = 1
	v, ok, good = benchFloat(b.Burstiness)
	if !good || ok && !(v >= minBurstiness && v <= maxBurstiness || math.IsInf(v, 1)) {
		return fieldErr("burstiness", "must be from %g to %g, or inf for constant gaps (got %s)", minBurstiness, maxBurstiness, describeValue(b.Burstiness))
	}
	if ok {
		r.Burstiness, r.BurstinessGiven = v, true
	}
	n, _, good := benchInt(b.MaxConcurrency, int64(requestLimit))
	if !good || n == 0 && !isNull(b.MaxConcurrency) {
		return fieldErr("max_concurrency", "must be a positive integer up to %d or null (got %s)", requestLimit, describeValue(b.MaxConcurrency))
	}
	r.MaxConcurrency = int(n)
	n, _, good = benchInt(b.NumPrompts, int64(requestLimit))
	if !good {
		return fieldErr("num_prompts", "must be an integer from 0 to %d (got %s)", requestLimit, describeValue(b.NumPrompts))
	}
	r.NumPrompts = int(n)
	r.Seed = vllmDefaultSeed
	if r.Harness == HarnessSGLang {
		r.Seed = sglangDefaultSeed
	}
	if !isNull(b.Seed) {
		// vLLM's --metadata seed=N writes a string; accept a number too.
		t := strings.Trim(strings.TrimSpace(string(b.Seed)), `"`)
		s, err := strconv.ParseUint(t, 10, 64)
		if err != nil {
			return fieldErr("seed", "must be a non-negative integer (got %s)", describeValue(b.Seed))
		}
		r.Seed, r.SeedGiven = s, true
	}
	for i, raw := range b.serverRaw() {
		v, ok, good := benchScalar(raw)
		if !good {
			return fieldErr(ServerKeys()[i], "must be a string, number, boolean or null (got %s)", describeValue(raw))
		}
		if ok {
			r.Server = append(r.Server, BenchArg{Key: ServerKeys()[i], Value: clipLabel(v)})
		}
	}
	if b.RandomInputLen != nil || b.RandomOutputLen != nil || b.RandomRangeRatio != nil {
		rd := &BenchRandom{}
		in, ok, good := benchInt(b.RandomInputLen, MaxTokens)
		if !good {
			return fieldErr("random_input_len", "must be an integer from 0 to %d or null (got %s)", MaxTokens, describeValue(b.RandomInputLen))
		}
		out, ok2, good := benchInt(b.RandomOutputLen, MaxTokens)
		if !good {
			return fieldErr("random_output_len", "must be an integer from 0 to %d or null (got %s)", MaxTokens, describeValue(b.RandomOutputLen))
		}
		ratio, ok3, good := benchFloat(b.RandomRangeRatio)
		if !good || ok3 && !(ratio >= 0 && ratio <= 1) {
			return fieldErr("random_range_ratio", "must be a number from 0 to 1 or null (got %s)", describeValue(b.RandomRangeRatio))
		}
		if ok || ok2 || ok3 {
			rd.InputLen, rd.OutputLen, rd.RangeRatio = int(in), int(out), ratio
			r.Random = rd
		}
	}
	return nil
}

// counts reads the file's request and token counts.
func (r *BenchResult) counts(b *benchRaw) *Error {
	for _, c := range []struct {
		field string
		raw   json.RawMessage
		max   int64
		dst   *int64
	}{{"completed", b.Completed, int64(requestLimit), nil}, {"failed", b.Failed, int64(requestLimit), nil},
		{"total_input_tokens", b.TotalInputTokens, math.MaxInt64 / 2, &r.TotalInputTokens},
		{"total_output_tokens", b.TotalOutputTokens, math.MaxInt64 / 2, &r.TotalOutputTokens}} {
		n, ok, good := benchInt(c.raw, c.max)
		if !good {
			return fieldErr(c.field, "must be an integer from 0 to %d or null (got %s)", c.max, describeValue(c.raw))
		}
		if !ok {
			continue
		}
		switch c.field {
		case "completed":
			r.Completed = int(n)
		case "failed":
			r.Failed = int(n)
		default:
			*c.dst = n
		}
	}
	return nil
}

// perRequest reads the per-request arrays, which must all have one entry
// per request.
func (r *BenchResult) perRequest(b *benchRaw, itls *int) *Error {
	var (
		n     = -1
		first string
	)
	same := func(field string, k int) *Error {
		if n < 0 {
			n, first = k, field
			r.Requests = make([]BenchRequest, n)
			return nil
		}
		if k != n {
			return fieldErr(field, "has %d entries, but %s has %d (one per request in each)", k, first, n)
		}
		return nil
	}
	if !isNull(b.InputLens) || !isNull(b.OutputLens) {
		if isNull(b.InputLens) != isNull(b.OutputLens) {
			missing, has := "input_lens", "output_lens"
			if isNull(b.OutputLens) {
				missing, has = has, missing
			}
			return fieldErr(missing, "missing, but the run has %s (the client writes both)", has)
		}
		in, e := intArray("input_lens", b.InputLens)
		if e != nil {
			return e
		}
		out, e := intArray("output_lens", b.OutputLens)
		if e != nil {
			return e
		}
		if e := same("input_lens", len(in)); e != nil {
			return e
		}
		if e := same("output_lens", len(out)); e != nil {
			return e
		}
		for i := range r.Requests {
			r.Requests[i].InputTokens, r.Requests[i].OutputTokens = in[i], out[i]
		}
		r.Detail |= DetailLens
	}
	for _, a := range []struct {
		field  string
		raw    json.RawMessage
		flag   BenchDetail
		signed bool
		set    func(q *BenchRequest, v float64)
	}{
		{"ttfts", b.TTFTs, DetailTTFTs, false, func(q *BenchRequest, v float64) { q.TTFT = v }},
		{"latencies", b.Latencies, DetailLatencies, false, func(q *BenchRequest, v float64) { q.Latency = v }},
		{"start_times", b.StartTimes, DetailStartTimes, true, func(q *BenchRequest, v float64) { q.Start = v }},
		{"queue_times", b.QueueTimes, DetailQueueTimes, true, func(q *BenchRequest, v float64) { q.Queue = v }},
	} {
		if isNull(a.raw) {
			continue
		}
		vs, e := floatArray(a.field, a.raw, a.signed)
		if e != nil {
			return e
		}
		if e := same(a.field, len(vs)); e != nil {
			return e
		}
		for i, v := range vs {
			a.set(&r.Requests[i], v)
		}
		r.Detail |= a.flag
	}
	if !isNull(b.ITLs) {
		gaps, e := itlArrays("itls", b.ITLs, itls)
		if e != nil {
			return e
		}
		if e := same("itls", len(gaps)); e != nil {
			return e
		}
		for i, g := range gaps {
			r.Requests[i].ITLs = g
		}
		r.Detail |= DetailITLs
	}
	if !isNull(b.Errors) {
		errs, e := errorArray("errors", b.Errors)
		if e != nil {
			return e
		}
		if e := same("errors", len(errs)); e != nil {
			return e
		}
		for i, s := range errs {
			r.Requests[i].Err = s
		}
		r.Detail |= DetailErrors
	}
	if r.Detail == 0 {
		r.Requests = nil
	}
	return nil
}
