// Fidelity: AccelMark's online and interactive runs of its
// sharegpt_standard_v1 prompts (suites A, B and C), replayed with the
// prompts' lengths, which the result files do not hold: the dataset's
// input_tokens, cited here from FreedomIntelligence/AccelMark @ 5797fc4,
// datasets/sharegpt_standard_v1/requests.jsonl (the first 300 of its 500
// requests; CC BY 4.0 prompts, only their token counts are copied). See
// fidelity_cases.go.

package calib

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/gpufrag/gpufrag/workload"
)

// fidAccelMarkIn is input_tokens of requests 0 to 299, in the file's order
// (mean 239.6, median 203, max 592): the raw prompt, before the chat
// template.
var fidAccelMarkIn = []int{
	395, 342, 401, 85, 332, 543, 78, 66, 249, 87, 289, 108, 452, 147, 117, 355, 163, 213, 305, 523, 74, 95, 90, 81, 156,
	135, 428, 312, 113, 364, 199, 246, 79, 70, 69, 446, 84, 90, 164, 479, 415, 99, 238, 185, 216, 198, 405, 306, 264, 112,
	188, 92, 260, 70, 403, 592, 74, 274, 188, 167, 311, 146, 262, 405, 169, 253, 575, 287, 66, 478, 116, 200, 565, 519, 413,
	77, 266, 380, 180, 245, 403, 158, 95, 97, 220, 226, 161, 107, 74, 361, 115, 171, 189, 368, 535, 478, 180, 382, 470, 71,
	160, 309, 218, 76, 65, 107, 66, 111, 339, 377, 69, 467, 97, 173, 153, 79, 92, 203, 486, 441, 287, 86, 69, 368, 320,
	405, 67, 412, 396, 356, 96, 106, 125, 351, 287, 161, 104, 166, 90, 582, 112, 183, 217, 241, 309, 188, 423, 136, 77, 70,
	350, 370, 71, 371, 287, 73, 332, 106, 166, 342, 347, 287, 260, 400, 95, 81, 181, 234, 557, 89, 72, 393, 85, 230, 241,
	361, 74, 121, 216, 212, 166, 584, 364, 348, 218, 346, 253, 198, 143, 240, 360, 87, 465, 338, 106, 89, 189, 547, 92, 107,
	126, 86, 67, 391, 281, 351, 248, 119, 66, 501, 102, 299, 439, 329, 203, 99, 240, 230, 577, 161, 105, 130, 474, 109, 396,
	67, 84, 72, 490, 461, 144, 102, 70, 104, 488, 387, 266, 110, 194, 87, 438, 85, 194, 322, 65, 403, 380, 240, 233, 441,
	215, 499, 216, 360, 64, 377, 578, 468, 80, 174, 244, 88, 96, 195, 549, 120, 391, 72, 299, 68, 255, 102, 391, 69, 198,
	401, 436, 513, 122, 340, 543, 164, 65, 90, 173, 99, 74, 173, 234, 136, 126, 564, 237, 323, 326, 396, 92, 98, 80, 191,
}

// fidAccelMark* describe what the runs do that the files do not record:
// the chat template's tokens around each prompt (Llama 3's user and
// assistant headers: 12 tokens, its default system text aside), the
// outputs (temperature 0 up to max_tokens 512, stopping at EOS: drawn as
// round(exp(N(ln 310, 0.6²))) and cut at 512, a median of 310 tokens as the
// dataset's README gives for its answers; the offline runs' output tokens
// over their requests put the mean near 344) and the seed of those draws
// and of the Poisson arrivals (the client's own, random.Random(42) in
// Python, are reproduced behind fidAccelMarkRunner.clientArrivals, which is
// on, so the replay's own arrivals are drawn but not used:
// fidelity_accelmark_client.go).
const (
	fidAccelMarkTemplate  = 12
	fidAccelMarkOutMedian = 310
	fidAccelMarkOutSigma  = 0.6
	fidAccelMarkMaxTokens = 512
	fidAccelMarkSeed      = 24
	// fidAccelMarkSGLangStream is the SGLang runner's max_new_tokens when it
	// streams (online runs): it lowers any larger max_tokens to 224.
	fidAccelMarkSGLangStream = 224
)

// fidAccelMarkRunner says which of the runners' own choices the replay
// follows, each behind its own switch so that they can be screened apart
// (docs/calibrate.md, "Issue 24, tenth session"). Every one is read from
// AccelMark's runner and load-generator code (FreedomIntelligence/AccelMark
// at a2ec8f6, the revision of the SGLang and vLLM 0.20.1 figures), not
// fitted.
type fidAccelMarkRunnerOpts struct {
	// allPrompts replays every prompt of an online run (the 300 the
	// client sends, loadgen/loadgen.py _run_online_async), not the first
	// fidAccelMarkOnline: at 25-100 req/s the run's second half adds the
	// load its medians see.
	allPrompts bool
	// sglangSeqs lets SGLang run up to fidAccelMarkSGLangRunning requests
	// (its max_running_requests: min(max_total_num_tokens ÷ 2, the request
	// pool), never below 2,048 here), not sim.DefaultConfig's 256.
	sglangSeqs bool
	// sglangMem gives SGLang the runner's mem_fraction_static 0.88
	// (runners/nvidia_sglang_c43a8309/runner.py, load_model) as the
	// engine's share of GPU memory, not sim.DefaultConfig's 0.9.
	sglangMem bool
	// vllmLimits runs vLLM 0.20.1 at its AsyncLLMEngine defaults, 128
	// sequences and 2,048 batched tokens: the runner builds the engine
	// with AsyncEngineArgs that carry neither max_num_seqs nor
	// max_num_batched_tokens (runners/nvidia_vllm020_0f6c56e4/runner.py,
	// load_model), and V1 defaults them for an ENGINE_CONTEXT engine.
	vllmLimits bool
	// coldEvicted replays an online run cold where the KV pool cannot
	// hold a whole run's prompts and outputs: the client sends the same
	// prompts in the same order in every run, and a least-recently-used
	// cache under that cyclic order evicts every prompt before its turn
	// comes again (the RTX 4090's).
	coldEvicted bool
	// vllmWarm replays vLLM 0.20.1's online runs warm where the pool holds
	// a run: V1's prefix caching is on by default and the runner leaves it
	// on, as SGLang's radix cache is on.
	vllmWarm bool
	// clientArrivals replays an online run at the client's own arrival
	// times, random.Random(42)'s expovariate draws in the order the client
	// makes them (fidAccelMarkClientArrivals), not the replay's own
	// Poisson draws: the first run at the figure's rate.
	clientArrivals bool
	// allRuns replays every run the figure's medians pool (num_runs, 3;
	// loadgen.py pools the TTFTs and TPOTs of all runs at a rate before
	// np.percentile), each at the client's arrivals for that run, one
	// after the other: the client starts a run when the last one has
	// finished. The same prompt has the same output in every run
	// (temperature 0). It needs clientArrivals.
	allRuns bool
}

// fidAccelMarkRunner is the replay's choice of each switch: the runs as
// the client and the runners ran them. The client's own arrivals for each
// of the runs its medians pool, all their prompts, SGLang's
// running-request cap and memory share, vLLM 0.20.1's engine limits and
// warm prefix cache are on. coldEvicted is off: it reasons that a pool
// which cannot hold a run's prompts and outputs has evicted each prompt
// before its turn (SGLang's radix cache inserts a finished request's
// prompt and output as one path and evicts whole least-recently-used
// leaves), but the outputs it counts are drawn, not recorded, and the one
// pool it would turn cold that the sim otherwise starts warm, the RTX
// 4090's FP8 (107,664 tokens against a run's 75,486 of prompts and
// 137,188 with outputs), measured TTFTs of 41-54 ms from 5 to 50 req/s:
// cold, 50 req/s of its prompts (252 tokens on average with the template)
// is about 200 TFLOP/s of Llama-3-8B prefill, more than SGLang's FP8 GEMMs
// sustain on the card (0.51 of its 330 TFLOP/s, 168: the kernel table of
// sim.AdaFP8ComputeEffMax's comment) before any decode step, so its
// prompts were found cached. Screened on (docs/calibrate.md, "Issue 24,
// fifteenth session"), that figure came out 448.5% high held out. With coldEvicted off the
// first run starts with the prompts cached as far as the pool holds them
// (Config.WarmPrompts caches prompts, not outputs) and the sim's own
// least-recently-used prefix cache decides what the later runs find.
// How a benchmark is replayed is read from its code and its measurements,
// not chosen by the fit's score: from the tenth to the fourteenth session
// the switches stayed off because the screens' median over all figures
// rose with them (11.9% → 14.1%, 11.0% → 11.6%, 10.0% → 10.25%:
// docs/calibrate.md, "Issue 24, tenth session", "twelfth session:
// AccelMark's whole runs", "fourteenth session: the lead's merge"), which
// judged the model on a replay known to send half of each run's prompts
// ("Issue 24, fifteenth session: AccelMark replayed as it ran").
var fidAccelMarkRunner = fidAccelMarkRunnerOpts{allPrompts: true, sglangSeqs: true, sglangMem: true, vllmLimits: true,
	vllmWarm: true, clientArrivals: true, allRuns: true}

// The runners' settings the switches of fidAccelMarkRunner apply.
const (
	fidAccelMarkSGLangRunning = 2048 // SGLang's max_running_requests at these pools (at least 2,048)
	fidAccelMarkSGLangMem     = 0.88 // the SGLang runner's mem_fraction_static
	fidAccelMarkVLLMSeqs      = 128  // vLLM V1's SchedulerConfig.DEFAULT_MAX_NUM_SEQS
	fidAccelMarkVLLMTokens    = 2048 // vLLM V1's DEFAULT_MAX_NUM_BATCHED_TOKENS
)

// fidAccelMarkRunGap is the idle time the replay leaves between the last
// arrival of one run and the start of the next under
// fidAccelMarkRunner.allRuns: longer than any of the replayed runs takes
// (elapsed_seconds_median at most 105 s in the result files), so each run
// starts on an idle server, as the client's does.
const fidAccelMarkRunGap = 300e9

// fidAccelMarkOnline is how many of an online run's prompts are replayed
// without fidAccelMarkRunner.allPrompts: the first 150 of 300.
const fidAccelMarkOnline = 150

// fidAccelMarkDataset is the dataset the replayed runs send.
const fidAccelMarkDataset = "AccelMark sharegpt_standard_v1"

// fidAccelMark builds the requests of an AccelMark figure's run: its
// num_prompts first prompts, one at a time (max_concurrency 1: the
// interactive scenario) or Poisson at request_rate (online); whether the
// prompts are warm is fidTranslate's. It returns the requests, a phrase
// for the page, the client's cap and the tokens the whole run leaves in
// the KV cache (its prompts and its outputs cut at maxTokens), or why the
// figure is not replayed.
func fidAccelMark(f *Figure, maxTokens int) (reqs []workload.Request, what string, conc int, runTokens int64, skip string) {
	w := f.Setup.Workload
	switch {
	case f.Use == "cross-check":
		return nil, "", 0, 0, "an AccelMark cross-check (vLLM 0.7.3 in the client's event loop, offline repeats, INT8/INT4 weights, p99s: calib/README.md) is not replayed"
	case !strings.HasPrefix(w.Dataset, fidAccelMarkDataset):
		return nil, "", 0, 0, "only AccelMark's sharegpt_standard_v1 runs are replayed (their prompt lengths are cited in calib/fidelity_accelmark.go)"
	case w.NumPrompts <= 0 || w.NumPrompts > len(fidAccelMarkIn):
		return nil, "", 0, 0, fmt.Sprintf("num_prompts %d: the cited prompt lengths are the first %d", w.NumPrompts, len(fidAccelMarkIn))
	case w.MaxConcurrency != 1 && (w.RequestRate == nil || !(*w.RequestRate > 0) || math.IsInf(*w.RequestRate, 0)):
		return nil, "", 0, 0, "an AccelMark run is replayed one request at a time or Poisson at a finite rate"
	}
	run := fidAccelMarkRunner
	var client [][]float64
	if w.MaxConcurrency != 1 && run.clientArrivals {
		var err error
		if client, err = fidAccelMarkClientArrivals(f.Ref, *w.RequestRate, w.NumPrompts); err != nil {
			return nil, "", 0, 0, fmt.Sprintf("the client's arrivals: %v", err)
		}
		if !run.allRuns {
			client = client[:1]
		}
	}
	rng := rand.New(rand.NewPCG(fidAccelMarkSeed, uint64(w.NumPrompts)))
	var t float64
	for i := range w.NumPrompts {
		out := int(math.Round(math.Exp(math.Log(fidAccelMarkOutMedian) + fidAccelMarkOutSigma*rng.NormFloat64())))
		out = min(max(out, 1), fidAccelMarkMaxTokens)
		r := workload.Request{ID: fmt.Sprintf("a%d", i), PromptTokens: fidAccelMarkIn[i] + fidAccelMarkTemplate, OutputTokens: out, N: 1}
		if w.MaxConcurrency != 1 {
			// The replay's own draw is made even where the client's
			// arrival replaces it, so the outputs stay those of main's
			// replay.
			t += rng.ExpFloat64() / *w.RequestRate
			r.Arrival = int64(t * 1e9)
			if client != nil {
				r.Arrival = int64(client[0][i] * 1e9)
			}
		}
		runTokens += int64(r.PromptTokens + min(out, maxTokens))
		reqs = append(reqs, r)
	}
	if w.MaxConcurrency == 1 {
		return reqs, fmt.Sprintf("%d sharegpt_standard_v1 prompts one at a time", w.NumPrompts), 1, runTokens, ""
	}
	if !run.allPrompts {
		reqs = reqs[:min(len(reqs), fidAccelMarkOnline)]
	}
	what = fmt.Sprintf("its %d sharegpt_standard_v1 prompts", w.NumPrompts)
	if len(reqs) < w.NumPrompts {
		what = fmt.Sprintf("the first %d of its %d sharegpt_standard_v1 prompts", len(reqs), w.NumPrompts)
	}
	switch {
	case client == nil:
		what += fmt.Sprintf(", Poisson at %g req/s", *w.RequestRate)
	case len(client) == 1:
		what += fmt.Sprintf(", at the client's own Poisson arrivals (%g req/s, random.Random(%d), its first run)", *w.RequestRate, fidAccelMarkClientSeed)
	default:
		// Run k repeats run 0's requests at its own arrivals, after the
		// last arrival of run k-1 and fidAccelMarkRunGap.
		one := reqs
		start := int64(0)
		for k := 1; k < len(client); k++ {
			start = reqs[len(reqs)-1].Arrival + fidAccelMarkRunGap
			for i, r := range one {
				r.ID = fmt.Sprintf("a%d.r%d", i, k)
				r.Arrival = start + int64(client[k][i]*1e9)
				reqs = append(reqs, r)
			}
		}
		fidAccelMarkPrefixIDs(reqs, len(one))
		what += fmt.Sprintf(" in each of the %d runs its medians pool, at the client's own Poisson arrivals (%g req/s, random.Random(%d))", len(client), *w.RequestRate, fidAccelMarkClientSeed)
	}
	return reqs, what, 0, runTokens, ""
}

// fidAccelMarkPrefixIDs gives each request of an allRuns replay the
// prefix ids of its prompt (the same ids in every run, as the radix cache
// and vLLM's block hashes see the same prompt), so that the sim's prefix
// cache, warmed with them, matches a prompt in each of its runs: one id
// per workload.PrefixBlockTokens tokens, a SplitMix64 mix of (prompt,
// block) with the two top bits set, where neither trace ids nor the sim's
// own (Config.WarmPrompts: the top bit alone) are.
func fidAccelMarkPrefixIDs(reqs []workload.Request, runLen int) {
	for j := range reqs {
		i := j % runLen
		n := (reqs[j].PromptTokens + workload.PrefixBlockTokens - 1) / workload.PrefixBlockTokens
		ids := make([]uint64, n)
		for k := range ids {
			ids[k] = workload.PrefixIDMix(i, k) | 3<<62
		}
		reqs[j].PrefixHashes = ids
	}
}
