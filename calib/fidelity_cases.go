// Fidelity cases: a published figure's setup translated into a simulation
// (static batches, benchmark files replayed, one request alone) or into an
// operator-level evaluation of the profile's terms, with the metric taken
// from the result; or the reason it cannot be. See fidelity.go.

package calib

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// fidPicker takes a figure's value, in its unit, from a run's result; ok is
// false when the run gives none.
type fidPicker func(res *sim.Result) (float64, bool)

// fidPlan is a figure translated: a simulation and its picker, an
// operator-level value, or the reason for neither.
type fidPlan struct {
	setup, note, skip string
	gpu               string         // the profile's GPU; "" when skipped
	engine            sim.EngineKind // the profile's engine
	sim               *fidCase       // nil for an operator-level figure
	// base, when set, is the run the figure is a ratio to: its value is
	// pick(sim) ÷ pick(base), or combine(pick(sim), pick(base)) where
	// combine is set.
	base    *fidCase
	combine func(v, b float64) float64
	pick    fidPicker
	// op is an operator-level figure's value under a profile of its GPU,
	// opGPU (the joint model's, for vLLM V1: the engine does not enter).
	op    func(*sim.Profile) float64
	opGPU model.GPU
}

// fidEngineRule is how a source's serving engine is simulated.
type fidEngineRule struct {
	engine sim.EngineKind
	// version is the engine's release (sim.ParseEngineVersion; "" for the
	// engine's default), class the overhead class when it is not the
	// release's own (lmdeploy's TurboMind, scheduled as vLLM V1 steps).
	version, class string
	chunked        bool
	maxBatchTokens int // 0: sim.DefaultConfig's 8192
	maxSeqs        int // 0: sim.DefaultConfig's 256
	// warmRepeats: the source ran each closed-loop load several times
	// against one server with prefix caching on, every run sending the
	// first run's prompts again (one seed), in a KV pool that keeps them
	// all. A figure whose workload names warm_from is a repeat, replayed
	// warm; one that pools runs_pooled runs is their mean: the first
	// cold, the others warm.
	warmRepeats bool
	note        string
}

// fidEngines maps each source whose runs are simulated to its engine.
// The notes say what is inferred (calib/README.md, "How each source was
// read").
var fidEngines = map[string]fidEngineRule{
	"lmdeploy-a100": {engine: sim.EngineVLLMV1, class: sim.ClassLMDeploy, chunked: true,
		note: "lmdeploy TurboMind scheduled as vllm-v1 (gpufrag has no TurboMind scheduler; a static batch steps alike), with lmdeploy's own overheads"},
	"argonne-llm-inference-bench": {engine: sim.EngineVLLMV0, version: "0.5.0",
		note: "vllm-v0 0.5 without chunked prefill, inferred: the vLLM version is not stated (the script passes use_v2_block_manager, " +
			"a flag of 0.4 to 0.6; the paper is of late 2024, before V1), and V0 runs offline batches below 32K context without chunking"},
	"surajssd-llm-k8s": {engine: sim.EngineVLLMV1, version: "0.8.3", chunked: true, maxBatchTokens: 2048,
		note: "vllm-v1 0.8.3 (its engine for tensor parallelism without pipeline parallelism; these runs did not log it), " +
			"at 2,048 batched tokens: V1's default for an API server on a GPU under 70 GiB, and what a sibling run of the same repository logged; " +
			"the three runs (qps 1, 16, inf, in that order) send the same 200 prompts to one server with prefix caching on"},
	"vllm-ci-perf": {engine: sim.EngineVLLMV1, chunked: true,
		note: "vllm-v1 at the default release, assumed for vLLM main at that build (a batch of 8 short prompts steps alike under V0 and V1)"},
	"johnmusgrave-a100": {engine: sim.EngineVLLMV1, version: "0.23.0", chunked: true, note: "vLLM 0.23.0: the V1 engine"},
	// vLLM 0.19 on an A100 under `vllm serve`: 2,048 batched tokens and
	// 256 sequences (EngineArgs' defaults for an API server on a GPU under
	// 70 GiB or named A100: vLLM's tests/engine/test_arg_utils.py,
	// test_defaults_with_usage_context); chunked prefill and prefix
	// caching on (V1's defaults).
	"cssnoeasy-a100-pcie": {engine: sim.EngineVLLMV1, version: "0.19.0", chunked: true, maxBatchTokens: 2048, maxSeqs: 256, warmRepeats: true,
		note: "vllm-v1 0.19.0 at 2,048 batched tokens and 256 sequences (vLLM's defaults for vllm serve on an A100; not logged), " +
			"prefix caching on; each load ran 3 times with seed 0 against one server, the later runs finding the first's prompts cached " +
			"(the ~786K-token KV pool holds every prompt of a round)"},
	// SGLang 0.4 caps running requests at its request pool,
	// min(max(KV tokens ÷ context × 512, 2048), 4096): 4,096 for these
	// models' 131,072-token context on H200s with a million KV tokens.
	"datacrunch-h200": {engine: sim.EngineSGLang, version: "0.4.0", chunked: true, maxSeqs: 4096,
		note: "SGLang (prefill and decode batches apart; --enable-torch-compile is not modelled), up to 4,096 running requests " +
			"(its default cap, the request pool's size)"},
	// The SGLang cookbook's `sglang serve --model-path
	// Meta-Llama/Llama-3.1-70B --tp 8` on 0.5.6: every server argument at
	// its default (chunked prefill by GPU memory, radix cache on, CUDA
	// graphs); the clients keep at most 100 requests in flight, below
	// every default cap on running requests.
	fidSGLCookbookSource: {engine: sim.EngineSGLang, version: "0.5.6", chunked: true,
		note: "SGLang 0.5.6 at its defaults (`sglang serve --tp 8`, no other argument; prefill and decode batches apart)"},
}

// fidSkips are the sources none of whose figures can be simulated here.
var fidSkips = map[string]string{
	"lambda-benchmark-v0": "the prompt lengths of these runs are not published",
	"sarathi-serve-osdi":  "no GPU preset for the A100 80GB PCIe (a100-80g-pcie), and the decode rows do not state their context length",
}

// fidGPUs are GPUs figures name that model has no preset for, built here
// from their datasheets for replaying these figures only (a preset that
// users can name is model/gpu.go's).
var fidGPUs = map[string]model.GPU{
	// A100 80GB PCIe. NVIDIA A100 datasheet
	// (nvidia-a100-datasheet-us-nvidia-1758950-r4): 1,935 GB/s HBM2e, BF16
	// tensor 312 TFLOPS dense (624 with sparsity), no FP8; without the
	// optional two-card NVLink bridge, the link is the PCIe Gen4 x16 slot
	// (64 GB/s bidirectional, 32 GB/s each way). nvidia-smi: 81920MiB, as
	// the SXM4 board (the cssnoeasy source's peak of 61,859 MiB at
	// --gpu-memory-utilization 0.75 is 0.755 of it).
	"a100-80g-pcie": {Name: "a100-80g-pcie", Capacity: 81920 << 20, MemBandwidth: 1935e9, BF16FLOPS: 312e12, LinkBandwidth: 32e9},
}

// fidGPU is the preset of name, or its entry in fidGPUs.
func fidGPU(name string) (model.GPU, error) {
	g, err := model.LookupGPU(name)
	if err != nil {
		if fg, ok := fidGPUs[name]; ok {
			return fg, nil
		}
	}
	return g, err
}

// fidSetupEngine is the rule of a source without one in fidEngines: the
// figure's setup.engine (vllm-v0, vllm-v1 or sglang), its
// workload.chunked_prefill (else the engine's default: V0 does not chunk
// prompts below 32K tokens, V1 and SGLang do) and max_num_batched_tokens
// (applied by fidTranslate). ok is false when setup.engine is not a
// simulated engine.
func fidSetupEngine(s Setup) (fidEngineRule, bool) {
	e, err := sim.ParseEngine(s.Engine)
	if err != nil {
		return fidEngineRule{}, false
	}
	r := fidEngineRule{engine: e, chunked: e != sim.EngineVLLMV0}
	if c := s.Workload.ChunkedPrefill; c != nil {
		r.chunked = *c
	}
	// The release is the setup's engine_version up to its first space or
	// plus ("0.20.1+transformers-5.8.1 (V1)"); one the engine did not
	// have, or free text, leaves the engine's default.
	v, _, _ := strings.Cut(strings.TrimSpace(s.EngineVersion), " ")
	v, _, _ = strings.Cut(v, "+")
	if _, err := sim.ParseEngineVersion(e, v); err == nil {
		r.version = v
	}
	r.note = fmt.Sprintf("%s %s, chunked prefill %v", e, s.EngineVersion, r.chunked)
	if n := s.Workload.MaxNumBatchedTokens; n > 0 {
		r.note += fmt.Sprintf(", max_num_batched_tokens %d", n)
	}
	r.note += ", from the figure's setup"
	return r, true
}

// fidPresets maps the Hugging Face ids of the figures' models to gpufrag
// presets. Llama-3.3-70B has Llama-3.1-70B's architecture.
var fidPresets = map[string]string{
	"facebook/opt-13b":                       "opt-13b",
	"meta-llama/Llama-2-7b-hf":               "llama-2-7b",
	"meta-llama/Llama-2-13b-hf":              "llama-2-13b",
	"meta-llama/Llama-2-70b-hf":              "llama-2-70b",
	"meta-llama/Meta-Llama-3-8B":             "llama-3-8b",
	"meta-llama/Meta-Llama-3-8B-Instruct":    "llama-3-8b",
	"meta-llama/Meta-Llama-3-70B":            "llama-3-70b",
	"meta-llama/Meta-Llama-3-70B-Instruct":   "llama-3-70b",
	"meta-llama/Llama-3.1-8B":                "llama-3.1-8b",
	"meta-llama/Llama-3.1-8B-Instruct":       "llama-3.1-8b",
	"meta-llama/Meta-Llama-3.1-8B-Instruct":  "llama-3.1-8b",
	"meta-llama/Meta-Llama-3.1-70B-Instruct": "llama-3.1-70b",
	"meta-llama/Llama-3.3-70B-Instruct":      "llama-3.1-70b",
	"meta-llama/Llama-3.1-405B-Instruct":     "llama-3.1-405b",
	"meta-llama/Llama-3.1-70B-Instruct":      "llama-3.1-70b",
	"meta-llama/Llama-3.1-70B":               "llama-3.1-70b",
	// FP8 checkpoints: the architecture of their base (setup.weight_dtype
	// says fp8).
	"neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8-dynamic":  "llama-3.1-8b",
	"neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic": "llama-3.1-70b",
	"neuralmagic/Meta-Llama-3.1-8B-FP8":                   "llama-3.1-8b",
	"neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8":         "llama-3.1-70b",
	"RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8":             "llama-3.1-8b",
	"meta-llama/Llama-3.1-405B-FP8":                       "llama-3.1-405b",
	"Qwen/Qwen2.5-7B-Instruct":                            "qwen2.5-7b",
	// A vision-language model served text-only prompts: its text model
	// has Qwen3-8B's shapes (model/presets.go), and the vision tower
	// does not run.
	"Qwen/Qwen3-VL-8B-Instruct": "qwen3-8b",
}

// fidModel returns the preset of a figure's model (the first word of
// setup.model: the rest is a remark).
func fidModel(s string) (model.Model, string, error) {
	id, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	name, ok := fidPresets[id]
	if !ok {
		return model.Model{}, "", fmt.Errorf("no model preset for %s (add one to model/presets.go and to fidPresets in calib/fidelity_cases.go)", id)
	}
	m, err := model.Preset(name)
	return m, name, err
}

// fidTranslate turns figure f into a plan. Only an unreadable benchmark file
// is an error; everything else that stops a simulation is fidPlan.skip; files caches the
// benchmark files read.
func fidTranslate(f *Figure, open func(string) (io.ReadCloser, error), files map[string][]*workload.BenchResult) (*fidPlan, error) {
	p := &fidPlan{}
	s := f.Setup
	w := s.Workload
	if why, ok := fidSkips[f.Source]; ok {
		p.skip = why
		return p, nil
	}
	if strings.HasPrefix(w.Dataset, "operator profile") || strings.HasPrefix(w.Dataset, "collective profile") {
		return fidOperator(f)
	}
	rule, ok := fidEngines[f.Source]
	var lambda *fidLambdaRun
	if f.Source == "lambda-vllm-benchmark" {
		file, _, _ := strings.Cut(f.Ref, ",")
		run, found := fidLambdaRuns[file]
		switch {
		case !found:
			p.skip = "the run's per-request lengths are in the cited file, which has no licence and is not stored here; " +
				"only the 10-prompt runs' lengths are recorded (calib/fidelity_lambda.go)"
			return p, nil
		case run.commit != f.Revision:
			p.skip = fmt.Sprintf("the lengths in calib/fidelity_lambda.go were read at commit %s, the figure at %s", run.commit, f.Revision)
			return p, nil
		}
		lambda, rule, ok = &run, fidLambdaEngine, true
		rule.note, rule.version = run.engine, run.version
	}
	if !ok {
		rule, ok = fidSetupEngine(s)
	}
	if !ok {
		p.skip = fmt.Sprintf("no rule for the engine of source %s, and its setup.engine %q is not one of %s (add a rule to fidEngines in calib/fidelity_cases.go)",
			f.Source, s.Engine, strings.Join(sim.EngineNames(), ", "))
		return p, nil
	}
	g, err := fidGPU(s.GPU)
	if err != nil {
		p.skip = fmt.Sprintf("no GPU preset for %q", s.GPU)
		if s.GPUNote != "" {
			p.skip += " (" + s.GPUNote + ")"
		}
		return p, nil
	}
	m, mname, err := fidModel(s.Model)
	if err != nil {
		p.skip = err.Error()
		return p, nil
	}
	v, err := sim.ParseEngineVersion(rule.engine, rule.version)
	if err != nil {
		return nil, fmt.Errorf("%w: source %s: %w", ErrFidelity, f.Source, err)
	}
	class := rule.class
	if class == "" {
		class = sim.OverheadClass(rule.engine, v)
	}
	p.gpu, p.engine = g.Name, rule.engine
	cfg := sim.DefaultConfig(m, g)
	cfg.TP = s.TP
	cfg.Engine = rule.engine
	cfg.EngineVersion = v.String()
	cfg.ChunkedPrefill = rule.chunked
	if rule.maxBatchTokens > 0 {
		cfg.MaxBatchTokens = rule.maxBatchTokens
	} else if rule.engine == sim.EngineSGLang && rule.chunked {
		// SGLang's chunked_prefill_size by GPU memory at this release
		// (sim.SGLangDefault: 4,096 on the RTX A6000 and A100-40GB from
		// 0.5.3, 2,048 below 25,000 MiB in 0.4 and below 35 GiB in 0.5).
		if c := sim.SGLangDefault(v, g.Capacity, max(s.TP, 1)).ChunkedPrefill; c > 0 {
			cfg.MaxBatchTokens = c
		}
	}
	if rule.maxSeqs > 0 {
		cfg.MaxSeqs = rule.maxSeqs
	}
	if s.DType == "fp16" {
		cfg.KVDType = model.FP16
		cfg.WeightDType = model.FP16
	} else {
		cfg.KVDType = model.BF16
		cfg.WeightDType = model.BF16
	}
	// Published's validation parsed both names.
	if s.WeightDType != "" {
		cfg.WeightDType, _ = model.ParseDType(s.WeightDType)
	}
	if s.Unquantized != "" {
		cfg.Unquantized, _ = model.ParseUnquantized(s.Unquantized)
	}
	if s.KVDType != "" {
		cfg.KVDType, _ = model.ParseKVDType(s.KVDType)
	}
	if w.MaxNumBatchedTokens > 0 {
		cfg.MaxBatchTokens = w.MaxNumBatchedTokens
	}
	if w.PrefixCaching != nil {
		cfg.PrefixCaching = *w.PrefixCaching
	}
	if w.MaxNumSeqs > 0 {
		cfg.MaxSeqs = w.MaxNumSeqs
	}
	if w.MaxModelLen > 0 {
		cfg.MaxContext = w.MaxModelLen
	}
	if w.GPUMemoryUtilization != nil {
		cfg.GPUMemoryUtilization = *w.GPUMemoryUtilization
	}
	// vLLM V0's multi-step scheduling (--num-scheduler-steps), as the run
	// stated it: the host's time of a decode step spread over that many
	// steps (sim.Config.SchedulerSteps says what is and is not modelled).
	multiStep := ""
	if n := w.NumSchedulerSteps; n != nil && *n > 1 {
		if err := sim.SchedulerStepsError(*n, rule.engine, v, cfg.ChunkedPrefill); err == nil {
			cfg.SchedulerSteps = *n
			multiStep = fmt.Sprintf("multi-step scheduling, %d steps: the host's time of a decode step spread over %d (its outputs' delivery in chunks and new requests' wait for a chunk's end are not modelled)", *n, *n)
		} else {
			multiStep = fmt.Sprintf("its multi-step scheduling is not modelled here (%v)", err)
		}
	}
	head := fmt.Sprintf("%s on %d× %s, tp %d, %s %s", mname, max(s.GPUs, 1), g.Name, max(s.TP, 1), rule.engine, v)
	if rule.class != "" {
		head = fmt.Sprintf("%s on %d× %s, tp %d, %s steps, %s overheads", mname, max(s.GPUs, 1), g.Name, max(s.TP, 1), rule.engine, rule.class)
	}
	var reqs []workload.Request
	var what string
	var notes []string
	// pooledCold is the first (cold) run of a figure that is a mean over
	// runs (warmRepeats), described by pooledWhat.
	var pooledCold *sim.Config
	var pooledWhat string
	// noText is the replayed file's successful requests that returned no
	// text (noTextRequests), of served successful ones: its client's TTFT
	// percentiles count each as 0.
	var noText, served int
	notes = append(notes, rule.note)
	if multiStep != "" {
		notes = append(notes, multiStep)
	}
	switch {
	case f.Source == "accelmark":
		var conc int
		var skip string
		var runTokens int64
		online := f.Setup.Workload.MaxConcurrency != 1
		sglang := rule.engine == sim.EngineSGLang
		// The runners ask for max_tokens 512 (the outputs are cut there
		// too): SGLang's admission reserves it for every new request. The
		// SGLang runner lowers it to 224 when it streams, in its online
		// runs (runners/nvidia_sglang_c43a8309/runner.py,
		// inference_fn_streaming, AccelMark a2ec8f6).
		cfg.MaxTokens = fidAccelMarkMaxTokens
		if sglang && online {
			cfg.MaxTokens = fidAccelMarkSGLangStream
		}
		if reqs, what, conc, runTokens, skip = fidAccelMark(f, cfg.MaxTokens); skip != "" {
			p.skip = skip
			return p, nil
		}
		cfg.MaxConcurrency = conc
		if sglang && g.Capacity < 25<<30 {
			cfg.MaxBatchTokens = 2048 // SGLang's chunked_prefill_size on a GPU under 25 GB
		}
		run := fidAccelMarkRunner
		switch {
		case sglang:
			if run.sglangSeqs {
				cfg.MaxSeqs = fidAccelMarkSGLangRunning
			}
			if run.sglangMem {
				// mem_fraction_static is the share of the GPU for the
				// weights and the KV pool (SGLang profiles the free memory
				// after loading the weights and keeps 1 − 0.88 of the
				// whole GPU back for everything else): the pool is 0.88 ×
				// capacity − weights − context. The sim takes the step's
				// activation peak from its share, so the share is raised
				// by that peak.
				u, err := fidSGLangShare(cfg, fidAccelMarkSGLangMem)
				if err != nil {
					p.skip = fmt.Sprintf("the engine cannot be built: %v", err)
					return p, nil
				}
				cfg.GPUMemoryUtilization = u
			}
		case rule.engine == sim.EngineVLLMV1 && run.vllmLimits:
			cfg.MaxSeqs, cfg.MaxBatchTokens = fidAccelMarkVLLMSeqs, fidAccelMarkVLLMTokens
		}
		// Warm or cold. The client sends the same prompts in the same
		// order in every run (10 warm-up requests, then 3 runs at each
		// rate, the rates in turn). SGLang's radix cache keeps each
		// finished request's prompt and output: its online TTFTs stay
		// near 50 ms at 100 req/s, where 25,000 prompt tokens a second of
		// Llama-3-8B would need 400 TFLOP/s, beyond an A100's peak.
		// vLLM V1's prefix cache is on too (fidAccelMarkRunner.vllmWarm).
		// Both evict the least recently used, so a pool that cannot hold a
		// run's prompts and outputs has evicted each prompt before its
		// turn (fidAccelMarkRunner.coldEvicted). The interactive TTFTs of
		// both are whole prefills: cold.
		warm := online && cfg.PrefixCaching && (sglang || rule.engine == sim.EngineVLLMV1 && run.vllmWarm)
		pool := int64(-1)
		// Several runs (fidAccelMarkRunner.allRuns) started warm: the
		// page says whether the pool holds a run, or the sim's own cache
		// decides what each run finds.
		several := online && run.clientArrivals && run.allRuns
		if warm && (run.coldEvicted || several) {
			res, err := fidSimulate(cfg, nil, nil)
			if err != nil {
				p.skip = fmt.Sprintf("the engine cannot be built: %v", err)
				return p, nil
			}
			pool = res.KVPoolBytes / m.KVBytesPerToken(cfg.KVDType, cfg.TP)
			if run.coldEvicted {
				warm = runTokens <= pool
			}
		}
		cfg.WarmPrompts = warm
		if !warm {
			// A cold replay of several runs (fidAccelMarkRunner.allRuns)
			// shares no prompt between its runs.
			for i := range reqs {
				reqs[i].PrefixHashes = nil
			}
		}
		arrivals := "arrivals drawn"
		if online && run.clientArrivals {
			arrivals = "the client's own arrivals"
		}
		note := fmt.Sprintf("prompt lengths of the dataset (+%d tokens of chat template), outputs drawn (median %d, cut at %d: not recorded), "+
			"%s", fidAccelMarkTemplate, fidAccelMarkOutMedian, cfg.MaxTokens, arrivals)
		switch {
		case !run.coldEvicted && !run.vllmWarm:
			note += "; SGLang's online runs warm (its radix cache keeps the prompts sent again), the others cold"
		case !online:
			note += "; one at a time: cold"
		case warm && pool >= 0 && runTokens > pool:
			note += fmt.Sprintf("; the prompts cached before the first run as far as the %d-token KV pool holds them, not a run's %d tokens "+
				"of prompts and outputs: the sim's least-recently-used prefix cache decides what each run finds of the one before", pool, runTokens)
		case warm:
			note += fmt.Sprintf("; warm: the prefix cache keeps the prompts the client sent in its earlier runs (a run leaves %d tokens)", runTokens)
		case pool >= 0:
			note += fmt.Sprintf("; cold: a run's %d tokens of prompts and outputs overflow the %d-token KV pool, so LRU evicts each prompt before the next run sends it", runTokens, pool)
		default:
			note += "; cold"
		}
		notes = append(notes, note)
	case lambda != nil:
		cfg.MaxContext = lambda.maxModelLen
		for i, in := range lambda.in {
			reqs = append(reqs, workload.Request{ID: fmt.Sprintf("r%d", i+1), PromptTokens: in, OutputTokens: lambda.out[i], N: 1})
			if lambda.out[i] == 0 {
				noText++
			}
		}
		served = len(reqs)
		what = fmt.Sprintf("the file's %d requests (input_lens, output_lens), all at once", len(reqs))
	case f.Source == fidAnyscaleSource:
		var skip string
		if reqs, what, skip = fidAnyscaleRequests(f); skip != "" {
			p.skip = skip
			return p, nil
		}
	case f.Source == fidSGLCookbookSource:
		var skip string
		if reqs, what, skip = fidSGLCookbookRequests(f); skip != "" {
			p.skip = skip
			return p, nil
		}
		cfg.MaxConcurrency = w.MaxConcurrency
		// The random dataset asks for each request's output as its
		// max_new_tokens and ignores EOS: what SGLang's admission reserves.
		cfg.MaxTokensIsOutput = true
		notes = append(notes, "the client's warm-up request (its first prompt, sent once before the run) leaves that prompt in the radix cache: not modelled")
	case w.Batch > 0 && w.InputLen > 0 && w.OutputLen > 0:
		reqs = make([]workload.Request, w.Batch)
		for i := range reqs {
			reqs[i] = workload.Request{ID: fmt.Sprintf("b%d", i+1), PromptTokens: w.InputLen, OutputTokens: w.OutputLen, N: 1}
		}
		what = fmt.Sprintf("static batch of %d × %d → %d tokens, all at 0", w.Batch, w.InputLen, w.OutputLen)
	case w.MaxConcurrency > 0 && w.NumPrompts > 0 && w.InputLen > 0 && w.OutputLen > 0:
		reqs, what = fidClosedLoop(w.NumPrompts, w.MaxConcurrency, w.InputLen, w.OutputLen)
		if w.LengthSpread != nil {
			var err error
			if reqs, what, err = fidSpreadLengths(reqs, *w.LengthSpread, w.InputLen, w.OutputLen, w.MaxConcurrency); err != nil {
				return nil, fmt.Errorf("%w: figure %s: %w", ErrFidelity, f.ID, err)
			}
		}
		cfg.MaxConcurrency = w.MaxConcurrency
		if rule.warmRepeats && (w.WarmFrom != "" || w.RunsPooled > 1) {
			if !cfg.PrefixCaching {
				return nil, fmt.Errorf("%w: figure %s: a warm repeat needs workload.prefix_caching", ErrFidelity, f.ID)
			}
			if w.WarmFrom != "" && w.RunsPooled > 1 {
				return nil, fmt.Errorf("%w: figure %s: warm_from (one repeat) and runs_pooled (a mean over runs) together", ErrFidelity, f.ID)
			}
			cold := cfg
			cold.WarmPrompts = false
			cfg.WarmPrompts = true
			coldWhat := what
			what += ", warm"
			if w.WarmFrom != "" {
				notes = append(notes, "a repeat: its prompts were sent before ("+w.WarmFrom+"), replayed warm")
				break
			}
			if f.Metric == "throughput_ratio" { // its base, concurrency 1, would take the cold run's place
				return nil, fmt.Errorf("%w: figure %s: runs_pooled (a mean over a cold run and warm repeats) with metric throughput_ratio", ErrFidelity, f.ID)
			}
			n := float64(w.RunsPooled)
			p.combine = func(warm, cold float64) float64 { return (cold + (n-1)*warm) / n }
			pooledCold, pooledWhat = &cold, coldWhat
			notes = append(notes, fmt.Sprintf("the mean over %d runs of the same prompts: the first cold, %d warm", w.RunsPooled, w.RunsPooled-1))
		}
	case w.LocalCopy != "":
		run, skip, err := fidBenchRun(f, open, files)
		if err != nil || skip != "" {
			p.skip = skip
			return p, err
		}
		drawn := run.Random != nil && (run.Dataset == "random" || run.Dataset == "random-ids")
		if run.Detail&workload.DetailLens == 0 && !drawn {
			p.skip = fmt.Sprintf("the run (%s dataset) records only its token totals, not per-request lengths", fidOr(run.Dataset, "an unnamed"))
			return p, nil
		}
		tr, err := run.Trace()
		if err != nil {
			p.skip = fmt.Sprintf("the run cannot be replayed: %v", err)
			return p, nil
		}
		if tr.MaxConcurrency > 0 {
			p.skip = fmt.Sprintf("a closed-loop client at concurrency %d is not used here yet", tr.MaxConcurrency)
			return p, nil
		}
		reqs = tr.Requests
		what = fidBenchWhat(run, len(reqs))
		noText, served = noTextRequests(run), len(run.Requests)-countFailed(run)
		// A random dataset's client asks for each request's output as its
		// max_tokens and ignores EOS (vLLM's benchmark_serving and SGLang's
		// bench_serving): what SGLang's admission reserves. Every dataset's
		// does under SGLang, as calibrate's replay and gpufrag simulate run
		// a benchmark file (sim.Config.ForBenchClient).
		cfg.MaxTokensIsOutput = drawn
		cfg.ForBenchClient()
		if w.WarmFrom != "" {
			note, skip, err := fidWarm(f, run, open, files)
			if err != nil || skip != "" {
				p.skip = skip
				return p, err
			}
			cfg.WarmPrompts = true
			what += ", warm"
			notes = append(notes, note)
		}
		if run.Random != nil && run.Detail&workload.DetailLens == 0 {
			if tr.ClientLengths {
				notes = append(notes, "the client's own lengths, drawn again from its seed as SGLang's bench_serving draws them (they add up to the run's totals)")
			} else {
				notes = append(notes, "lengths drawn as SGLang's random dataset draws them, not the client's own draws")
			}
		}
	default:
		p.skip = "the workload is not one of: a static batch, one request alone, a benchmark file with per-request lengths"
		return p, nil
	}
	pick, pnote, skip := fidMetric(f.Metric, f.Unit, len(reqs))
	if skip == "" && f.Source == fidAnyscaleSource {
		pick, pnote, skip = fidAnyscaleSleep(f.Metric, pick)
	}
	if skip != "" {
		p.skip, p.gpu = skip, ""
		return p, nil
	}
	if pnote != "" {
		notes = append(notes, pnote)
	}
	if noText > 0 {
		// Every figure of the run shares the simulation; its TTFT
		// figures read the request times.
		cfg.RequestTimes = true
	}
	if pct, isTTFT := fidClientTTFT[f.Metric]; isTTFT && noText > 0 {
		// The client's TTFT is taken over a 0 for each such request,
		// so the page takes the simulation's the same way. Where they
		// are fidNoTextShareMax of the successful requests or more, it
		// is mostly a statistic of the zeros, not of the engine's
		// first-token times: a cross-check (calibrate excludes such a
		// file's TTFT at any count: Case.measure).
		if share := float64(noText) / float64(max(served, 1)); share >= fidNoTextShareMax && (f.Use == "fit" || f.Use == "holdout") {
			return nil, fmt.Errorf("%w: figure %s: %d of its file's %d successful requests returned no text (output_lens 0), so its %s "+
				"is taken over as many TTFTs of 0; at %.0f%% or more of them such a TTFT is a cross-check, not use %s",
				ErrFidelity, f.ID, noText, served, f.Metric, fidNoTextShareMax*100, f.Use)
		}
		k, _ := fidUnitScale(f.Unit)
		pick = func(r *sim.Result) (float64, bool) {
			v, ok := clientTTFT(r, noText, pct)
			return v * k, ok && v > 0
		}
		notes = append(notes, fmt.Sprintf("simulated as the client counts it: the %d requests that returned no text enter at a TTFT of 0, "+
			"the others at their simulated first-token times", noText))
	}
	p.setup = head + "; " + what
	key := func(what string) string {
		return fmt.Sprintf("%s|%s|%s|%v|%d|%d|%v|%v|%d|%v|%v|%v", f.Source, head, what, cfg.PrefixCaching, cfg.MaxContext, cfg.MaxSeqs, cfg.WeightDType,
			cfg.KVDType, cfg.MaxBatchTokens, cfg.ChunkedPrefill, cfg.Unquantized, cfg.RequestTimes)
	}
	p.pick = pick
	p.sim = &fidCase{key: key(what), cfg: cfg, class: class, reqs: reqs}
	if pooledCold != nil {
		p.base = &fidCase{key: key(pooledWhat), cfg: *pooledCold, class: class, reqs: reqs}
		p.setup += fmt.Sprintf(", and its mean with the first run, cold (%d runs)", w.RunsPooled)
	}
	if f.Metric == "throughput_ratio" {
		// The gain from concurrency 1 to C: the same sweep at concurrency
		// 1, with as many prompts per slot.
		if cfg.MaxConcurrency < 2 || w.NumPrompts%cfg.MaxConcurrency != 0 {
			p.skip, p.gpu, p.sim = "a throughput ratio is read here only as a closed-loop sweep's gain from concurrency 1 to C (C ≥ 2, prompts a multiple of C)", "", nil
			return p, nil
		}
		n := w.NumPrompts / cfg.MaxConcurrency
		breqs, bwhat := fidClosedLoop(n, 1, w.InputLen, w.OutputLen)
		bcfg := cfg
		bcfg.MaxConcurrency = 1
		p.base = &fidCase{key: key(bwhat), cfg: bcfg, class: class, reqs: breqs}
		p.setup += fmt.Sprintf(", over the same client at concurrency 1 with %d prompts (as many per slot)", n)
		notes = append(notes, "output throughput at C ÷ output throughput at concurrency 1")
	}
	p.note = strings.Join(notes, "; ")
	return p, nil
}

// fidSGLangShare is the sim.Config.GPUMemoryUtilization that leaves cfg
// the KV budget of SGLang's mem_fraction_static frac: frac × capacity less
// the weights and the CUDA context, with the activation peak the sim
// takes from the budget added back.
func fidSGLangShare(cfg sim.Config, frac float64) (float64, error) {
	cfg.GPUMemoryUtilization = frac
	with, err := fidSimulate(cfg, nil, nil)
	if err != nil {
		return 0, err
	}
	cfg.Activations = false
	without, err := fidSimulate(cfg, nil, nil)
	if err != nil {
		return 0, err
	}
	return min(frac+float64(without.KVBudgetBytes-with.KVBudgetBytes)/float64(cfg.GPU.Capacity), 1), nil
}

// fidClosedLoop is n requests of in → out tokens, all due at 0, for a
// client that keeps c in flight.
func fidClosedLoop(n, c, in, out int) ([]workload.Request, string) {
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("c%d", i+1), PromptTokens: in, OutputTokens: out, N: 1}
	}
	return reqs, fmt.Sprintf("%d requests of %d → %d tokens from a closed-loop client at concurrency %d", n, in, out, c)
}

// fidSpreadLengths gives a closed-loop run's requests lengths uniform
// within ±spread of in and out (workload.length_spread), drawn as vLLM's
// benchmark random dataset draws them with --random-range-ratio spread:
// NumPy's legacy randint on [int(L × (1 − spread)), int(L × (1 + spread))]
// after seeding with 0, all the prompts and then all the outputs (the same
// draw as SGLang's, workload.SGLangRandomLengths). A source that states
// only "±15%" names no seed, so this is one draw of the stated spread, not
// the run's own; what matters for the replay is that requests of unequal
// lengths do not start and finish in lockstep, as identical ones do.
func fidSpreadLengths(reqs []workload.Request, spread float64, in, out, conc int) ([]workload.Request, string, error) {
	if !(spread >= 0 && spread < 1) || len(reqs) > 100_000 {
		return nil, "", fmt.Errorf("length_spread %v for %d requests: want a share in [0, 1) and at most 100,000 requests", spread, len(reqs))
	}
	inLo, inHi := int(float64(in)*(1-spread)), int(float64(in)*(1+spread))
	outLo, outHi := int(float64(out)*(1-spread)), int(float64(out)*(1+spread))
	ins, outs := workload.SGLangRandomLengths(0, len(reqs), max(inLo, 1), inHi, max(outLo, 1), outHi)
	for i := range reqs {
		reqs[i].PromptTokens, reqs[i].OutputTokens = ins[i], outs[i]
	}
	return reqs, fmt.Sprintf("%d requests of %d-%d → %d-%d tokens (±%g%% of %d → %d, drawn from seed 0) from a closed-loop client at concurrency %d",
		len(reqs), max(inLo, 1), inHi, max(outLo, 1), outHi, 100*spread, in, out, conc), nil
}

// fidBenchWhat describes a replayed run in one phrase.
func fidBenchWhat(run *workload.BenchResult, n int) string {
	rate := "all at once"
	if !math.IsInf(run.RequestRate, 1) {
		rate = fmt.Sprintf("Poisson at %g req/s", run.RequestRate)
	}
	if run.Dataset != "" {
		rate = run.Dataset + " dataset, " + rate
	}
	return fmt.Sprintf("%d requests of the run replayed (%s)", n, rate)
}

// fidOr is s, or alt when s is empty.
func fidOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

var fidLineRE = regexp.MustCompile(`\bline (\d+)\b`)

// fidBenchRun reads (once) the local copy a figure was read from and returns
// the run its ref names ("line N"), or its only run.
func fidBenchRun(f *Figure, open func(string) (io.ReadCloser, error), files map[string][]*workload.BenchResult) (*workload.BenchResult, string, error) {
	return fidBenchFile(f, f.Setup.Workload.LocalCopy, f.Ref, open, files)
}

// fidBenchFile is fidBenchRun for the local copy lc and a ref that may
// name its line.
func fidBenchFile(f *Figure, lc, ref string, open func(string) (io.ReadCloser, error), files map[string][]*workload.BenchResult) (*workload.BenchResult, string, error) {
	runs, ok := files[lc]
	if !ok {
		if open == nil {
			return nil, fmt.Sprintf("needs %s, which was not given", lc), nil
		}
		rc, err := open(lc)
		if errors.Is(err, fs.ErrNotExist) {
			files[lc] = nil
			return nil, fmt.Sprintf("needs %s, which is absent", lc), nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("%w: figure %s: %w", ErrFidelity, f.ID, err)
		}
		runs, err = workload.ReadBench(rc, lc)
		rc.Close()
		if err != nil {
			// A format the reader refuses (AccelMark's result.json) is a
			// figure that cannot be replayed, not a failure of the page.
			runs = nil
			files[lc] = nil
			return nil, fmt.Sprintf("%s cannot be replayed: %v", lc, err), nil
		}
		files[lc] = runs
	}
	if runs == nil {
		return nil, fmt.Sprintf("needs %s, which is absent or unreadable", lc), nil
	}
	if m := fidLineRE.FindStringSubmatch(ref); m != nil {
		line, _ := strconv.Atoi(m[1])
		for _, r := range runs {
			if r.Line == line {
				return r, "", nil
			}
		}
		return nil, fmt.Sprintf("%s has no run on line %d", lc, line), nil
	}
	if len(runs) != 1 {
		return nil, fmt.Sprintf("%s holds %d runs and the figure's ref names no line", lc, len(runs)), nil
	}
	return runs[0], "", nil
}

// fidWarm checks a figure's warm_from: the run it names (a local copy
// holding one run) sent the same prompts as run, in the same order, before
// it (by the files' dates), so a server with prefix caching had them
// cached. Lengths equal in order stand for equal prompts: the clients draw
// them from one seed. It returns the note for the page, or why the figure
// cannot be replayed warm.
func fidWarm(f *Figure, run *workload.BenchResult, open func(string) (io.ReadCloser, error), files map[string][]*workload.BenchResult) (string, string, error) {
	w := f.Setup.Workload
	if w.PrefixCaching == nil || !*w.PrefixCaching {
		return "", "", fmt.Errorf("%w: figure %s: warm_from without prefix_caching: true", ErrFidelity, f.ID)
	}
	before, skip, err := fidBenchFile(f, w.WarmFrom, "", open, files)
	if err != nil || skip != "" {
		return "", skip, err
	}
	if before.Detail&workload.DetailLens == 0 || run.Detail&workload.DetailLens == 0 ||
		!slices.EqualFunc(before.Requests, run.Requests, func(a, b workload.BenchRequest) bool { return a.InputTokens == b.InputTokens }) {
		return "", "", fmt.Errorf("%w: figure %s: warm_from %s did not send the run's prompt lengths in the run's order", ErrFidelity, f.ID, w.WarmFrom)
	}
	if before.Date == "" || run.Date == "" || before.Date >= run.Date {
		return "", "", fmt.Errorf("%w: figure %s: warm_from %s is dated %q, not before the run's %q", ErrFidelity, f.ID, w.WarmFrom, before.Date, run.Date)
	}
	return fmt.Sprintf("replayed with its prompts in the prefix cache (sim.Config.WarmPrompts): the run dated %s sent the same %d prompt lengths in the same order to the same server before it (%s)",
		before.Date, len(run.Requests), path.Base(w.WarmFrom)), "", nil
}

// fidUnitScale converts seconds (or tokens per second) to the figure's unit.
func fidUnitScale(unit string) (float64, bool) {
	switch unit {
	case "s", "tok/s":
		return 1, true
	case "ms":
		return 1e3, true
	}
	return 0, false
}

// fidNoTextShareMax is the share of a run's successful requests that
// returned no text from which its TTFT is a cross-check on the page: the
// rule the Lambda source's figures followed before the page counted the
// zeros (calib/published.yaml, its FP8 runs' use_note: "a run with 30% or
// more failures ... is cross-check"), now applied from the file to every
// source. Not tuned: dstack's runs (about 38%) are above it, Lambda's two
// Llama-3-70B runs (2 of 10) below.
const fidNoTextShareMax = 0.3

// fidClientTTFT is the percentile of each TTFT metric that clientTTFT
// takes for a replayed file with requests that returned no text.
var fidClientTTFT = map[string]float64{"ttft_median": 50, "ttft_p99": 99}

// fidMetric returns how a metric is read from a result; n is the
// requests of the run. skip says why it cannot be.
func fidMetric(metric, unit string, n int) (fidPicker, string, string) {
	k, ok := fidUnitScale(unit)
	if !ok && metric != "throughput_ratio" {
		return nil, "", fmt.Sprintf("unit %q of metric %s is not one the simulator's results convert to", unit, metric)
	}
	lat := func(get func(*sim.Result) float64) fidPicker {
		return func(r *sim.Result) (float64, bool) { v := get(r); return v * k, v > 0 }
	}
	switch metric {
	case "ttft_median":
		return lat(func(r *sim.Result) float64 { return r.TTFT.P50 }), "", ""
	case "ttft_p99":
		return lat(func(r *sim.Result) float64 { return r.TTFT.P99 }), "", ""
	case "ttft_mean":
		if n != 1 {
			return nil, "", "the simulator reports TTFT's median and p99 over requests, not its mean"
		}
		return lat(func(r *sim.Result) float64 { return r.TTFT.P50 }), "", ""
	case "tpot_median":
		return lat(func(r *sim.Result) float64 { return r.TPOT.P50 }), "", ""
	case "latency_per_token_p50":
		return lat(func(r *sim.Result) float64 { return r.TPOT.P50 }), "per-token decode latency taken as the median TPOT", ""
	case "itl_median":
		return lat(func(r *sim.Result) float64 { return r.ITL.P50 }), "", ""
	case "output_throughput":
		return lat(func(r *sim.Result) float64 { return r.OutputTokensPerS }), "", ""
	case "duration", "e2e_latency_batch", "e2e_latency_mean":
		return lat(func(r *sim.Result) float64 { return r.SimulatedSeconds }), "the run's span: first arrival to last completion", ""
	case "throughput_ratio":
		if unit != "ratio" {
			return nil, "", fmt.Sprintf("unit %q of metric %s: want ratio", unit, metric)
		}
		return func(r *sim.Result) (float64, bool) { return r.OutputTokensPerS, r.OutputTokensPerS > 0 }, "", ""
	case "decode_rate_per_request":
		return func(r *sim.Result) (float64, bool) {
			if r.TPOT.P50 <= 0 {
				return 0, false
			}
			return 1 / r.TPOT.P50, true
		}, "1 ÷ median TPOT", ""
	}
	return nil, "", fmt.Sprintf("metric %s is not read from a simulation here", metric)
}

// fidOperator evaluates an operator-level figure (Vidur's profiles) with
// the terms of a profile of its GPU: the linear layers of one decoder
// layer, one GEMM, or one all-reduce. The roofline has no such terms.
func fidOperator(f *Figure) (*fidPlan, error) {
	p := &fidPlan{}
	s := f.Setup
	w := s.Workload
	g, err := fidGPU(s.GPU)
	if err != nil {
		p.skip = fmt.Sprintf("no GPU preset for %q", s.GPU)
		return p, nil
	}
	if f.Unit != "ms" {
		p.skip = fmt.Sprintf("unit %q: operator figures are read in ms", f.Unit)
		return p, nil
	}
	tp := max(s.TP, 1)
	switch f.Metric {
	case "allreduce_time_median":
		if w.Bytes <= 0 || tp < 2 {
			p.skip = "an all-reduce figure needs its size in bytes and at least 2 workers"
			return p, nil
		}
		// One layer, one token of width bytes/2 (fp16 elements): the step
		// makes 2 all-reduce calls of that size.
		shape := sim.Shape{Layers: 1, Hidden: w.Bytes / 2, TP: tp, ActBytes: 2}
		p.op = func(prof *sim.Profile) float64 {
			return fidOpStep(prof, shape, sim.Step{PrefillTokens: 1}).AllReduceNs / 2 / 1e6
		}
		p.setup = fmt.Sprintf("one all-reduce of %s over %d× %s: the profile's all-reduce term", fidBytes(w.Bytes), tp, g.Name)
		p.note = "latency × scale(tp) + 2(tp−1)/tp × bytes ÷ bandwidth, over NVLink the first MiB at the kernel table's share of the link (sim.AllReduceLatencyScale, sim.AllReduceSmallLinkShare) and the rest at link × bw_eff; the roofline has no all-reduce term"
	case "linear_layers_time_per_layer", "op_time_median":
		m, mname, err := fidModel(s.Model)
		if err != nil {
			p.skip = err.Error()
			return p, nil
		}
		if w.NumTokens <= 0 {
			p.skip = "an operator figure needs its num_tokens"
			return p, nil
		}
		if m.Family != "llama" || m.MoE != nil || m.MLA != nil {
			p.skip = fmt.Sprintf("the operator figures are modelled for dense Llama layers, not %s", mname)
			return p, nil
		}
		params, what, gemms := fidLayerParams(m), "QKV, O, gate+up and down projections of one layer", sim.GEMMsPerLayer
		if f.Metric == "op_time_median" {
			if !strings.Contains(f.Ref, "mlp_up_proj") {
				p.skip = "only the gate+up projection (mlp_up_proj) of the operator figures is modelled as one GEMM"
				return p, nil
			}
			params, what, gemms = 2*float64(m.Hidden)*float64(m.Intermediate), "gate+up projection of one layer", 1
		}
		wb := float64(m.WeightDType.Bits()) / 8
		shape := sim.Shape{Layers: 1, Hidden: m.Hidden, TP: tp, ActBytes: 2,
			LinearFLOPsPerToken: 2 * params / float64(tp), DenseWeightBytes: params * wb / float64(tp), GEMMs: gemms}
		step := sim.Step{PrefillTokens: int64(w.NumTokens), PrefillSeqs: 1}
		p.op = func(prof *sim.Profile) float64 { return fidOpStep(prof, shape, step).LinearNs / 1e6 }
		p.setup = fmt.Sprintf("%s of %s at %d tokens, tp %d on %s: the profile's linear term", what, mname, w.NumTokens, tp, g.Name)
		p.note = "max((n + n½) × FLOPs ÷ (peak × compute_eff_max), weights ÷ (bandwidth × weight_bw_eff) + GEMMs × gemm_fixed_ns); the roofline has no per-term breakdown"
	default:
		p.skip = fmt.Sprintf("operator metric %s is not modelled", f.Metric)
		return p, nil
	}
	p.gpu, p.engine, p.opGPU = g.Name, sim.EngineVLLMV1, g
	return p, nil
}

// fidOpStep is the breakdown of one step of an operator alone under prof:
// no CUDA-graph padding.
func fidOpStep(prof *sim.Profile, shape sim.Shape, step sim.Step) sim.Breakdown {
	q := *prof
	q.CUDAGraph = sim.CUDAGraphTerm{}
	return q.StepTime(shape, step)
}

// fidLayerParams is one decoder layer's projection and MLP parameters in
// the Llama layout (GQA/MHA, gated MLP): QKV, O, gate+up, down.
func fidLayerParams(m model.Model) float64 {
	h, hd := float64(m.Hidden), float64(m.HeadDim)
	qkv := h * hd * float64(m.Heads+2*m.KVHeads)
	o := float64(m.Heads) * hd * h
	mlp := 3 * h * float64(m.Intermediate)
	return qkv + o + mlp
}

// fidBytes writes a byte count in MiB or KiB.
func fidBytes(b int) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}
