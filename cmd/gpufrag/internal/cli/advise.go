package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/advise"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
	"github.com/gpufrag/gpufrag/workload"
)

// adviseFlags: the space's text, the request's fields taken as given, the rest.
type adviseFlags struct {
	space                                          advise.SpaceText
	req                                            advise.Request
	trace, format, model, gpu, engineVersion, step string
	shard, out, refine                             string
	tp, maxContext, parallel                       int
	skipBadRows, json                              bool
}

func newAdviseCmd() *cobra.Command {
	f := adviseFlags{}
	def, search, slo := advise.DefaultSpace(), advise.DefaultSearch(), advise.DefaultSLO()
	cmd := &cobra.Command{Use: "advise", Short: "Recommend memory settings by the load they sustain on your workload",
		Long: advise.Help, Example: advise.Examples, Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAdvise(cmd, &f) }}
	fl, sp, in := cmd.Flags(), &f.space, &f.req.Inputs
	fl.StringVar(&f.trace, "trace", "", "request trace `FILE` (required; formats as gpufrag simulate)")
	fl.StringVar(&f.format, "format", "", "trace `FORMAT`: azure, mooncake, vidur, fineserve, burstgpt or jsonl (default: detected)")
	fl.IntVar(&in.Trace.MaxRows, "max-rows", 0, "read at most `N` requests of the trace (0: all)")
	fl.IntVar(&in.Trace.Run, "run", 0, "with a benchmark result file of several runs (an SGLang JSONL of a sweep), the run `N` to take (1-based)")
	fl.BoolVar(&f.skipBadRows, "skip-bad-rows", false, "skip trace rows that do not parse instead of failing")
	fl.StringVar(&f.model, "model", "", "model `NAME` (a preset) or path to a Hugging Face config.json (required)")
	fl.StringVar(&f.gpu, "gpu", "", "GPU `NAME` (required): "+strings.Join(model.GPUNames(), ", "))
	fl.IntVar(&f.tp, "tp", 1, "tensor-parallel degree `N`")
	fl.StringVar(&f.engineVersion, "engine-version", "", "the vLLM `RELEASE` the candidates stand for (0.8 to 0.23): its step-time overheads "+
		"(default: "+sim.DefaultEngineVersion(sim.EngineVLLMV1).String()+")")
	fl.StringVar(&f.step, "profile", "", "step-time `MODEL`: joint (the joint model's profile of --gpu) or roofline (default: "+sim.DefaultStepTime+")")
	fl.StringVar(&in.KVDType, "kv-dtype", "", "KV cache `DTYPE`: bf16, fp16, fp32, fp8 (e4m3), fp8_e5m2 or int8 (default: the model's)")
	fl.StringVar(&in.WeightDType, "weight-dtype", "", "weights' `DTYPE`: bf16, fp16, fp32, fp8 (e4m3), int8 or int4, as a quantized checkpoint serves them (default: the model's)")
	fl.IntVar(&f.maxContext, "max-context", 0, "longest sequence in tokens (default: the model's)")
	fl.StringArrayVar(&sp.KVs, "kv", nil, "KV strategy `SPEC`s, comma-separated or repeated; the first is the base (default "+def.KVList()+")")
	fl.StringArrayVar(&sp.Allocs, "alloc", nil, "allocator `SPEC`s (alloc/registry syntax); the first is the base (default "+def.AllocList()+")")
	fl.Float64SliceVar(&sp.Utils, "gpu-memory-utilization", def.Utils, "gpu_memory_utilization `VALUES`; the first is the base")
	fl.IntSliceVar(&sp.Buckets, "bucket", def.Buckets, "prompt bucket `SIZES` in tokens (0: off); the first is the base")
	fl.StringSliceVar(&sp.Defrags, "defrag", def.Defrags, "defrag `POLICIES` (off, threshold, adaptive, online, offline); the first is the base")
	fl.IntSliceVar(&sp.MaxBatchTokens, "max-num-batched-tokens", def.MaxBatchTokens, "max_num_batched_tokens `VALUES` (the token budget of a step; smaller keeps long prefills out of decode steps); the first is the base")
	fl.IntSliceVar(&sp.MaxSeqs, "max-num-seqs", def.MaxSeqs, "max_num_seqs `VALUES`; the first is the base")
	fl.StringSliceVar(&sp.PrefixCaching, "prefix-caching", def.PrefixCaching, "prefix caching `VALUES` (on, off); the first is the base; off is tried only where the trace shares prefixes")
	fl.BoolVar(&sp.Experimental, "experimental", false, "add what is not a stock setting of the engine in use: the other engine families (contiguous-grow, contiguous-max) and research setups no stock engine offers (vmm KV, the sizeclass allocator, the threshold and online defrag policies, labelled experimental)")
	fl.BoolVar(&sp.Full, "full", false, "cross every dimension instead of the grouped design (many more simulations)")
	fl.BoolVar(&f.req.Exhaustive, "exhaustive", false, "bisect every candidate's rate to the end, not only those that can reach the top two (same recommendation, precise rates for all; what shards do)")
	fl.StringVar(&f.refine, "refine", "", "second stage: cross the best setups of the advice in `FILE` (a previous --json output on the same trace) with every utilization and bucket")
	fl.IntVar(&f.req.RefineTop, "refine-top", advise.DefaultRefineTop, "setups (kv, allocator, defrag, engine limits, prefix caching) the second stage crosses with every utilization and bucket (`K`)")
	fl.IntVar(&f.req.Extend, "extend", advise.DefaultExtend, "when nothing meets the SLO, candidates (`N`) the search may add past the space in the direction its advice names: max_num_batched_tokens halved down to max_num_seqs, max_num_seqs halved down to 1 (or doubled); 0: none")
	fl.Float64Var(&in.SLO.TTFTP99, "slo-ttft-p99", slo.TTFTP99, "SLO: p99 time to first token in `SECONDS`")
	fl.Float64Var(&in.SLO.TPOTP99, "slo-tpot-p99", slo.TPOTP99, "SLO: p99 time per output token in `SECONDS`")
	fl.Float64Var(&in.SLO.ITLP99, "slo-itl-p99", slo.ITLP99, "SLO: p99 inter-token latency in `SECONDS`, over every gap between a request's streamed tokens (0: none); catches the stalls a prefill puts into decodes, which TPOT averages away")
	fl.Float64Var(&in.Search.StartRPS, "start-rate", 0, "first rate tried in requests per second `R` (default: the trace's own mean rate; 1 for a trace without arrival times, which gets Poisson arrivals at 1 req/s)")
	fl.IntVar(&in.Search.BracketSteps, "bracket-steps", search.BracketSteps, "doublings or halvings of the rate to find a bracket (`N`)")
	fl.IntVar(&in.Search.BisectSteps, "bisect-steps", search.BisectSteps, "geometric bisections inside the bracket (`N`; 4 resolve the rate to about 4%)")
	fl.IntVar(&f.parallel, "parallel", 0, "candidates searched at once (default: GOMAXPROCS)")
	fl.StringVar(&f.shard, "shard", "", "run only shard `i/n` (candidates with index % n == i) and write a partial result for `gpufrag advise merge`")
	fl.StringVar(&f.out, "out", "", "write the partial result JSON to `FILE` (with --shard; stdout when absent)")
	fl.BoolVar(&f.json, "json", false, "print the advice as JSON (schema in docs/json.md)")
	cmd.AddCommand(newAdviseMergeCmd())
	needsFlag(cmd, "refine", "it picks the setups the second stage crosses", "refine-top")
	return cmd
}

func newAdviseMergeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "merge FILE...", Short: "Merge the partial results of sharded advise runs", Long: advise.MergeHelp,
		Example: `  # The shards of gpufrag advise --help's example, as JSON:
  gpufrag advise --trace examples/azure_conv.csv --model llama-3.1-8b --gpu a100-80g --shard 0/2 --out shard-0.json
  gpufrag advise --trace examples/azure_conv.csv --model llama-3.1-8b --gpu a100-80g --shard 1/2 --out shard-1.json
  gpufrag advise merge shard-*.json --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(cmd, "merge needs the shard files written by gpufrag advise --shard i/n --out FILE")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, files []string) error {
			parts, err := advise.ReadPartialFiles(files)
			if err != nil {
				return err
			}
			rep, err := advise.Merge(parts, files)
			if err != nil {
				return err
			}
			return printAdvice(cmd.OutOrStdout(), rep, asJSON)
		}}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the advice as JSON")
	return cmd
}

func runAdvise(cmd *cobra.Command, f *adviseFlags) (err error) {
	stdout, stderr, set, req, in := cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.Flags().Changed, &f.req, &f.req.Inputs
	for _, req := range []struct{ name, v string }{{"trace", f.trace}, {"model", f.model}, {"gpu", f.gpu}} {
		if req.v == "" {
			return usageErrorf(cmd, "--%s is required", req.name)
		}
	}
	defer engineGC()()
	engineHeap()
	f.space.DefragsGiven = set("defrag")
	if in.Space, err = f.space.Space(func(v string, known []string) string {
		return human.DidYouMean(human.SpecKind(v), human.SpecKinds(known))
	}); err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	switch err := advise.CheckLimits(f.tp, in.SLO, f.refine != "", f.space.Full, req.RefineTop, req.Extend); {
	case err != nil:
		return usageErrorf(cmd, "%v", err)
	case set("start-rate") && checkRate(cmd, "--start-rate", in.Search.StartRPS) != nil:
		return checkRate(cmd, "--start-rate", in.Search.StartRPS)
	case in.Trace.MaxRows < 0 || f.maxContext < 0:
		return usageErrorf(cmd, "--max-rows and --max-context: want 0 or a positive number")
	case set("parallel") && f.parallel < 1:
		return usageErrorf(cmd, "--parallel %d: want at least 1", f.parallel)
	case set("out") && !set("shard") && f.out == "":
		return usageErrorf(cmd, "--out needs a file name")
	}
	if err := checkOutputs(cmd, []fileFlag{{"--out", f.out}},
		[]fileFlag{{"--trace", f.trace}, {"--refine", f.refine}, {"--model", model.ConfigPath(f.model)}}); err != nil {
		return err
	}
	req.Shards, req.PartialOnly, req.PrefixCachingGiven, req.Workers = 1, set("shard"), set("prefix-caching"), f.parallel
	if set("shard") {
		if req.Shard, req.Shards, err = advise.ParseShard(f.shard); err != nil {
			return usageErrorf(cmd, "--shard: %v", err)
		}
	}
	if _, err := workload.ParseFormat(f.format); err != nil {
		return usageErrorf(cmd, "--format: %v%s", err, human.DidYouMean(f.format, workload.FormatNames()))
	}
	e := advise.Engine{Arg: f.model, TP: f.tp, MaxContext: f.maxContext}
	if e.Model, err = checkModelFlag(cmd, "--model", f.model); err != nil {
		return err
	}
	if e.GPU, err = checkGPUFlag(cmd, "--gpu", f.gpu); err != nil {
		return err
	}
	if set("engine-version") {
		if _, err := sim.ParseEngineVersion(sim.EngineVLLMV1, f.engineVersion); err != nil {
			if _, v0 := sim.ParseEngineVersion(sim.EngineVLLMV0, f.engineVersion); v0 == nil {
				return usageErrorf(cmd, "--engine-version %s: advise sweeps the settings of vLLM's V1 engine, whose releases start at 0.8", f.engineVersion)
			}
		}
		if e.Version, err = checkEngineVersion(cmd, sim.EngineVLLMV1.String(), f.engineVersion); err != nil {
			return err
		}
	}
	if e.StepTime = strings.ToLower(f.step); set("profile") && e.StepTime != sim.StepTimeJoint && e.StepTime != sim.StepTimeRoofline {
		return usageErrorf(cmd, "--profile %q: want joint or roofline%s", f.step, human.DidYouMean(f.step, []string{sim.StepTimeJoint, sim.StepTimeRoofline}))
	}
	if in.KVDType != "" {
		if e.KVDType, err = model.ParseKVDType(in.KVDType); err != nil {
			return usageErrorf(cmd, "--kv-dtype: %v%s", err, human.DidYouMean(in.KVDType, model.KVDTypeNames()))
		}
	}
	if in.WeightDType != "" {
		if e.WeightDType, err = model.ParseDType(in.WeightDType); err != nil {
			return usageErrorf(cmd, "--weight-dtype: %v", err)
		}
		if e.WeightDType == model.FP8E5M2 {
			return usageErrorf(cmd, "--weight-dtype fp8_e5m2: vLLM serves fp8 weights as e4m3 (--quantization fp8, an fp8 checkpoint); give --weight-dtype fp8")
		}
		in.WeightDType = e.WeightDType.String()
		if e.WeightDType == e.Model.WeightDType {
			e.WeightDType, in.WeightDType = 0, "" // the model's own: nothing to change, nothing to deploy
		}
	}
	if err := req.SetEngine(e); err != nil {
		return err
	}
	if err := checkInputs(fileFlag{"--trace", f.trace}, fileFlag{"--refine", f.refine}); err != nil {
		return err
	}
	if in.Trace.Run < 0 {
		return usageErrorf(cmd, "--run %d: want a run's number, from 1 (0: a file of one run)", in.Trace.Run)
	}
	if tf, _ := workload.ParseFormat(f.format); in.Trace.Run != 0 && tf != workload.Auto && tf != workload.VLLMBench {
		return usageErrorf(cmd, "--run %d: only benchmark result files (format vllm-bench) hold runs, not %s", in.Trace.Run, tf)
	}
	t, sum, err := scenario.ReadTrace(&scenario.Trace{File: f.trace, Format: f.format, MaxRows: in.Trace.MaxRows, SkipBadRows: f.skipBadRows, Run: in.Trace.Run}, openNamed)
	if err != nil {
		return inFlagFile("--trace", f.trace, adviseRunHint(err))
	}
	if d := t.Summary(); d != "" {
		fmt.Fprintf(stderr, "gpufrag: warning: %s\n", untrusted.Printable(d))
	}
	if b := t.Bench; b != nil && b.MaxConcurrency > 0 {
		fmt.Fprintf(stderr, "gpufrag: warning: %s: its client held at most %d requests in flight (max_concurrency); advise sends the requests "+
			"at each rate it tries, with no such cap, so its rates are an open loop's\n", untrusted.Printable(filepath.Base(f.trace)), b.MaxConcurrency)
	}
	if b := t.Bench; b != nil {
		for _, w := range adviseSetupWarnings(filepath.Base(f.trace), b, &req.Base, cmd.Flags()) {
			fmt.Fprintf(stderr, "gpufrag: warning: %s\n", untrusted.Printable(w))
		}
	}
	req.Trace, in.Trace.File, in.Trace.SHA256 = t, filepath.Base(f.trace), sum
	if f.refine != "" {
		if req.Refine, err = advise.ReadReportFile(f.refine); err != nil {
			return err
		}
	}
	h := advise.ProgressHooks(stderr, req.Shard, req.Shards)
	if set("shard") || f.out != "" {
		h.Partial = advise.PartialTo(stdout, f.out)
	}
	rep, err := advise.Advise(*req, h)
	if bad := (*advise.BadRequestError)(nil); errors.As(err, &bad) {
		return usageErrorf(cmd, "%v", err)
	} else if re := (*advise.RefineError)(nil); errors.As(err, &re) {
		return fmt.Errorf("--refine %s: %w", f.refine, re.Err)
	} else if err != nil || rep == nil {
		return err
	}
	return printAdvice(stdout, rep, f.json)
}

func printAdvice(w io.Writer, rep *advise.Report, asJSON bool) error {
	if err := advise.AddCalibBands(rep); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, rep, false)
	}
	return advise.WriteTextWidth(w, rep, tableWidth(w))
}

// scenarioRunHint is how scenario.ReadTrace names the option that picks
// a benchmark file's run: the scenario's field and simulate's flag.
const scenarioRunHint = " (workload.trace.run, --run N)"

// adviseRunHint names --run alone where err names the scenario field too:
// advise takes no scenario.
func adviseRunHint(err error) error {
	if msg, ok := strings.CutSuffix(err.Error(), scenarioRunHint); ok {
		return &retoldError{msg + " (--run N)", err}
	}
	return err
}

// retoldError is err with another message.
type retoldError struct {
	msg string
	err error
}

func (e *retoldError) Error() string { return e.msg }
func (e *retoldError) Unwrap() error { return e.err }
