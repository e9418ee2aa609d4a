package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/outfile"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// calibrateFlags are the flags of `gpufrag calibrate`.
type calibrateFlags struct {
	model, gpu           string
	output, profile, ops string
	holdout              []string
	params               []string
	maxEvals, seeds      int
	skipBadRuns, json    bool
	warm                 string
	parallel             int

	// The setup the runs are replayed with, as simulate takes it
	// (engineflags.go).
	engineFlags
}

func newCalibrateCmd() *cobra.Command {
	f := calibrateFlags{}
	cmd := &cobra.Command{
		Use:   "calibrate FILE... | --ops FILE",
		Short: "Fit a step-time profile to your own benchmark results",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !cmd.Flags().Changed("ops") {
				return usageErrorf(cmd, "no benchmark result files: give one or more FILEs (vLLM --save-result JSON or SGLang bench_serving JSONL)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("ops") {
				return runCalibrateOps(cmd, &f, args)
			}
			return runCalibrate(cmd, &f, args)
		},
	}
	withHelp(cmd, "calibrate")
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "", "model `NAME` the benchmark served (a preset) or path to its config.json (required: the files name a Hugging Face id, not an architecture)")
	fl.StringVar(&f.gpu, "gpu", "", "GPU `NAME` the benchmark ran on (required): "+strings.Join(model.GPUNames(), ", "))
	addEngineFlags(fl, &f.engineFlags)
	// The defaults simulate takes from its scenario, calibrate takes from the
	// files.
	fl.Lookup("engine").Usage += "; calibrate's default: the client's engine (vllm-v1 for vLLM's client, sglang for SGLang's)"
	fl.StringVar(&f.ops, "ops", "", "fit the linear-layer and attention terms to operator timings `FILE` measured on a GPU by calib/device/steptime.py (needs --gpu; no benchmark FILEs)")
	fl.StringVarP(&f.output, "output", "o", "", "write the fitted profile's YAML to `FILE` (for simulate --profile)")
	fl.StringVar(&f.profile, "profile", "", "start from this profile `FILE` (YAML: a profile as -o writes it, or a joint step-time model such as sim/profiles/joint.yaml or calib/loso/*.yaml, whose profile for the runs' GPU, engine and release is taken) instead of the embedded joint model's")
	fl.StringArrayVar(&f.holdout, "holdout", nil, "benchmark result `FILE` to judge the fitted profile on, not fit to (repeatable)")
	fl.StringSliceVar(&f.params, "params", nil, "fit exactly these `PARAMS` (comma-separated) instead of those the files can tell apart: "+
		strings.Join(calib.ParamNames(), ", "))
	fl.IntVar(&f.maxEvals, "max-evals", calib.DefaultMaxEvals, "cap on the fit's evaluations `N` (each a replay of every fitted run)")
	fl.IntVar(&f.seeds, "seeds", 1, "draws `N` of each run whose arrivals or lengths the client drew (Poisson arrivals without saved times, random lengths) that each of the fit's replays averages (the geometric mean of their metrics), at N times the cost (1: the run's own seed; at most 64); a --holdout run is judged on max(N, 8) draws, its expected figures")
	fl.BoolVar(&f.skipBadRuns, "skip-bad-runs", false, "skip runs that cannot be replayed (each reported) instead of failing")
	fl.StringVar(&f.warm, "warm-prompts", "auto", "`MODE` of the prefix cache a run starts with: auto (warm when an earlier run among the files sent the same prompts, "+
		"as a benchmark repeated against one server does: the same varying prompt lengths in the same order; equal fixed lengths are no evidence), "+
		"none (every run cold), all (every run warm: simulate --warm-prompts); the report says what was decided for each run and why")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON (schema in docs/calibrate.md)")
	fl.IntVar(&f.parallel, "parallel", 0, "runs simulated at once (default: the number of CPUs)")
	// The setup benchmark FILEs are replayed on (--tp, --max-seqs...), the
	// fit's knobs and its report belong to the files, not to the timings.
	aloneFlag(cmd, "ops", "fits one layer's operator timings to the GPU's peaks and writes a profile",
		"gpu", "engine", "engine-version", "profile", "output", "json")
	return cmd
}

func runCalibrate(cmd *cobra.Command, f *calibrateFlags, args []string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	set := cmd.Flags().Changed
	if f.model == "" {
		return usageErrorf(cmd, "--model is required: the model the benchmark served (a preset such as llama-3.1-70b, or a config.json)")
	}
	if f.gpu == "" {
		return usageErrorf(cmd, "--gpu is required: the GPU the benchmark ran on (%s)", strings.Join(model.GPUNames(), ", "))
	}
	for _, x := range []struct {
		name string
		v    int
	}{{"max-evals", f.maxEvals}, {"parallel", f.parallel}} {
		if set(x.name) && x.v < 1 {
			return usageErrorf(cmd, "--%s %d: want a positive number", x.name, x.v)
		}
	}
	if f.seeds < 1 || f.seeds > calib.MaxSeeds {
		return usageErrorf(cmd, "--seeds %d: want 1 to %d (draws of each drawn run a replay of the fit averages)", f.seeds, calib.MaxSeeds)
	}
	if _, err := checkGPUFlag(cmd, "--gpu", f.gpu); err != nil {
		return err
	}
	// The setup flags, checked as simulate checks them (calibrateSetup
	// adds what the files state).
	if err := applyEngineFlags(cmd, &f.engineFlags, &scenario.Scenario{Model: f.model, GPU: f.gpu}); err != nil {
		return err
	}
	if len(f.params) > 0 {
		if _, err := calib.CheckParams(f.params); err != nil {
			return usageErrorf(cmd, "--params: %v", err)
		}
	}
	inputs := []fileFlag{{"--profile", f.profile}, {"--model", model.ConfigPath(f.model)}}
	for _, a := range args {
		inputs = append(inputs, fileFlag{"the benchmark result argument", a})
	}
	for _, h := range f.holdout {
		inputs = append(inputs, fileFlag{"--holdout", h})
	}
	if err := checkOutputs(cmd, []fileFlag{{"--output", f.output}}, inputs); err != nil {
		return err
	}
	warm, err := calib.ParseWarmMode(f.warm)
	if err != nil {
		return usageErrorf(cmd, "--warm-prompts %q: want auto, none or all%s", f.warm, human.DidYouMean(f.warm, []string{"auto", "none", "all"}))
	}
	if warm == calib.WarmAll && set("prefix-caching") && !f.prefixCaching {
		return usageErrorf(cmd, "--warm-prompts all puts the prompts in the prefix cache: it needs prefix caching, which --prefix-caching=false turns off")
	}
	fit, err := readBenchFiles(args)
	if err != nil {
		return err
	}
	held, err := readBenchFiles(f.holdout)
	if err != nil {
		return err
	}
	s, fromFiles, setupWarns, err := calibrateSetup(cmd, f, fit, held)
	if err != nil {
		return err
	}
	if e, ok := calib.FilesEngine(fit); !set("engine") && ok {
		// The files' harness tells the engine (calib resolves it again);
		// the setup is built for it, so that the engine's defaults for the
		// GPU (SGLang's chunked_prefill_size, scenario.EngineConfig) apply
		// as under --engine.
		s.Engine.Name = e.String()
	}
	cfg, err := scenario.EngineConfig(s)
	if err != nil {
		// A setting the user's flags gave is a usage error naming the
		// flag; one the files state stays the files' (status 1).
		flagOf := map[string]string{}
		for _, x := range engineFlagFields {
			if set(x.flag) && !slices.ContainsFunc(fromFiles, func(st calib.Stated) bool { return st.Flag == x.flag }) {
				flagOf[x.field] = "--" + x.flag
			}
		}
		if ue := flagFieldError(cmd, s, flagOf, err); ue != nil {
			return ue
		}
		return err
	}
	for _, w := range calib.ModelIDMismatches(cfg.RunModel(), fit, held) {
		setupWarns = append(setupWarns, w+"; calibrate replays every run as --model "+f.model+": give the model the runs served (a preset or its config.json)")
	}
	setup := calib.ReplaySetup{Config: cfg, EngineGiven: set("engine")}
	opts := calib.FitOptions{Setup: setup, Params: f.params, MaxEvals: f.maxEvals, Seeds: f.seeds, Workers: f.parallel, SkipBadRuns: f.skipBadRuns, Warm: warm}
	if f.profile != "" {
		p, name, err := readStartProfile(f.profile, cfg)
		if err != nil {
			return err
		}
		opts.Start, opts.StartName = p, name
	}
	rep, err := calib.Calibrate(cmd.Context(), fit, held, opts)
	if err != nil {
		return err
	}
	rep.Setup.FromFiles = append([]calib.Stated{}, fromFiles...)
	rep.Warnings = append(append([]string{}, setupWarns...), rep.Warnings...) // [] not null in --json
	for _, w := range rep.AllWarnings() {
		fmt.Fprintf(stderr, "gpufrag: warning: %s\n", untrusted.Printable(w))
	}
	return writeFitted(stdout, f, rep.Profile, rep, func(w io.Writer) error { return rep.WriteTextWidth(w, f.output, tableWidth(w)) })
}

// writeFitted writes a fitted profile to --output (when given), then doc as
// JSON under --json, else the report text.
func writeFitted(stdout io.Writer, f *calibrateFlags, p *sim.Profile, doc any, report func(io.Writer) error) error {
	if f.output != "" {
		var buf bytes.Buffer
		if err := p.WriteYAML(&buf); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		if err := outfile.WriteFile(f.output, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
	}
	if f.json {
		return writeJSON(stdout, doc, true)
	}
	return report(stdout)
}

// readProfileFile reads a starting profile.
func readProfileFile(path string) (*sim.Profile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--profile: %w", err)
	}
	defer fh.Close()
	return sim.LoadProfile(fh, path)
}

// readStartProfile reads calibrate's --profile: a profile (as -o writes
// it), or a joint step-time model (sim/profiles/joint.yaml, calib/loso's
// leave-one-out models, a refit's), whose profile for the runs' GPU,
// engine and release is where the fit starts. It returns the start's name
// for the report.
func readStartProfile(path string, cfg sim.Config) (*sim.Profile, string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("--profile: %w", err)
	}
	p, j, err := sim.ReadStepModel(fh, path)
	fh.Close()
	switch {
	case err != nil:
		return nil, "", fmt.Errorf("--profile: %w", err)
	case p != nil:
		return p, path, nil
	}
	p, err = j.ProfileFor(cfg.GPU.Name, cfg.Engine, cfg.EngineVersion)
	if err != nil {
		return nil, "", fmt.Errorf("--profile %s: a joint model: %w", path, err)
	}
	return p, fmt.Sprintf("%s (a joint model: %s under %v %s)", path, cfg.GPU.Name, cfg.Engine, p.EngineVersion), nil
}

// readBenchFiles reads and hashes the benchmark result files.
func readBenchFiles(paths []string) ([]*calib.File, error) {
	var out []*calib.File
	for _, p := range paths {
		if err := checkNotDir(p, "a benchmark result file"); err != nil {
			return nil, err
		}
		fh, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		file, err := calib.ReadFile(fh, p)
		fh.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, file)
	}
	return out, nil
}
