package cli

import (
	"fmt"
	"github.com/gpufrag/gpufrag/internal/human"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// The flags of `gpufrag simulate` that choose how time is modelled: the
// engine's step composition, the step-time profile, the weights' type and
// the client's cap on requests in flight.

func addTimingFlags(fl *pflag.FlagSet, f *simulateFlags) {
	fl.StringVar(&f.profile, "profile", "", "time steps with `MODEL|FILE`: roofline, joint (the joint model's profile of --gpu, --engine and --engine-version; "+
		"--gpu's own name says the same), a profile YAML file, as gpufrag calibrate writes, or a joint step-time model file (sim/profiles/joint.yaml, "+
		"calib/loso/*.yaml), whose profile for --gpu, --engine and --engine-version is taken (default: "+sim.DefaultStepTime+")")
	fl.BoolVar(&f.printProfile, "print-profile", false, "print the YAML of the step-time profile the run would use (with none given, --gpu's embedded one for --engine) and exit; with --json, as JSON")
	fl.IntVar(&f.maxConcurrency, "max-concurrency", 0, "a closed-loop client: at most `N` requests in flight, the rest wait and their latencies start when sent "+
		"(default: a vllm-bench trace's own max_concurrency, else none; 0 lifts it)")
	fl.BoolVar(&f.warmPrompts, "warm-prompts", false, "start with every request's prompt in the prefix cache, as a benchmark repeated against one server finds them "+
		"(vllm bench serve and SGLang's bench_serving send the same prompts on every run of one seed; with prefix caching on, runs after the first are served from the cache)")
	fl.IntVar(&f.run, "run", 0, "the run `N` (from 1) of a vllm-bench file that holds several (an SGLang JSONL sweep, vLLM --append-result)")
}

// applyTimingFlags writes the timing flags that were set into s. It runs
// after applySimulateFlags (which has put --trace's workload in place and
// checked that --run comes with it).
func applyTimingFlags(cmd *cobra.Command, f *simulateFlags, s *scenario.Scenario) error {
	set := cmd.Flags().Changed
	if set("profile") {
		names := append([]string{scenario.ProfileRoofline, scenario.ProfileJoint}, sim.ProfileGPUs()...)
		if f.profile == "" {
			return usageErrorf(cmd, "--profile: empty; give roofline, joint, a GPU's name (%s) or a profile file", strings.Join(sim.ProfileGPUs(), ", "))
		}
		if !scenario.IsProfileFile(f.profile) && !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, f.profile) }) {
			return usageErrorf(cmd, "--profile %q: not roofline, joint or a GPU's name (%s); a file's name needs a dot or a slash (./%s.yaml)%s",
				f.profile, strings.Join(sim.ProfileGPUs(), ", "), f.profile, human.DidYouMean(f.profile, names))
		}
		if scenario.IsProfileFile(f.profile) {
			if err := checkInputs(fileFlag{"--profile", f.profile}); err != nil {
				return err
			}
		}
		s.Profile = f.profile
		s.Dir = "" // a flag's file is relative to the working directory
	}
	if set("max-concurrency") {
		if f.maxConcurrency < 0 {
			return usageErrorf(cmd, "--max-concurrency %d: want 0 (no cap) or a positive number of requests in flight", f.maxConcurrency)
		}
		mc := f.maxConcurrency
		s.Workload.MaxConcurrency = &mc
	}
	if set("warm-prompts") {
		if f.warmPrompts && set("prefix-caching") && !f.prefixCaching {
			return usageErrorf(cmd, "--warm-prompts puts the prompts in the prefix cache: it needs prefix caching, which --prefix-caching=false turns off")
		}
		s.Workload.WarmPrompts = f.warmPrompts
	}
	if set("run") && f.run < 1 {
		return usageErrorf(cmd, "--run %d: want a run number from 1", f.run)
	}
	return nil
}

// printProfile writes the step-time profile a run of s would use
// (scenario.WriteProfile), and on stderr what the run does that the
// document does not show.
func printProfile(stdout, stderr io.Writer, s *scenario.Scenario, asJSON bool) error {
	if s.GPU == "" {
		return fmt.Errorf("--print-profile: no GPU: give --gpu (one of %s)", strings.Join(model.GPUNames(), ", "))
	}
	note, err := scenario.WriteProfile(stdout, s, openNamed, asJSON)
	if note != "" {
		fmt.Fprintf(stderr, "gpufrag: note: %s\n", note)
	}
	return err
}
