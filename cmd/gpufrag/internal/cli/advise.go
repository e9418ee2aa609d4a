package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpufrag/gpufrag/advise"
	"github.com/gpufrag/gpufrag/alloc/spec"
	"github.com/gpufrag/gpufrag/internal/loc"
	"github.com/gpufrag/gpufrag/internal/progress"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
	"github.com/gpufrag/gpufrag/workload"
	"github.com/spf13/cobra"
)

// adviseFlags are the flags of `gpufrag advise`.
type adviseFlags struct {
	trace, format, model, gpu, kvDType string
	engineVersion, profile             string
	tp, maxRows, maxContext            int
	skipBadRows                        bool
	kvs, allocs, defrags               []string
	utils                              []float64
	buckets                            []int
	batchTokens, seqs                  []int
	prefix                             []string
	full, experimental, exhaustive     bool
	ttft, tpot                         float64
	startRate                          float64
	bracket, bisect                    int
	parallel                           int
	shard, out                         string
	refine                             string
	refineTop, extend                  int
	json                               bool
}

func newAdviseCmd() *cobra.Command {
	f := adviseFlags{}
	def, search := advise.DefaultSpace(), advise.DefaultSearch()
	slo := advise.DefaultSLO()
	cmd := &cobra.Command{
		Use:   "advise",
		Short: "Recommend memory settings by the load they sustain on your workload",
		Long:  adviseLong,
		Example: `  # The default sweep (26 stock settings of vLLM with paged KV) on your trace, model and GPU:
  gpufrag advise --trace AzureLLMInferenceTrace_conv.csv --model llama-3.1-8b --gpu a100-80g

  # Only paged block sizes and two utilizations, as JSON:
  gpufrag advise --trace conv.csv --model ./config.json --gpu h100-80g --tp 2 \
      --kv paged:16,paged:32 --alloc caching --gpu-memory-utilization 0.9,0.95 --json

  # Then cross the best 3 setups with every utilization and bucket size:
  gpufrag advise --trace conv.csv --model llama-3.1-8b --gpu a100-80g --json > stage1.json
  gpufrag advise --trace conv.csv --model llama-3.1-8b --gpu a100-80g --refine stage1.json

  # Split across 4 machines (see deploy/kubernetes/advise-job.yaml), then merge:
  gpufrag advise --trace conv.csv --model llama-3.1-8b --gpu a100-80g --shard 2/4 --out shard-2.json
  gpufrag advise merge shard-*.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAdvise(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.trace, "trace", "", "request trace `FILE` (required; formats as gpufrag simulate)")
	fl.StringVar(&f.format, "format", "", "trace `FORMAT`: azure, mooncake, vidur, fineserve, burstgpt or jsonl (default: detected)")
	fl.IntVar(&f.maxRows, "max-rows", 0, "read at most `N` requests of the trace (0: all)")
	fl.BoolVar(&f.skipBadRows, "skip-bad-rows", false, "skip trace rows that do not parse instead of failing")
	fl.StringVar(&f.model, "model", "", "model `NAME` (a preset) or path to a Hugging Face config.json (required)")
	fl.StringVar(&f.gpu, "gpu", "", "GPU `NAME` (required): "+strings.Join(modelGPUNames(), ", "))
	fl.IntVar(&f.tp, "tp", 1, "tensor-parallel degree `N`")
	fl.StringVar(&f.engineVersion, "engine-version", "", "the vLLM `RELEASE` the candidates stand for (0.8 to 0.23): its step-time overheads "+
		"(default: "+sim.DefaultEngineVersion(sim.EngineVLLMV1).String()+")")
	fl.StringVar(&f.profile, "profile", "", "step-time `MODEL`: joint (the joint model's profile of --gpu) or roofline (default: "+sim.DefaultStepTime+")")
	fl.StringVar(&f.kvDType, "kv-dtype", "", "KV cache `DTYPE`: bf16, fp16, fp32, fp8 (e4m3), fp8_e5m2 or int8 (default: the model's)")
	fl.IntVar(&f.maxContext, "max-context", 0, "longest sequence in tokens (default: the model's)")
	fl.StringArrayVar(&f.kvs, "kv", nil, "KV strategy `SPEC`s, comma-separated or repeated; the first is the base (default "+def.KVList()+")")
	fl.StringArrayVar(&f.allocs, "alloc", nil, "allocator `SPEC`s (alloc/spec syntax); the first is the base (default "+def.AllocList()+")")
	fl.Float64SliceVar(&f.utils, "gpu-memory-utilization", def.Utils, "gpu_memory_utilization `VALUES`; the first is the base")
	fl.IntSliceVar(&f.buckets, "bucket", def.Buckets, "prompt bucket `SIZES` in tokens (0: off); the first is the base")
	fl.StringSliceVar(&f.defrags, "defrag", def.Defrags, "defrag `POLICIES` (off, threshold, adaptive, online, offline); the first is the base")
	fl.IntSliceVar(&f.batchTokens, "max-num-batched-tokens", def.MaxBatchTokens, "max_num_batched_tokens `VALUES` (the token budget of a step; smaller keeps long prefills out of decode steps); the first is the base")
	fl.IntSliceVar(&f.seqs, "max-num-seqs", def.MaxSeqs, "max_num_seqs `VALUES`; the first is the base")
	fl.StringSliceVar(&f.prefix, "prefix-caching", def.PrefixCaching, "prefix caching `VALUES` (on, off); the first is the base; off is tried only where the trace shares prefixes")
	fl.BoolVar(&f.experimental, "experimental", false, "add what is not a stock setting of the engine in use: the other engine families (contiguous-grow, contiguous-max) and research setups no stock engine offers (vmm KV, the sizeclass allocator, the threshold and online defrag policies, labelled experimental)")
	fl.BoolVar(&f.full, "full", false, "cross every dimension instead of the grouped design (many more simulations)")
	fl.BoolVar(&f.exhaustive, "exhaustive", false, "bisect every candidate's rate to the end, not only those that can reach the top two (same recommendation, precise rates for all; what shards do)")
	fl.StringVar(&f.refine, "refine", "", "second stage: cross the best setups of the advice in `FILE` (a previous --json output on the same trace) with every utilization and bucket")
	fl.IntVar(&f.refineTop, "refine-top", advise.DefaultRefineTop, "setups (kv, allocator, defrag, engine limits, prefix caching) the second stage crosses with every utilization and bucket (`K`)")
	fl.IntVar(&f.extend, "extend", advise.DefaultExtend, "when nothing meets the SLO, candidates (`N`) the search may add past the space in the direction its advice names: max_num_batched_tokens halved down to max_num_seqs, max_num_seqs halved down to 1 (or doubled); 0: none")
	fl.Float64Var(&f.ttft, "slo-ttft-p99", slo.TTFTP99, "SLO: p99 time to first token in `SECONDS`")
	fl.Float64Var(&f.tpot, "slo-tpot-p99", slo.TPOTP99, "SLO: p99 time per output token in `SECONDS`")
	fl.Float64Var(&f.startRate, "start-rate", 0, "first rate tried in requests per second `R` (default: the trace's own mean rate)")
	fl.IntVar(&f.bracket, "bracket-steps", search.BracketSteps, "doublings or halvings of the rate to find a bracket (`N`)")
	fl.IntVar(&f.bisect, "bisect-steps", search.BisectSteps, "geometric bisections inside the bracket (`N`; 4 resolve the rate to about 4%)")
	fl.IntVar(&f.parallel, "parallel", 0, "candidates searched at once (default: GOMAXPROCS)")
	fl.StringVar(&f.shard, "shard", "", "run only shard `i/n` (candidates with index % n == i) and write a partial result for `gpufrag advise merge`")
	fl.StringVar(&f.out, "out", "", "write the partial result JSON to `FILE` (with --shard; stdout when absent)")
	fl.BoolVar(&f.json, "json", false, "print the advice as JSON (schema in docs/json.md)")
	cmd.AddCommand(newAdviseMergeCmd())
	needsFlag(cmd, "refine", "it picks the setups the second stage crosses", "refine-top")
	return cmd
}

const adviseLong = `Advise sweeps the settings a user controls (KV strategy and block size,
gpu_memory_utilization, max_num_batched_tokens, max_num_seqs, allocator and
PYTORCH_ALLOC_CONF, prefix caching, prompt bucket size) on your own
workload, and recommends the one that sustains the most load with no
out-of-memory failures within the latency SLO. By default only stock
settings of the engine in use are candidates: vLLM with paged KV (the
first --kv names the engine family: paged, contiguous or vmm).
--experimental adds the other engine families gpufrag models (contiguous
KV: plain PyTorch/HF serving, FasterTransformer-style reservation) and
research setups (vmm KV, the sizeclass allocator, defrag policies,
labelled experimental).

For each candidate it searches the sustainable rate: the highest request
rate (the trace's arrivals rescaled) at which the simulated engine has no
OOM failures, no activation OOMs and no unfinished requests, and holds the
SLO (--slo-ttft-p99, default 2 s; --slo-tpot-p99, default 0.1 s). The
search starts at the trace's own rate, doubles or halves it up to
--bracket-steps times until the outcome flips, then bisects the bracket
geometrically --bisect-steps times: at most 1 + 5 + 4 = 10 simulations per
candidate, the same rates for the same outcomes, so results are
deterministic and do not depend on --parallel.

Candidates (the first value of each list is the base): every valid KV ×
allocator pair at the base; each other value of every other dimension for
every KV strategy on the base allocator (defrag only for contiguous KV;
prefix caching off only where the trace shares prefixes). The default
space has 26 candidates (28 with shared prefixes); --full crosses
everything instead. A second stage, --refine FILE with the --json output of
the first, crosses the best --refine-top setups with every utilization and
bucket size.

The recommendation meets the SLO with the highest sustainable rate; rates
within the search's resolution (4.4% with 4 bisections) tie, and ties go to
the setting with fewer changes from the engine's defaults, then lower
fragmentation p99 and peak memory. When no candidate meets the SLO at any
rate tried, the recommendation is the best effort ("meets_slo": false): the
candidate of the engine in use nearest the objective that binds (never
another engine family's), with the value it reaches and the setting to
change. Where that advice names a direction (the smallest
max_num_batched_tokens or max_num_seqs tried came nearest, or the largest),
the search goes on past the space in it: the best effort with that limit
halved (or doubled), round after round, until something meets the SLO, the
limit stops helping, vLLM's bound is reached (max_num_batched_tokens >=
max_num_seqs >= 1) or --extend candidates were added (default 8; 0: none);
the advice says how far it went. Where TPOT p99 still binds, it says
whether requests with few output tokens set it, with figures
("short_outputs"): their TPOT is the mean of few decode steps, so one step
that carries other requests' prefills decides it. The deploy command names
the model by its Hugging Face id (a preset's repository or the config's
_name_or_path) and sets every flag the recommendation needs.

The search runs coarse to fine: every candidate's bracket first, then the
bisection only for the candidates whose bracket reaches the top two (the
others cannot be recommended or runner-up, and are reported with their
rate known to a factor of 2; --exhaustive bisects them all). Each run
stops as soon as it is certain to fail (its first OOM, or more than 1% of
requests past an objective). Neither changes the recommendation.

Large sweeps split into shards (--shard i/n --out FILE, one per machine or
Kubernetes Indexed Job pod); 'gpufrag advise merge' checks that the shards
come from the same inputs and cover every candidate once, and prints what
an unsharded --exhaustive --extend 0 run would (going past the space needs
the trace).`

func newAdviseMergeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "merge FILE...",
		Short: "Merge the partial results of sharded advise runs",
		Long: `Merge reads the partial results written by 'gpufrag advise --shard i/n --out FILE',
checks that they come from the same trace, flags and candidate list (their
input digest), that there is one file per shard and that together they
cover every candidate exactly once, and prints the advice an unsharded run
with --extend 0 prints, byte for byte.`,
		Example: `  gpufrag advise merge /results/shard-*.json --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(cmd, "merge needs the shard files written by gpufrag advise --shard i/n --out FILE")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, files []string) error {
			parts := make([]*advise.Partial, len(files))
			for i, name := range files {
				fh, err := os.Open(name)
				if err != nil {
					return err
				}
				parts[i], err = advise.ReadPartial(fh, name)
				fh.Close()
				if err != nil {
					return err
				}
			}
			rep, err := advise.Merge(parts, files)
			if err != nil {
				return err
			}
			return printAdvice(cmd.OutOrStdout(), rep, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the advice as JSON")
	return cmd
}

func runAdvise(cmd *cobra.Command, f *adviseFlags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	set := cmd.Flags().Changed
	for _, req := range []struct{ name, v string }{{"trace", f.trace}, {"model", f.model}, {"gpu", f.gpu}} {
		if req.v == "" {
			return usageErrorf(cmd, "--%s is required", req.name)
		}
	}
	space, err := adviseSpace(f, set)
	if err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	switch {
	case f.tp < 1:
		return usageErrorf(cmd, "--tp %d: want at least 1", f.tp)
	case !(f.ttft > 0) || !(f.tpot > 0):
		return usageErrorf(cmd, "--slo-ttft-p99 %v, --slo-tpot-p99 %v: want positive seconds", f.ttft, f.tpot)
	case set("start-rate") && checkRate(cmd, "--start-rate", f.startRate) != nil:
		return checkRate(cmd, "--start-rate", f.startRate)
	case f.maxRows < 0 || f.maxContext < 0:
		return usageErrorf(cmd, "--max-rows and --max-context: want 0 or a positive number")
	case set("parallel") && f.parallel < 1:
		return usageErrorf(cmd, "--parallel %d: want at least 1", f.parallel)
	case set("out") && !set("shard") && f.out == "":
		return usageErrorf(cmd, "--out needs a file name")
	case f.refine != "" && f.full:
		return usageErrorf(cmd, "--refine and --full: choose one (--full already crosses everything)")
	case f.refineTop < 1:
		return usageErrorf(cmd, "--refine-top %d: want at least 1", f.refineTop)
	case f.extend < 0:
		return usageErrorf(cmd, "--extend %d: want 0 or more candidates", f.extend)
	}
	if err := checkOutputs(cmd, []fileFlag{{"--out", f.out}},
		[]fileFlag{{"--trace", f.trace}, {"--refine", f.refine}, {"--model", model.ConfigPath(f.model)}}); err != nil {
		return err
	}
	shard, shards := 0, 1
	if set("shard") {
		if shard, shards, err = advise.ParseShard(f.shard); err != nil {
			return usageErrorf(cmd, "--shard: %v", err)
		}
	}
	if _, err := workload.ParseFormat(f.format); err != nil {
		return usageErrorf(cmd, "--format: %v%s", err, didYouMean(f.format, formatNames()))
	}
	m, err := checkModelFlag(cmd, "--model", f.model)
	if err != nil {
		return err
	}
	g, err := checkGPUFlag(cmd, "--gpu", f.gpu)
	if err != nil {
		return err
	}
	base := sim.DefaultConfig(m, g)
	base.TP, base.MaxContext = f.tp, f.maxContext
	version := sim.DefaultEngineVersion(base.Engine).String()
	if set("engine-version") {
		if version, err = checkEngineVersion(cmd, sim.EngineVLLMV1.String(), f.engineVersion); err != nil {
			return err
		}
		base.EngineVersion = version
	}
	stepTime := sim.DefaultStepTime
	if set("profile") {
		switch strings.ToLower(f.profile) {
		case sim.StepTimeJoint, sim.StepTimeRoofline:
			stepTime = strings.ToLower(f.profile)
		default:
			return usageErrorf(cmd, "--profile %q: want joint or roofline%s", f.profile, didYouMean(f.profile, []string{sim.StepTimeJoint, sim.StepTimeRoofline}))
		}
	}
	if stepTime == sim.StepTimeJoint {
		if base.Profile, err = sim.DefaultProfile(g.Name, base.Engine, base.EngineVersion); err != nil {
			return err
		}
	}
	if f.kvDType != "" {
		if base.KVDType, err = model.ParseKVDType(f.kvDType); err != nil {
			return usageErrorf(cmd, "--kv-dtype: %v%s", err, didYouMean(f.kvDType, kvDTypeNames))
		}
	}
	if err := checkInputs(fileFlag{"--trace", f.trace}, fileFlag{"--refine", f.refine}); err != nil {
		return err
	}
	t, sum, err := readAdviseTrace(f.trace, f.format, f.maxRows, f.skipBadRows)
	if err != nil {
		return inFlagFile("--trace", f.trace, err)
	}
	if d := t.Summary(); d != "" {
		fmt.Fprintf(stderr, "gpufrag: warning: %s\n", loc.Printable(d))
	}
	req := advise.Request{
		Trace: t,
		Inputs: advise.Inputs{
			Trace: advise.TraceInfo{File: filepath.Base(f.trace), SHA256: sum, MaxRows: f.maxRows},
			Model: m.Name, ModelID: modelID(f.model), GPU: g.Name, TP: f.tp, KVDType: f.kvDType, MaxContext: f.maxContext,
			StepTime: stepTime, EngineVersion: version,
			SLO:    advise.SLO{TTFTP99: f.ttft, TPOTP99: f.tpot},
			Search: advise.Search{BracketSteps: f.bracket, BisectSteps: f.bisect},
			Space:  space,
		},
		Base: base, PrefixCachingGiven: set("prefix-caching"),
		RefineTop: f.refineTop, Shard: shard, Shards: shards, PartialOnly: set("shard"),
		Exhaustive: f.exhaustive, Extend: f.extend, Workers: f.parallel,
	}
	if set("start-rate") {
		req.Inputs.Search.StartRPS = f.startRate
	}
	if f.refine != "" {
		if req.Refine, err = readAdviceFile(f.refine); err != nil {
			return err
		}
	}
	var bar *progress.Bar
	h := advise.Hooks{
		Planned: func(in advise.Inputs, run []int) {
			fmt.Fprintf(stderr, "advise: %d candidates (%s), at most %d simulations each", len(in.Candidates), groupCounts(in.Candidates), in.Search.MaxEvaluations())
			if shards > 1 {
				fmt.Fprintf(stderr, "; shard %d/%d runs %d", shard, shards, len(run))
			}
			fmt.Fprintln(stderr)
			bar = progress.New(stderr, int64(len(run)), "advise")
		},
		Done:     func() { bar.Increment() },
		Searched: func() { bar.Done() },
		Extending: func(next []advise.Candidate) {
			names := make([]string, len(next))
			for i, c := range next {
				names[i] = c.Settings.String()
			}
			fmt.Fprintf(stderr, "advise: nothing meets the SLO; going on past the space as the advice says: %s\n", strings.Join(names, "; "))
		},
	}
	if set("shard") || f.out != "" {
		h.Partial = func(p *advise.Partial) error {
			if f.out == "" {
				return p.Write(stdout)
			}
			if err := writePartialFile(f.out, p); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			return nil
		}
	}
	rep, err := advise.Advise(req, h)
	var bad *advise.BadRequestError
	var re *advise.RefineError
	switch {
	case errors.As(err, &bad):
		return usageErrorf(cmd, "%v", err)
	case errors.As(err, &re):
		return fmt.Errorf("--refine %s: %w", f.refine, re.Err)
	case err != nil || rep == nil:
		return err
	}
	return printAdvice(stdout, rep, f.json)
}

// adviseSpace builds the sweep space from the flags.
func adviseSpace(f *adviseFlags, set func(string) bool) (advise.Space, error) {
	sp := advise.DefaultSpace()
	if f.experimental {
		// The flags' defaults are the stock space's; with --experimental
		// the ones not given take the experimental space's.
		sp = advise.ExperimentalSpace()
		if !set("defrag") {
			f.defrags = sp.Defrags
		}
	}
	if len(f.kvs) > 0 {
		kvs, err := specList(f.kvs, "")
		if err != nil {
			return sp, fmt.Errorf("--kv: %w", err)
		}
		sp.KVs = nil
		for _, kv := range kvs {
			ks, err := strategy.ParseSpec(kv)
			if err != nil {
				return sp, fmt.Errorf("--kv %s: %w%s", kv, err, didYouMean(specKind(kv), specKinds(strategy.Names())))
			}
			sp.KVs = append(sp.KVs, ks)
		}
	}
	if len(f.allocs) > 0 {
		sp.Allocs = nil
		for _, v := range f.allocs {
			as, err := spec.SplitList(v)
			if err != nil {
				return sp, fmt.Errorf("--alloc %q: %w", v, err)
			}
			for _, a := range as {
				p, err := spec.Parse(a)
				if err != nil {
					return sp, fmt.Errorf("--alloc %s: %w%s", a, err, didYouMean(specKind(a), spec.Names()))
				}
				sp.Allocs = append(sp.Allocs, p)
			}
		}
	}
	sp.Utils, sp.Buckets, sp.Full = f.utils, f.buckets, f.full
	sp.MaxBatchTokens, sp.MaxSeqs = f.batchTokens, f.seqs
	sp.PrefixCaching = nil
	for _, p := range f.prefix {
		sp.PrefixCaching = append(sp.PrefixCaching, strings.ToLower(strings.TrimSpace(p)))
	}
	sp.Defrags = nil
	for _, d := range f.defrags {
		sp.Defrags = append(sp.Defrags, strings.ToLower(strings.TrimSpace(d)))
	}
	return sp, sp.Validate()
}

// modelID is the Hugging Face id of --model for the deploy command: a
// preset's repository, or the _name_or_path of a config.json (empty when
// it has none). The file was read and checked by model.Load already.
func modelID(arg string) string {
	if r, ok := model.PresetRepo(arg); ok {
		return r
	}
	fh, err := os.Open(arg)
	if err != nil {
		return ""
	}
	defer fh.Close()
	var c struct {
		NameOrPath string `json:"_name_or_path"`
	}
	if json.NewDecoder(io.LimitReader(fh, model.MaxConfigBytes)).Decode(&c) != nil {
		return ""
	}
	id := strings.TrimSpace(c.NameOrPath)
	// A local path is not an id another machine can serve from.
	if id == "" || strings.HasPrefix(id, "/") || strings.HasPrefix(id, ".") || len(id) > 200 || strings.ContainsAny(id, " \t\n") {
		return ""
	}
	return id
}

// readAdviseTrace reads the trace and returns it with the file's SHA-256,
// through sim/scenario's one way in for a trace file (scenario.ReadTrace).
func readAdviseTrace(path, format string, maxRows int, skipBad bool) (*workload.Trace, string, error) {
	return scenario.ReadTrace(&scenario.Trace{File: path, Format: format, MaxRows: maxRows, SkipBadRows: skipBad}, openNamed)
}

func readAdviceFile(path string) (*advise.Report, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return advise.ReadReport(fh, path)
}

func writePartialFile(path string, p *advise.Partial) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := p.Write(fh); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return fh.Close()
}

func groupCounts(cands []advise.Candidate) string {
	var names []string
	counts := map[string]int{}
	for _, c := range cands {
		if counts[c.Group] == 0 {
			names = append(names, c.Group)
		}
		counts[c.Group]++
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%d %s", counts[n], n)
	}
	return strings.Join(parts, ", ")
}

func printAdvice(w io.Writer, rep *advise.Report, asJSON bool) error {
	if err := addAdviseBands(rep); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, rep, false)
	}
	return advise.WriteText(w, rep)
}
