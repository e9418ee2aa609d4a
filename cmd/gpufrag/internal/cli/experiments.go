package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpufrag/gpufrag/experiments"
	"github.com/gpufrag/gpufrag/internal/progress"
	"github.com/spf13/cobra"
)

// The long help and examples of experiments and experiments run.
func newExperimentsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiments",
		Short: "Test popular claims about GPU memory fragmentation and regenerate docs/findings.md",
		Args:  subcommandArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	withHelp(cmd, "experiments")
	cmd.AddCommand(newExperimentsListCmd(), newExperimentsRunCmd())
	return cmd
}

func newExperimentsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the experiments and the claims they test",
		Example: `  gpufrag experiments list
  # needs: jq
  gpufrag experiments list --json | jq -r '.[].claim'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exps, err := experiments.Load()
			if err != nil {
				return err
			}
			entries := experiments.List(exps)
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, entries, true)
			}
			return experiments.WriteListTextWidth(out, entries, tableWidth(out))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as a JSON array")
	return cmd
}

type experimentsRunFlags struct {
	reduced, json, write bool
	root                 string
	parallel             int
}

func newExperimentsRunCmd() *cobra.Command {
	f := experimentsRunFlags{root: "."}
	cmd := &cobra.Command{
		Use:   "run [NAME...]",
		Short: "Run experiments and print their figures and verdicts",
		RunE:  func(cmd *cobra.Command, args []string) error { return runExperiments(cmd, &f, args) },
	}
	withHelp(cmd, "experiments-run")
	fl := cmd.Flags()
	fl.BoolVar(&f.reduced, "reduced", false, "run each experiment at its reduced size (shorter runs, fewer seeds, small fixtures)")
	fl.BoolVar(&f.json, "json", false, "print the outcomes as a JSON array")
	fl.BoolVar(&f.write, "write-findings", false, "regenerate docs/findings.md and docs/findings/*.png below --root (all experiments, full size)")
	fl.StringVar(&f.root, "root", f.root, "repository root `DIR` that experiment paths are relative to")
	fl.IntVar(&f.parallel, "parallel", 0, "simulations at once (default: the number of CPUs)")
	return cmd
}

func runExperiments(cmd *cobra.Command, f *experimentsRunFlags, names []string) error {
	if f.write && (len(names) > 0 || f.reduced) {
		return usageErrorf(cmd, "--write-findings needs every experiment at full size: drop the names and --reduced")
	}
	if cmd.Flags().Changed("parallel") && f.parallel < 1 {
		return usageErrorf(cmd, "--parallel %d: want at least 1", f.parallel)
	}
	if fi, err := os.Stat(f.root); err != nil || !fi.IsDir() {
		return usageErrorf(cmd, "--root %s: not a directory (the repository root that experiment paths are relative to)", f.root)
	}
	all, err := experiments.Load()
	if err != nil {
		return err
	}
	exps, err := experiments.Select(all, names)
	if err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	stderr := cmd.ErrOrStderr()
	var bar *progress.Bar
	opts := experiments.Options{Root: f.root, Reduced: f.reduced, Parallel: f.parallel,
		Start: func(n int) { bar = progress.New(stderr, int64(n), "experiments") },
		Done:  func() { bar.Increment() }}
	if f.write {
		if _, err := os.Stat(filepath.Join(f.root, "experiments")); err != nil {
			return usageErrorf(cmd, "--write-findings: %s is not the repository root (no experiments/ directory); run from the root or set --root", f.root)
		}
		if err := checkFindingsOutputs(cmd, all, opts); err != nil {
			return err
		}
	}
	outs, err := experiments.RunAll(exps, opts)
	bar.Done()
	if err != nil {
		return err
	}
	if f.write {
		if err := experiments.WriteFindingsOf(f.root, all, outs); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "gpufrag: wrote %s and %s/*.png\n", filepath.Join(f.root, experiments.FindingsPath), filepath.Join(f.root, experiments.PlotsDir))
	}
	out := cmd.OutOrStdout()
	if f.json {
		return writeJSON(out, outs, true)
	}
	return experiments.WriteTextWidth(out, outs, tableWidth(out))
}

// checkFindingsOutputs refuses --write-findings when a file it writes
// (docs/findings.md, a plot) is a file an experiment reads: a scenario
// file, a file a scenario names, a cluster trace. A file in a directory
// not made yet is new.
func checkFindingsOutputs(cmd *cobra.Command, exps []*experiments.Experiment, opts experiments.Options) error {
	var outputs []fileFlag
	for _, o := range experiments.FindingsFiles(exps) {
		p := filepath.Join(opts.Root, filepath.FromSlash(o))
		if d, err := os.Stat(filepath.Dir(p)); err == nil && d.IsDir() {
			outputs = append(outputs, fileFlag{"--write-findings", p})
		}
	}
	var named []namedFile
	for _, in := range experiments.Inputs(exps, opts) {
		named = append(named, namedFile{in.File, in.Field, in.Path})
	}
	return checkOutputs(cmd, outputs, nil, named...)
}
