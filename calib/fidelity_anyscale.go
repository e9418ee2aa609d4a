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
	"math/bits"
	"sync"

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
// tokens a request). Every prompt token is one random.randint(10, 50000),
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
func fidAnyscaleDraw(r fidAnyscaleRun) (in, out []int, np *pyMT) {
	var py pyMT
	py.seedInt(fidAnyscaleSeed)
	low, high := r.promptMean-r.promptRange/2, r.promptMean+r.promptRange/2
	in = make([]int, r.n)
	for i := range in {
		in[i] = py.randint(low, high)
	}
	for _, l := range in {
		for range l {
			py.randint(10, 50000)
		}
	}
	np = new(pyMT)
	np.initGenrand(uint32(py.randint(0, 1_000_000)))
	out = make([]int, 0, r.n)
	for len(out) < r.n {
		x := int(math.RoundToEven(float64(r.respMean) * np.standardExponential()))
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

// pyMT is the Mersenne Twister MT19937 as CPython's random module and
// NumPy's legacy RandomState run it.
type pyMT struct {
	mt [624]uint32
	i  int
}

// initGenrand is MT19937's init_genrand: NumPy's RandomState.seed(s) for
// an integer s (mt19937_seed).
func (m *pyMT) initGenrand(s uint32) {
	m.mt[0] = s
	for i := 1; i < 624; i++ {
		m.mt[i] = 1812433253*(m.mt[i-1]^(m.mt[i-1]>>30)) + uint32(i)
	}
	m.i = 624
}

// seedInt is CPython's random.seed(a) for a non-negative int a below
// 2^32: init_by_array over a's 32-bit words (here one).
func (m *pyMT) seedInt(a uint32) {
	key := []uint32{a}
	m.initGenrand(19650218)
	i, j := 1, 0
	for k := max(624, len(key)); k > 0; k-- {
		m.mt[i] = (m.mt[i] ^ ((m.mt[i-1] ^ (m.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= 624 {
			m.mt[0] = m.mt[623]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := 623; k > 0; k-- {
		m.mt[i] = (m.mt[i] ^ ((m.mt[i-1] ^ (m.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= 624 {
			m.mt[0] = m.mt[623]
			i = 1
		}
	}
	m.mt[0] = 0x80000000
	m.i = 624
}

// next is genrand_uint32.
func (m *pyMT) next() uint32 {
	if m.i >= 624 {
		for k := range 624 {
			y := m.mt[k]&0x80000000 | m.mt[(k+1)%624]&0x7fffffff
			v := m.mt[(k+397)%624] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			m.mt[k] = v
		}
		m.i = 0
	}
	y := m.mt[m.i]
	m.i++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// randint is random.randint(a, b) (b − a + 1 < 2^32): _randbelow by
// getrandbits(k) with k the bit length of the width, redrawn while out of
// range (CPython 3.2 on).
func (m *pyMT) randint(a, b int) int {
	n := uint32(b - a + 1)
	k := bits.Len32(n)
	for {
		r := m.next() >> (32 - k)
		if r < n {
			return a + int(r)
		}
	}
}

// random is random.random() and NumPy's legacy random_sample: 53 bits
// from two words.
func (m *pyMT) random() float64 {
	a, b := m.next()>>5, m.next()>>6
	return (float64(a)*67108864 + float64(b)) / 9007199254740992
}

// standardExponential is NumPy's legacy_standard_exponential: −log(1 − U).
func (m *pyMT) standardExponential() float64 {
	return -math.Log(1 - m.random())
}
