package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/par"
	"github.com/gpufrag/gpufrag/internal/progress"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
	"github.com/gpufrag/gpufrag/sim/simreport"
	"github.com/gpufrag/gpufrag/workload"
)

// simulateFlags are the flags of `gpufrag simulate`; each overrides the
// scenario's field of the same name when set.
type simulateFlags struct {
	scenario, printScenario bool
	scenarioFile            string
	trace, format           string
	rate                    float64
	skipBadRows             bool
	maxRows                 int
	model, gpu              string
	kvs, allocs             []string
	onOOM                   string
	duration                time.Duration
	seed                    uint64
	arrivalSeed             uint64
	arrivalDraws            int
	activations             bool
	defrag                  string
	maxTokens               int
	json                    bool
	html                    string
	parallel                int

	// The setup simulate shares with calibrate (engineflags.go).
	engineFlags

	// Timing (simulate_timing.go).
	profile                   string
	printProfile, warmPrompts bool
	maxConcurrency, run       int
}

func newSimulate() *cobra.Command {
	f := simulateFlags{}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate an LLM serving engine and compare KV strategies and allocators",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimulate(cmd, &f)
		},
	}
	withHelp(cmd, "simulate")
	cmd.Long = strings.ReplaceAll(cmd.Long, "{profiles}", strings.Join(sim.ProfileGPUs(), ", "))
	fl := cmd.Flags()
	fl.StringVar(&f.scenarioFile, "scenario", "", "scenario `FILE` (YAML; see --print-scenario); flags override its fields")
	fl.BoolVar(&f.printScenario, "print-scenario", false, "print the default scenario's YAML and exit")
	fl.StringVar(&f.trace, "trace", "", "request trace `FILE` (replaces the scenario's workload)")
	fl.StringVar(&f.format, "format", "", "trace `FORMAT`: azure, mooncake, vidur, fineserve, burstgpt, jsonl, or vllm-bench (a vLLM benchmark_serving/vllm bench serve --save-result JSON or SGLang bench_serving JSONL: lengths, arrivals and max_concurrency as the client ran them) (default: detected from the file's start)")
	fl.Float64Var(&f.rate, "rate", 0, "mean arrival rate `R` in requests per second: Poisson arrivals for a length-only trace, rescaled time for a timed one, or the session or request rate of a generated workload")
	fl.BoolVar(&f.skipBadRows, "skip-bad-rows", false, "skip trace rows that do not parse (counted and reported) instead of failing")
	fl.IntVar(&f.maxRows, "max-rows", 0, "read at most `N` requests of the trace (0: all)")
	fl.StringVar(&f.model, "model", "", "model `NAME` (a preset) or path to a Hugging Face config.json")
	fl.StringVar(&f.gpu, "gpu", "", "GPU `NAME`: "+strings.Join(model.GPUNames(), ", "))
	fl.StringArrayVar(&f.kvs, "kv", nil, "KV strategy `SPEC`s to compare, comma-separated or repeated: "+strings.Join(strategy.Names(), ", "))
	fl.StringArrayVar(&f.allocs, "alloc", nil, "allocator `SPEC`s to compare, comma-separated or repeated (see gpufrag replay --help)")
	fl.StringVar(&f.onOOM, "on-oom", "", "out-of-memory `BEHAVIOUR`: preempt (vLLM), reserve (TensorRT-LLM) or fail (default: per KV strategy)")
	fl.DurationVar(&f.duration, "duration", 0, "simulated `TIME` to run, e.g. 30m; 0: until every request ends (a generated workload without a count needs a duration, which sets how many arrive) (default: the scenario's; a trace runs to its end)")
	fl.Uint64Var(&f.seed, "seed", 0, "random `SEED` for generated workloads and for the arrivals of a trace without times (default: the scenario's); a benchmark file's arrivals are drawn from --arrival-seed")
	fl.Uint64Var(&f.arrivalSeed, "arrival-seed", 0, "draw a benchmark result file's Poisson arrivals from `SEED` instead of the run's own seed: another draw of a run that saved no start times")
	fl.IntVar(&f.arrivalDraws, "arrival-draws", 1, "replay a benchmark result file that saved no send times under `N` draws of its arrivals (seeds from the run's own, or --arrival-seed's or workload.trace.arrival_seed's, up) and report each figure's smallest, median and largest: how far the draw alone moves it (1: one draw; at most 64; N times the time)")
	fl.StringVar(&f.defrag, "defrag", "", "compaction `POLICY`: off, threshold, adaptive, online or offline (contiguous KV on caching, arena or sizeclass; each run is repeated with off for ooms_without)")
	fl.BoolVar(&f.activations, "activations", true, "allocate per-step activation buffers through the allocator (off: KV memory alone)")
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "max_tokens of every request (default: max context − prompt)")
	fl.BoolVar(&f.json, "json", false, "print the results as JSON (schema in docs/json.md)")
	fl.StringVar(&f.html, "html", "", "write a self-contained HTML report with plots to `FILE`")
	fl.IntVar(&f.parallel, "parallel", 0, "runs simulated at once (default: the number of CPUs)")
	addEngineFlags(fl, &f.engineFlags)
	addTimingFlags(fl, &f)
	needsFlag(cmd, "trace", "they read the trace file", "format", "skip-bad-rows", "max-rows", "run", "arrival-seed")
	aloneFlag(cmd, "print-scenario", "prints the embedded default scenario and exits")
	aloneFlag(cmd, "print-profile", "prints the step-time profile of the GPU, engine and release and exits",
		"scenario", "gpu", "engine", "engine-version", "profile", "json")
	return cmd
}

func runSimulate(cmd *cobra.Command, f *simulateFlags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.printScenario {
		_, err := stdout.Write(scenario.DefaultYAML())
		return err
	}
	if err := checkInputs(fileFlag{"--scenario", f.scenarioFile}); err != nil {
		return err
	}
	defer engineGC()()
	engineHeap()
	s, err := loadScenario(f.scenarioFile)
	if err != nil {
		return err
	}
	if err := applySimulateFlags(cmd, f, s); err != nil {
		return err
	}
	if err := applyTimingFlags(cmd, f, s); err != nil {
		return err
	}
	flagOf := overrideFlagged(cmd, s)
	if f.printProfile {
		return printProfile(stdout, stderr, s, f.json)
	}
	inputs, named := simulateInputs(f, s, flagOf)
	if err := checkOutputs(cmd, []fileFlag{{"--html", f.html}}, inputs, named...); err != nil {
		return err
	}
	if err := checkInputs(fileFlag{"--trace", f.trace}); err != nil {
		return err
	}
	open := scenario.Opener(openNamed)
	if f.arrivalDraws > 1 {
		open = (&onceOpener{}).open
	}
	plan, err := scenario.Build(s, open)
	if err != nil {
		if ue := flagFieldError(cmd, s, flagOf, err); ue != nil {
			return ue
		}
		return inFlagFile("--trace", f.trace, err)
	}
	if plan.Dropped != "" {
		fmt.Fprintf(stderr, "gpufrag: warning: %s\n", untrusted.Printable(plan.Dropped))
	}
	if plan.Bench != nil && plan.DrawnFrom != nil && cmd.Flags().Changed("seed") && !cmd.Flags().Changed("arrival-seed") {
		from := "the run's own seed"
		if tr := s.Workload.Trace; tr != nil && tr.ArrivalSeed != nil {
			from = "the scenario's workload.trace.arrival_seed"
		}
		fmt.Fprintf(stderr, "gpufrag: warning: --seed %d does not draw a benchmark run's arrivals: they are drawn from %s, %d; "+
			"--arrival-seed N draws others\n", f.seed, from, *plan.DrawnFrom)
	}
	if plan.Bench != nil && len(plan.Configs) > 0 {
		for _, w := range benchSetupWarnings(filepath.Base(f.trace), plan.Bench, &plan.Configs[0], cmd.Flags()) {
			fmt.Fprintf(stderr, "gpufrag: warning: %s\n", untrusted.Printable(w))
		}
	}
	if len(plan.Requests) == 0 {
		return errors.New("the workload has no requests")
	}
	if f.arrivalDraws > 1 {
		if plan.DrawnFrom == nil {
			return usageErrorf(cmd, "--arrival-draws %d: %s", f.arrivalDraws, notDrawn(plan))
		}
		if first := *plan.DrawnFrom; uint64(f.arrivalDraws-1) > math.MaxUint64-first {
			return usageErrorf(cmd, "--arrival-draws %d from seed %d: the seeds would pass %d; draw from a smaller --arrival-seed",
				f.arrivalDraws, first, uint64(math.MaxUint64))
		}
	}
	workers := f.parallel
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	bar := progress.New(stderr, int64(len(plan.Configs)*f.arrivalDraws), "simulate")
	results, err := plan.RunAll(context.Background(), workers, bar.Increment)
	if err != nil {
		bar.Done()
		return err
	}
	draws, err := runArrivalDraws(s, plan, open, f.arrivalDraws, workers, bar.Increment)
	bar.Done()
	if err != nil {
		return err
	}
	changed, shown := changedFlags(cmd)
	doc, err := simreport.New(s, plan, results, f.scenarioFile == "", changed, shown)
	if err != nil {
		return err
	}
	if len(draws) > 0 {
		if err := simreport.AddArrivalDraws(doc.Report, draws); err != nil {
			return err
		}
	}
	if f.html != "" {
		if err := writeOutput(f.html, func(w io.Writer) error { return simreport.WriteHTML(w, doc.Report) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	if f.json {
		return writeJSON(stdout, doc, true)
	}
	return simreport.WriteTextWidth(stdout, doc.Report, plan.GPU.Capacity, tableWidth(stdout))
}

// maxArrivalDraws bounds --arrival-draws (64 replays of the whole run).
const maxArrivalDraws = 64

// notDrawn says why plan's workload has no arrivals to draw again.
func notDrawn(plan *scenario.Plan) string {
	b := plan.Bench
	switch {
	case b == nil:
		return "the workload is not a benchmark result file (vllm-bench): only a benchmark run whose client drew its arrivals has other draws of them"
	case b.Detail&workload.DetailStartTimes != 0:
		return "the benchmark run saved its send times (start_times), which the replay keeps: every draw would be the same"
	case math.IsInf(b.RequestRate, 1):
		return "the benchmark run sent every request at once (request_rate inf): there are no arrivals to draw"
	}
	return "the benchmark run spaced its requests evenly (burstiness inf): there are no arrivals to draw"
}

// runArrivalDraws replays plan's runs under draws−1 more draws of the
// benchmark run's arrivals (the seeds after plan.DrawnFrom) and returns
// each draw's figures (draw 2 first; nil for one draw), several draws at
// once when the runs are fewer than workers. s is the scenario plan was
// built with open; its trace's arrival seed is set for each draw's build
// and restored.
func runArrivalDraws(s *scenario.Scenario, plan *scenario.Plan, open scenario.Opener, draws, workers int, done func()) ([][]simreport.DrawFigures, error) {
	if draws <= 1 {
		return nil, nil
	}
	tr := s.Workload.Trace
	own := tr.ArrivalSeed
	defer func() { tr.ArrivalSeed = own }()
	first := *plan.DrawnFrom
	var mu sync.Mutex // Build reads s, whose seed each draw sets
	runs := max(len(plan.Configs), 1)
	return par.Map(context.Background(), draws-1, par.Options{Workers: max(1, workers/runs)},
		func(ctx context.Context, k int) ([]simreport.DrawFigures, error) {
			seed := first + uint64(k) + 1
			mu.Lock()
			tr.ArrivalSeed = &seed
			p, err := scenario.Build(s, open)
			mu.Unlock()
			if err != nil {
				return nil, fmt.Errorf("arrival draw %d (seed %d): %w", k+2, seed, err)
			}
			res, err := p.RunAll(ctx, min(workers, runs), done)
			if err != nil {
				return nil, fmt.Errorf("arrival draw %d (seed %d): %w", k+2, seed, err)
			}
			figs := make([]simreport.DrawFigures, len(res))
			for i := range res {
				figs[i] = simreport.FiguresOf(&res[i])
			}
			return figs, nil
		})
}

// onceOpener opens each input once and serves its later opens from
// memory: simulate --arrival-draws builds its plan again for every draw,
// and a trace read from a pipe, or changed between reads, must give every
// draw the same requests. An input over workload.MaxBenchBytes (more than
// any benchmark result file) is refused.
type onceOpener struct {
	files map[string][]byte
	max   int64 // the bound on an input (0: workload.MaxBenchBytes)
}

func (o *onceOpener) open(name string) (io.ReadCloser, error) {
	if b, ok := o.files[name]; ok {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	rc, err := openNamed(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	limit := o.max
	if limit == 0 {
		limit = workload.MaxBenchBytes
	}
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: over %d bytes: --arrival-draws replays a benchmark result file, and keeps its inputs in memory to read them once",
			untrusted.Printable(name), limit)
	}
	if o.files == nil {
		o.files = map[string][]byte{}
	}
	o.files[name] = b
	return io.NopCloser(bytes.NewReader(b)), nil
}

// outputFlags change what simulate prints, not what it runs (as do the
// profiling flags, isProfileFlag).
var outputFlags = map[string]bool{"json": true, "html": true, "parallel": true, "scenario": true,
	"print-scenario": true, "print-profile": true, "arrival-draws": true}

// changedFlags lists the flags that changed the scenario, in name order
// ("--gpu"), and the same with their values ("--gpu a100-40g",
// "--activations=false"), for simreport.Describe.
func changedFlags(cmd *cobra.Command) (changed, shown []string) {
	changed = []string{}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if outputFlags[f.Name] || isProfileFlag(f.Name) {
			return
		}
		changed = append(changed, "--"+f.Name)
		v := strings.Trim(f.Value.String(), "[]")
		if f.Value.Type() == "bool" {
			shown = append(shown, "--"+f.Name+"="+v)
		} else {
			shown = append(shown, "--"+f.Name+" "+v)
		}
	})
	return changed, shown
}

// scenarioFields are the scenario's fields that simulate's flags set, by
// flag: Build's errors about them do not point into the scenario file
// (scenario.Override), and an input file they name is the flag's.
var scenarioFields = append([]struct{ flag, field string }{
	{"trace", "workload"}, {"rate", "workload.trace.rate"}, {"rate", "workload.requests.rate"}, {"rate", "workload.sessions.rate"},
	{"model", "model"}, {"gpu", "gpu"}, {"on-oom", "engine.on_oom"}, {"duration", "duration"}, {"seed", "seed"},
	{"max-tokens", "engine.max_tokens"}, {"activations", "engine.activations"}, {"defrag", "engine.defrag"},
	{"kv", "runs"}, {"alloc", "runs"}, {"profile", "profile"},
	{"max-concurrency", "workload.max_concurrency"}, {"warm-prompts", "workload.warm_prompts"},
	{"arrival-seed", "workload.trace.arrival_seed"},
}, engineFlagFields...)

// overrideFlagged marks the scenario's fields that flags set
// (scenario.Override) and returns the flag that set each, by field.
func overrideFlagged(cmd *cobra.Command, s *scenario.Scenario) map[string]string {
	set := cmd.Flags().Changed
	flagOf := map[string]string{}
	for _, x := range scenarioFields {
		if set(x.flag) {
			s.Override(x.field)
			flagOf[x.field] = "--" + x.flag
		}
	}
	if set("trace") {
		flagOf["workload.trace.file"] = "--trace" // --trace sets the workload
	}
	return flagOf
}

// namesFile reports whether the field of s names a file: an error about
// it (the file cannot be opened, read, or holds a bad value) is the
// file's, status 1, even where a flag named the file.
func namesFile(s *scenario.Scenario, field string) bool {
	switch field {
	case "model", "workload", "workload.trace.file":
		return true
	case "profile":
		return scenario.IsProfileFile(s.Profile)
	}
	return false
}

// flagFieldError returns err, an error of scenario.Build or EngineConfig
// for s, as a usage error naming the flag that set its field (flagOf, by
// field), "--unquantized: self_attn names ...", when a flag set it to a
// value (not a file's name, namesFile); nil otherwise: an error about the
// scenario file's own fields stays the file's (status 1).
func flagFieldError(cmd *cobra.Command, s *scenario.Scenario, flagOf map[string]string, err error) error {
	field, what, ok := scenario.FieldOf(err)
	if !ok || namesFile(s, field) {
		return nil
	}
	flag, ok := flagOf[field]
	if !ok {
		return nil
	}
	return usageErrorf(cmd, "%s: %v", flag, what)
}

// simulateInputs returns the files a simulation reads, for checkOutputs:
// the scenario file, and each file the scenario names (its model's
// config.json, profile and trace) as the flag that set it (flagOf, by
// field) or as the scenario's field.
func simulateInputs(f *simulateFlags, s *scenario.Scenario, flagOf map[string]string) ([]fileFlag, []namedFile) {
	inputs := []fileFlag{{"--scenario", f.scenarioFile}}
	doc := "the default scenario"
	if f.scenarioFile != "" {
		doc = "--scenario " + f.scenarioFile
	}
	var named []namedFile
	for _, nf := range s.Files() {
		if flag, ok := flagOf[nf.Field]; ok {
			inputs = append(inputs, fileFlag{flag, nf.Path})
		} else {
			named = append(named, namedFile{doc, nf.Field + ":", nf.Path})
		}
	}
	return inputs, named
}

func loadScenario(path string) (*scenario.Scenario, error) {
	if path == "" {
		return scenario.Default(), nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	s, err := scenario.Read(fh, path)
	if err != nil {
		return nil, err
	}
	s.Dir = filepath.Dir(path) // its profile file is beside it
	return s, nil
}

// applySimulateFlags writes the flags that were set into s.
func applySimulateFlags(cmd *cobra.Command, f *simulateFlags, s *scenario.Scenario) error {
	set := cmd.Flags().Changed
	if f.trace != "" {
		tr := &scenario.Trace{File: f.trace, Format: f.format, Rate: f.rate,
			MaxRows: f.maxRows, SkipBadRows: f.skipBadRows, Run: f.run}
		if set("arrival-seed") {
			tr.ArrivalSeed = &f.arrivalSeed
		}
		s.UseTrace(tr, set("duration"))
	} else if set("rate") {
		s.Workload.SetRate(f.rate)
	}
	if set("rate") {
		if err := checkRate(cmd, "--rate", f.rate); err != nil {
			return err
		}
	}
	str := func(name string, dst *string, v string) {
		if set(name) {
			*dst = v
		}
	}
	str("model", &s.Model, f.model)
	str("gpu", &s.GPU, f.gpu)
	if set("gpu") {
		if _, err := checkGPUFlag(cmd, "--gpu", f.gpu); err != nil {
			return err
		}
	}
	if set("format") {
		if _, err := workload.ParseFormat(f.format); err != nil {
			return usageErrorf(cmd, "--format: %v%s", err, human.DidYouMean(f.format, workload.FormatNames()))
		}
	}
	if set("max-rows") && f.maxRows < 0 {
		return usageErrorf(cmd, "--max-rows %d: want 0 (every row) or a positive number", f.maxRows)
	}
	if set("on-oom") {
		if _, err := sim.ParseOnOOM(f.onOOM); err != nil {
			return usageErrorf(cmd, "--on-oom %q: want preempt, reserve or fail%s", f.onOOM, human.DidYouMean(f.onOOM, []string{"preempt", "reserve", "fail"}))
		}
		s.SetOnOOM(f.onOOM)
	}
	if err := applyEngineFlags(cmd, &f.engineFlags, s); err != nil {
		return err
	}
	if set("duration") {
		if f.duration < 0 {
			return usageErrorf(cmd, "--duration %v: want a positive duration such as 30m, or 0 to run until every request ends", f.duration)
		}
		if w := s.Workload; f.duration == 0 && w.Trace == nil {
			// Without a count, a generated workload's duration is what
			// sets how many requests or sessions arrive.
			key := ""
			switch {
			case w.Sessions != nil && w.Sessions.Count == 0:
				key = "workload.sessions"
			case w.Requests != nil && w.Requests.Count == 0:
				key = "workload.requests"
			}
			if key != "" {
				return usageErrorf(cmd, "--duration 0 runs until every request ends, but the scenario's %s has no count: its duration sets how many arrive; "+
					"give a duration such as 30m (or a count in a scenario file)", key)
			}
		}
		s.Duration = scenario.Duration(f.duration)
	}
	if set("seed") {
		s.Seed = f.seed
	}
	if set("max-tokens") {
		if f.maxTokens < 1 {
			return usageErrorf(cmd, "--max-tokens %d: want a positive number", f.maxTokens)
		}
		s.Engine.MaxTokens = f.maxTokens
	}
	if set("activations") {
		s.Engine.Activations = &f.activations
	}
	if set("defrag") {
		if _, err := sim.ParseDefragPolicy(f.defrag); err != nil {
			return usageErrorf(cmd, "--defrag %q: want off, threshold, adaptive, online or offline%s", f.defrag, human.DidYouMean(f.defrag, sim.DefragPolicyNames()))
		}
		s.Engine.Defrag = f.defrag
	}
	if set("kv") || set("alloc") {
		runs, err := scenario.RunsFromFlags(f.kvs, f.allocs)
		if err != nil {
			return usageErrorf(cmd, "%v", err)
		}
		s.Runs = runs
	}
	if set("arrival-draws") && (f.arrivalDraws < 1 || f.arrivalDraws > maxArrivalDraws) {
		return usageErrorf(cmd, "--arrival-draws %d: want 1 to %d", f.arrivalDraws, maxArrivalDraws)
	}
	if set("parallel") && f.parallel < 1 {
		return usageErrorf(cmd, "--parallel %d: want at least 1", f.parallel)
	}
	return nil
}
