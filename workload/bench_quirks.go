// Known quirks of benchmark result files, found in a run's per-request
// arrays and reported as warnings. See BenchResult.Warnings.

package workload

import (
	"fmt"
)

// chunkedRatio is how far below one gap per token the file's itls must be
// to say that stream chunks carried several tokens: below 0.9 gaps per
// token after the first (vLLM v0.5.4's chunks of about ten tokens give
// 0.1; v0.8.3's files give exactly 1.0), median_itl_ms measures chunks.
const chunkedRatio = 0.9

func (r *BenchResult) warn(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

// quirks adds the warnings about the run's known quirks: failed requests,
// zero-length outputs, stream chunks of several tokens, and counts that
// disagree with the arrays.
func (r *BenchResult) quirks() {
	n := len(r.Requests)
	if n == 0 {
		if r.Failed > 0 {
			r.warn("%d requests failed (failed), and the file has no per-request errors saying which", r.Failed)
		}
		return
	}
	var (
		failed, firstFailed    int
		zero, firstZero        int
		gaps, tokens, short    int
		succeeded, multiTokens int
	)
	for i, q := range r.Requests {
		if q.Failed() {
			if failed++; failed == 1 {
				firstFailed = i
			}
			continue
		}
		succeeded++
		if r.Detail&DetailLens == 0 {
			continue
		}
		if q.OutputTokens == 0 {
			if zero++; zero == 1 {
				firstZero = i
			}
		}
		if r.Detail&DetailITLs != 0 && q.OutputTokens > 1 {
			multiTokens++
			gaps += len(q.ITLs)
			tokens += q.OutputTokens - 1
			if len(q.ITLs) < q.OutputTokens-1 {
				short++
			}
		}
	}
	if failed > 0 {
		r.warn("%d of %d requests failed (the first, request %d: %s); the file's metrics leave them out, "+
			"and the trace keeps them as prefill-only requests, as the client sent them", failed, n, firstFailed+1, r.Requests[firstFailed].Err)
	} else if r.Detail&DetailErrors == 0 && r.Completed >= 0 && r.Completed < n {
		r.warn("completed is %d for %d requests, and the file has no per-request errors saying which failed", r.Completed, n)
	}
	if zero > 0 {
		r.warn("%d of %d requests that succeeded have output_lens 0 (the first, request %d): their streams carried no text "+
			"(a model that ended its turn at once, or a tokenizer or streaming problem); they are simulated as prefill-only, "+
			"and the client recorded a TTFT of 0 for each, so the file's TTFT percentiles are taken over that many zeros "+
			"(calibrate leaves its TTFT out)", zero, succeeded, firstZero+1)
	}
	switch {
	case tokens == 0:
	case gaps == 0:
		r.warn("itls is empty for every request of more than one output token: the stream came in one chunk " +
			"(streaming off?), so the file's ITL and TPOT figures do not measure decode steps")
	case float64(gaps) < chunkedRatio*float64(tokens):
		r.warn("itls holds %d gaps for %d tokens after the first (one per %.1f tokens): stream chunks carried several tokens "+
			"(as vLLM v0.5.4's did), so median_itl_ms and mean_itl_ms measure chunks, not tokens; compare TPOT instead",
			gaps, tokens, float64(tokens)/float64(gaps))
	case short > 0:
		r.warn("%d of %d requests have fewer itls than output_lens − 1 (a stream chunk carried two or more tokens); "+
			"the file's ITL figures are slightly high", short, multiTokens)
	case gaps > tokens:
		r.warn("itls holds %d gaps for %d tokens after the first: more chunks than tokens, so output_lens undercounts "+
			"what was streamed (retokenized text?)", gaps, tokens)
	}
	if r.NumPrompts > 0 && r.NumPrompts != n {
		r.warn("num_prompts is %d, but the per-request arrays have %d entries; the arrays are what was sent", r.NumPrompts, n)
	}
	if r.Detail&DetailErrors != 0 && r.Completed >= 0 && r.Completed != succeeded {
		r.warn("completed is %d, but %d of the %d requests have no error", r.Completed, succeeded, n)
	}
}
