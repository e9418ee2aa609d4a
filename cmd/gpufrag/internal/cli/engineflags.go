package cli

import (
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// engineFlags describe the serving setup a command runs: the parallelism
// and the types of the model, the engine and its scheduler's limits.
// simulate and calibrate take them alike (addEngineFlags,
// applyEngineFlags): the same names, parsed and checked the same way, each
// written into the scenario field of the same name, so that calibrate can
// describe any setup simulate can run (scenario.EngineConfig turns them
// into the sim.Config both run).
type engineFlags struct {
	tp                      int
	kvDType, weightDType    string
	unquantized             string
	engine, engineVersion   string
	mixedChunk              bool
	schedulerSteps          int
	util                    float64
	maxBatchTokens, maxSeqs int
	maxContext              int
	chunked, prefixCaching  bool
}

// engineFlagFields are the engine flags and the scenario fields they set.
var engineFlagFields = []struct{ flag, field string }{
	{"tp", "tp"}, {"kv-dtype", "kv_dtype"}, {"weight-dtype", "weight_dtype"}, {"unquantized", "unquantized"}, {"engine", "engine.name"},
	{"engine-version", "engine.version"}, {"mixed-chunk", "engine.mixed_chunk"}, {"num-scheduler-steps", "engine.num_scheduler_steps"}, {"gpu-memory-utilization", "engine.gpu_memory_utilization"},
	{"max-batch-tokens", "engine.max_batch_tokens"}, {"max-seqs", "engine.max_seqs"}, {"max-context", "engine.max_context"},
	{"chunked-prefill", "engine.chunked_prefill"}, {"prefix-caching", "engine.prefix_caching"},
}

// addEngineFlags defines the engine flags on fl.
func addEngineFlags(fl *pflag.FlagSet, f *engineFlags) {
	fl.IntVar(&f.tp, "tp", 0, "tensor-parallel degree `N` (divides weights and KV heads)")
	fl.StringVar(&f.kvDType, "kv-dtype", "", "KV cache `DTYPE`: bf16, fp16, fp32, fp8 (e4m3), fp8_e5m2 or int8")
	fl.Float64Var(&f.util, "gpu-memory-utilization", 0, "share of GPU memory the engine may use, as vLLM's (default 0.9)")
	fl.IntVar(&f.maxBatchTokens, "max-batch-tokens", 0, "token budget per step (default 8192; with --engine sglang, its chunked_prefill_size for the GPU: 2048 below 35 GiB, 4096 below 60 GiB)")
	fl.IntVar(&f.maxSeqs, "max-seqs", 0, "running requests per step (default 256)")
	fl.BoolVar(&f.chunked, "chunked-prefill", true, "split long prompts across steps")
	fl.BoolVar(&f.prefixCaching, "prefix-caching", true, "let paged reuse cached prompt blocks of requests with prefix ids (Mooncake hash_ids, chat sessions)")
	fl.IntVar(&f.maxContext, "max-context", 0, "longest sequence in tokens (default: the model's)")
	fl.StringVar(&f.engine, "engine", "", "serving `ENGINE` whose scheduler composes the steps: vllm-v1 (default: prefills and decodes share steps), "+
		"vllm-v0 (prompts run in steps of their own while decodes wait, the vLLM paper's; chunked prefill off by default up to a 32K context), "+
		"sglang (prefill steps first, then decode steps)")
	fl.StringVar(&f.engineVersion, "engine-version", "", "the engine's `RELEASE` (0.8.3; vLLM 0.1 to 0.23, SGLang 0.1 to 0.5): the step-time overheads of that release "+
		"(default: a recent one: vLLM "+sim.DefaultEngineVersion(sim.EngineVLLMV1).String()+" for vllm-v1, "+sim.DefaultEngineVersion(sim.EngineVLLMV0).String()+
		" for vllm-v0, SGLang "+sim.DefaultEngineVersion(sim.EngineSGLang).String()+")")
	fl.BoolVar(&f.mixedChunk, "mixed-chunk", false, "with --engine sglang, let running decodes join the prefill steps (SGLang's --enable-mixed-chunk)")
	fl.IntVar(&f.schedulerSteps, "num-scheduler-steps", 0, "with --engine vllm-v0 from 0.6.0, --chunked-prefill=false and a step-time profile (not roofline), vLLM's multi-step scheduling: "+
		"the scheduler runs once every `N` decode steps, so each pays 1/N of the host's step time (0 or 1: off)")
	fl.StringVar(&f.weightDType, "weight-dtype", "", "store the weights as `DTYPE`: bf16, fp16, fp8 (FP8 math where the profile has an FP8 peak), int8 or int4 "+
		"(weight-only, BF16 math) (default: the model's); it changes weight memory, the KV budget and the bytes a step reads")
	fl.StringVar(&f.unquantized, "unquantized", "", "`MODULES` quantized weights keep in 16 bits, as a checkpoint's modules_to_not_convert lists them: "+
		"self_attn (every layer's attention), layers.N (a whole layer), layers.N.self_attn, layers.N.mlp, comma-separated (default: the model's; needs weights under 16 bits; the embedding, "+
		"lm_head and norms stay in 16 bits in any case). Meta's Llama-3.1-405B-FP8: self_attn,layers.0,layers.125")
}

// applyEngineFlags checks the engine flags that were set and writes them
// into s; --tp (or --model) is checked against s's model. An error is a
// usage error naming the flag.
func applyEngineFlags(cmd *cobra.Command, f *engineFlags, s *scenario.Scenario) error {
	set := cmd.Flags().Changed
	if set("kv-dtype") {
		if _, err := model.ParseKVDType(f.kvDType); err != nil {
			return usageErrorf(cmd, "--kv-dtype: %v%s", err, human.DidYouMean(f.kvDType, model.KVDTypeNames()))
		}
		s.KVDType = f.kvDType
	}
	if set("tp") {
		if f.tp < 1 {
			return usageErrorf(cmd, "--tp %d: want at least 1", f.tp)
		}
		s.TP = f.tp
	}
	if set("model") || set("tp") {
		m, err := checkModelFlag(cmd, "--model", s.Model)
		if err != nil {
			return err
		}
		if err := m.ValidateTP(max(s.TP, 1)); err != nil {
			which := "the scenario's model " + s.Model
			if set("model") {
				which = "--model " + s.Model
			}
			return usageErrorf(cmd, "--tp %d with %s: %v", max(s.TP, 1), which, err)
		}
	}
	if set("gpu-memory-utilization") {
		if !(f.util > 0 && f.util <= 1) {
			return usageErrorf(cmd, "--gpu-memory-utilization %v: want a share in (0, 1]", f.util)
		}
		s.Engine.GPUMemoryUtilization = f.util
	}
	for _, x := range []struct {
		name string
		v    int
		dst  *int
	}{{"max-batch-tokens", f.maxBatchTokens, &s.Engine.MaxBatchTokens}, {"max-seqs", f.maxSeqs, &s.Engine.MaxSeqs},
		{"max-context", f.maxContext, &s.Engine.MaxContext}} {
		if set(x.name) {
			if x.v < 1 {
				return usageErrorf(cmd, "--%s %d: want a positive number", x.name, x.v)
			}
			*x.dst = x.v
		}
	}
	if set("chunked-prefill") {
		s.Engine.ChunkedPrefill = &f.chunked
	}
	if set("prefix-caching") {
		s.Engine.PrefixCaching = &f.prefixCaching
	}
	if set("engine") {
		if _, err := sim.ParseEngine(f.engine); err != nil {
			return usageErrorf(cmd, "--engine %q: want vllm-v1, vllm-v0 or sglang%s", f.engine, human.DidYouMean(f.engine, sim.EngineNames()))
		}
		s.Engine.Name = f.engine
	}
	// The engine's release, after --engine, which its default and its known
	// releases depend on.
	if set("engine-version") {
		v, err := checkEngineVersion(cmd, s.Engine.Name, f.engineVersion)
		if err != nil {
			return err
		}
		s.Engine.Version = v
	}
	if set("mixed-chunk") {
		s.Engine.MixedChunk = f.mixedChunk
	}
	if set("engine") || set("mixed-chunk") {
		if e, err := sim.ParseEngine(s.Engine.Name); s.Engine.MixedChunk && (s.Engine.Name == "" || err != nil || e != sim.EngineSGLang) {
			return usageErrorf(cmd, "--mixed-chunk is SGLang's --enable-mixed-chunk: it needs --engine sglang")
		}
	}
	if set("num-scheduler-steps") {
		if f.schedulerSteps < 0 {
			return usageErrorf(cmd, "--num-scheduler-steps %d: want 0 or more (0 or 1: off)", f.schedulerSteps)
		}
		s.Engine.SchedulerSteps = f.schedulerSteps
	}
	if set("engine") || set("num-scheduler-steps") {
		if e, err := sim.ParseEngine(s.Engine.Name); s.Engine.SchedulerSteps > 1 && (s.Engine.Name == "" || err != nil || e != sim.EngineVLLMV0) {
			if !set("num-scheduler-steps") {
				return usageErrorf(cmd, "--engine %s: the scenario's engine.num_scheduler_steps %d is vLLM V0's multi-step scheduling, which needs engine vllm-v0; "+
					"pass --num-scheduler-steps 0 to turn it off", s.Engine.Name, s.Engine.SchedulerSteps)
			}
			return usageErrorf(cmd, "--num-scheduler-steps is vLLM V0's multi-step scheduling: it needs --engine vllm-v0")
		}
	}
	if set("weight-dtype") {
		if _, err := model.ParseDType(f.weightDType); err != nil {
			return usageErrorf(cmd, "--weight-dtype %q: want bf16, fp16, fp8, int8 or int4%s", f.weightDType,
				human.DidYouMean(f.weightDType, []string{"bf16", "fp16", "fp8", "int8", "int4"}))
		}
		s.WeightDType = f.weightDType
	}
	if set("unquantized") {
		if _, err := model.ParseUnquantized(f.unquantized); err != nil {
			return usageErrorf(cmd, "--unquantized %q: %v", f.unquantized, err)
		}
		s.Unquantized = f.unquantized
	}
	return nil
}
