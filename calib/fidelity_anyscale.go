// Fidelity: the Anyscale continuous-batching benchmark's vLLM runs
// (anyscale/llm-continuous-batching-benchmarks @ d34cb03, the code of the
// June 2023 blog post "How continuous batching enables 23x throughput in
// LLM inference"), OPT-13B on one A100-SXM4-40GB under vLLM's eager era.
// The repository has no licence file: nothing of it is copied. Its client
// draws every length from fixed seeds, so the requests are drawn again
// here, as its benchmark_throughput.py draws them; only the algorithm is
// reimplemented (Python's Mersenne Twister and random.randint, NumPy's
// legacy RandomState.exponential). See fidelity_cases.go and
// calib/README.md.

package calib

import (
	"fmt"
	"math"
	"sync"

	"github.com/gpufrag/gpufrag/internal/pyrand"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// fidAnyscaleSource is the source id of these figures in published.yaml.
const fidAnyscaleSource = "anyscale-continuous-batching"

// fidAnyscaleSleepNs is the harness's pause before every engine step:
// launch_scripts/launch_vllm runs the engine in a thread whose loop is
// `time.sleep(0.01)`, then drain the request queue, then `server.step()`.
// CPython's sleep on Linux overshoots by some 50-100 µs (timer slack and
// the call); 60 µs is taken.
const fidAnyscaleSleepNs = 10_060_000

// fidAnyscaleSeed is random.seed(0xCADE) in benchmark_throughput.py's main.
const fidAnyscaleSeed = 0xCADE

// fidAnyscaleRun is one run of benchmark_configs/vllm_variable_size: n
// prompts of promptMean ± promptRange/2 tokens (uniform), outputs drawn from
// a capped exponential of mean respMean, redrawn above respRange.
type fidAnyscaleRun struct {
	promptMean, promptRange, n, respMean, respRange int
}

// fidAnyscaleLens draws the run's prompt and output lengths as
// benchmark_throughput.py does (gen_random_prompts_return_lens, then
// gen_random_response_lens with capped_exponential, then the cut to 2,048
// tokens a request). Every prompt token is one random.RandInt(10, 50000),
// so the draws of the outputs depend on every prompt's length. The
// outputs are as drawn: the server asks vLLM for max(len, 1) tokens with
// ignore_eos.
func fidAnyscaleLens(r fidAnyscaleRun) (in, out []int) {
	in, out, _ = fidAnyscaleDraw(r)
	return in, out
}

// fidAnyscaleDraw is fidAnyscaleLens, with the NumPy generator after the
// outputs' draws: the client's Poisson gaps (--distribution poisson,
// np.random.exponential(1/qps) after each request) come next from it.
func fidAnyscaleDraw(r fidAnyscaleRun) (in, out []int, np *pyrand.MT) {
	var py pyrand.MT
	py.SeedInt(fidAnyscaleSeed)
	low, high := r.promptMean-r.promptRange/2, r.promptMean+r.promptRange/2
	in = make([]int, r.n)
	for i := range in {
		in[i] = py.RandInt(low, high)
	}
	for _, l := range in {
		for range l {
			py.RandInt(10, 50000)
		}
	}
	np = new(pyrand.MT)
	np.InitGenrand(uint32(py.RandInt(0, 1_000_000)))
	out = make([]int, 0, r.n)
	for len(out) < r.n {
		x := int(math.RoundToEven(float64(r.respMean) * np.StandardExponential()))
		if x <= r.respRange {
			out = append(out, x)
		}
	}
	for i := range out {
		if in[i]+out[i] > 2048 {
			out[i] = 2048 - in[i]
		}
	}
	return in, out, np
}

var fidAnyscaleCache sync.Map // fidAnyscaleRun → [2][]int

// fidAnyscaleRequests is the run a figure names (setup.workload: input_len
// the prompt mean, num_prompts, output_len the exponential's mean,
// max_tokens its cap; prompts of a fixed length: the configuration's
// --random_prompt_lens_range 0), all sent at once (the client's default
// "burst": every request is created before any returns). skip says why a
// figure's workload is not one of these runs.
func fidAnyscaleRequests(f *Figure) ([]workload.Request, string, string) {
	w := f.Setup.Workload
	if w.InputLen <= 0 || w.NumPrompts <= 0 || w.OutputLen <= 0 || w.MaxTokens <= 0 || w.InputLen+1 > 2048 {
		return nil, "", "an Anyscale run needs workload.input_len, num_prompts, output_len (the exponential's mean) and max_tokens (its cap)"
	}
	// The outputs are drawn again while above the cap: a mean far above it
	// would take ever more draws (at 64 times the cap, one in 65 is kept),
	// and a run of more prompts than the client's 1,000-5,000 is not one
	// of its configs.
	if w.OutputLen > 64*w.MaxTokens || w.NumPrompts > 100_000 {
		return nil, "", fmt.Sprintf("an Anyscale run draws at most 100,000 outputs with a mean at most 64 times the cap: got %d prompts, mean %d, cap %d", w.NumPrompts, w.OutputLen, w.MaxTokens)
	}
	run := fidAnyscaleRun{promptMean: w.InputLen, n: w.NumPrompts, respMean: w.OutputLen, respRange: w.MaxTokens}
	v, ok := fidAnyscaleCache.Load(run)
	if !ok {
		in, out := fidAnyscaleLens(run)
		v, _ = fidAnyscaleCache.LoadOrStore(run, [2][]int{in, out})
	}
	lens := v.([2][]int)
	reqs := make([]workload.Request, run.n)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("a%d", i+1), PromptTokens: lens[0][i], OutputTokens: max(lens[1][i], 1), N: 1}
	}
	what := fmt.Sprintf("%d requests of %d prompt tokens, outputs drawn again from the client's seeds (capped exponential, mean %d, at most %d), all at once",
		run.n, run.promptMean, run.respMean, run.respRange)
	return reqs, what, ""
}

// fidAnyscaleSleep adds the harness's pause before every step to a
// run's span, and so to its throughput: exact for these runs, whose
// requests are all sent at 0, so that their steps do not depend on their
// times and the pauses only shift them. The client's own figure is
// (prompt + output tokens) ÷ span; output_throughput is its output part.
func fidAnyscaleSleep(metric string, pick fidPicker) (fidPicker, string, string) {
	span := func(r *sim.Result) float64 { return r.SimulatedSeconds + float64(r.Steps)*fidAnyscaleSleepNs/1e9 }
	note := fmt.Sprintf("the run's span plus the harness's %.2f ms sleep before each of its steps", fidAnyscaleSleepNs/1e6)
	switch metric {
	case "duration":
		return func(r *sim.Result) (float64, bool) {
			_, ok := pick(r)
			return span(r), ok
		}, note, ""
	case "output_throughput":
		return func(r *sim.Result) (float64, bool) {
			if _, ok := pick(r); !ok || span(r) <= 0 {
				return 0, false
			}
			return float64(r.OutputTokens) / span(r), true
		}, "output tokens over " + note, ""
	}
	return nil, "", fmt.Sprintf("metric %s: only the run's span and output throughput are read from the Anyscale runs here", metric)
}
