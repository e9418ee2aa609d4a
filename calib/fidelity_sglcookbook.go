// Fidelity: the SGLang cookbook's Llama 3.1 speed benchmark
// (sgl-project/sgl-cookbook @ 1e3601b, docs/autoregressive/Llama/Llama3.1.md,
// section 5.1, added 2026-01-15): SGLang 0.5.6 serving Llama-3.1-70B at TP 8
// on eight A100s, `sglang.bench_serving` random runs of 1,000 → 1,000 and
// 8,000 → 1,000 tokens at max concurrency 1, 16 and 100 (64). The page
// prints each run's result block, not its per-request lengths; the client
// draws them from NumPy's legacy generator with its default seed, so they
// are drawn again here as SGLang's sample_random_requests draws them, and
// checked against the totals the page prints. Apache-2.0: the figures are
// cited, only the algorithm is reimplemented. See fidelity_cases.go and
// calib/README.md.

package calib

import (
	"fmt"
	"sync"

	"github.com/gpufrag/gpufrag/workload"
)

// fidSGLCookbookSource is the source id of these figures in published.yaml.
const fidSGLCookbookSource = "sgl-cookbook-llama31"

// fidSGLCookbookSeed is bench_serving's --seed default (1), which the
// page's commands leave as it is: `random.seed(args.seed);
// np.random.seed(args.seed)` before the dataset is sampled.
const fidSGLCookbookSeed = 1

// fidSGLRun is one random-dataset run of SGLang's bench_serving: n
// requests of at most in and out tokens, lengths uniform from ratio × the
// maximum (at least 1).
type fidSGLRun struct {
	n, in, out int
	ratio      float64
}

// fidSGLRandomLens draws a run's prompt and output lengths as SGLang
// 0.5.6's sample_random_requests does after np.random.seed(seed): all the
// prompt lengths (randint(max(int(in × ratio), 1), in + 1, size=n)), then
// all the output lengths the same way. The prompts' token ids are drawn
// after them and change no length.
func fidSGLRandomLens(seed uint32, r fidSGLRun) (in, out []int) {
	inLo := max(int(float64(r.in)*r.ratio), 1)
	outLo := max(int(float64(r.out)*r.ratio), 1)
	return workload.SGLangRandomLengths(seed, r.n, inLo, r.in, outLo, r.out)
}

var fidSGLCookbookCache sync.Map // fidSGLRun → [2][]int

// fidSGLCookbookRequests is the run a figure names (setup.workload:
// random_input_len, random_output_len, random_range_ratio, num_prompts,
// max_concurrency, and the totals the page prints), its lengths drawn
// again from the client's seed, all due at 0 (request rate inf) for a
// closed-loop client. skip says why a figure's workload is not one of
// these runs, or that the redrawn lengths do not add up to the printed
// totals.
func fidSGLCookbookRequests(f *Figure) (reqs []workload.Request, what, skip string) {
	w := f.Setup.Workload
	if w.Dataset != "random" || w.RandomInputLen <= 0 || w.RandomOutputLen <= 0 || w.RandomRangeRatio == nil ||
		w.NumPrompts <= 0 || w.MaxConcurrency <= 0 || w.TotalInputTokens <= 0 || w.TotalOutputTokens <= 0 {
		return nil, "", "a cookbook run needs workload.dataset random, random_input_len, random_output_len, random_range_ratio, " +
			"num_prompts, max_concurrency and the printed total_input_tokens and total_output_tokens"
	}
	if r := *w.RandomRangeRatio; r < 0 || r > 1 || w.NumPrompts > 100_000 {
		return nil, "", fmt.Sprintf("a cookbook run draws at most 100,000 requests with a range ratio in [0, 1]: got %d, %v", w.NumPrompts, r)
	}
	run := fidSGLRun{n: w.NumPrompts, in: w.RandomInputLen, out: w.RandomOutputLen, ratio: *w.RandomRangeRatio}
	v, ok := fidSGLCookbookCache.Load(run)
	if !ok {
		in, out := fidSGLRandomLens(fidSGLCookbookSeed, run)
		v, _ = fidSGLCookbookCache.LoadOrStore(run, [2][]int{in, out})
	}
	lens := v.([2][]int)
	var sumIn, sumOut int
	reqs = make([]workload.Request, run.n)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("s%d", i+1), PromptTokens: lens[0][i], OutputTokens: lens[1][i], N: 1}
		sumIn += lens[0][i]
		sumOut += lens[1][i]
	}
	if sumIn != w.TotalInputTokens || sumOut != w.TotalOutputTokens {
		return nil, "", fmt.Sprintf("the lengths drawn from seed %d add up to %d prompt and %d output tokens, the page prints %d and %d",
			fidSGLCookbookSeed, sumIn, sumOut, w.TotalInputTokens, w.TotalOutputTokens)
	}
	what = fmt.Sprintf("%d requests drawn again from the client's seed (prompts uniform on [%d, %d], outputs on [%d, %d]; %d and %d tokens, as printed) "+
		"from a closed-loop client at concurrency %d", run.n, max(int(float64(run.in)*run.ratio), 1), run.in,
		max(int(float64(run.out)*run.ratio), 1), run.out, sumIn, sumOut, w.MaxConcurrency)
	return reqs, what, ""
}
