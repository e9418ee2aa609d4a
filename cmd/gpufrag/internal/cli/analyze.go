package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/outfile"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/snapshot/analysis/pages"
	"github.com/spf13/cobra"
)

// analyzeFlags are the flags of `gpufrag analyze`.
type analyzeFlags struct {
	json     bool      // --json
	html     string    // --html FILE
	capacity mem.Bytes // --capacity
	whatIf   []string  // --whatif, each a spec or a comma-separated list
	noReplay bool      // --no-replay
	// Attribution (issue 25): --profile FILE (pprof), --folded FILE with
	// --folded-value, --full-stacks.
	profile, folded, foldedValue string
	fullStacks                   bool
}

func newAnalyzeCmd(stdout, stderr io.Writer) *cobra.Command {
	var f analyzeFlags
	cmd := &cobra.Command{
		Use:   "analyze FILE",
		Short: "Diagnose a PyTorch memory snapshot: fragmentation, OOMs, replay and what-if",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(cmd, "analyze takes one snapshot file, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAnalyze(cmd, f, args[0], stdout, stderr)
		},
	}
	withHelp(cmd, "analyze")
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "print the analysis as JSON (schema in docs/json.md)")
	fl.StringVar(&f.html, "html", "", "also write a self-contained HTML report (timeline, segment map) to `FILE`")
	fl.Var(&f.capacity, "capacity", "device memory for the what-if replays, a `SIZE` such as 40GiB or 79.65GiB (rounded down to whole bytes); "+
		"without it, what an out-of-memory entry of the trace records, else 80GiB")
	fl.Lookup("capacity").DefValue = "0" // pflag then prints no "(default 0B)": the usage says it
	fl.StringArrayVar(&f.whatIf, "whatif", nil, "allocator `SPEC` to try instead of the default alternatives; repeat it or separate with commas")
	fl.BoolVar(&f.noReplay, "no-replay", false, "diagnose the final state only: no replay, timeline or what-if")
	fl.StringVar(&f.profile, "profile", "", "also write the memory by allocation stack as a pprof profile to `FILE` "+
		"(go tool pprof -http=: FILE draws its flame graph)")
	fl.StringVar(&f.folded, "folded", "", "also write the memory by allocation stack as folded stacks (flamegraph.pl, speedscope) to `FILE`")
	fl.StringVar(&f.foldedValue, "folded-value", analysis.DefaultProfileValue, "the `VALUE` --folded writes: "+
		strings.Join(analysis.ProfileValues, ", "))
	fl.BoolVar(&f.fullStacks, "full-stacks", false, "attribute memory to whole stacks, not to their first frame outside PyTorch and Python")
	ignoredWith(cmd, "no-replay", "diagnoses the final state only", "whatif")
	needsFlag(cmd, "folded", "it chooses what the folded stacks count", "folded-value")
	return cmd
}

func runAnalyze(cmd *cobra.Command, f analyzeFlags, path string, stdout, _ io.Writer) error {
	if err := checkCapacity(cmd, f.capacity); err != nil {
		return err
	}
	if !slices.Contains(analysis.ProfileValues, f.foldedValue) {
		return usageErrorf(cmd, "--folded-value %s: want one of %s", untrusted.Quote(f.foldedValue), strings.Join(analysis.ProfileValues, ", "))
	}
	if err := checkOutputs(cmd, []fileFlag{{"--html", f.html}, {"--profile", f.profile}, {"--folded", f.folded}},
		[]fileFlag{{"the snapshot argument", path}}); err != nil {
		return err
	}
	// The snapshot serves nothing after the analysis: its traces can go
	// once they are the what-if replays' ops.
	opts := analysis.Options{Capacity: int64(f.capacity), NoReplay: f.noReplay, FullStacks: f.fullStacks, ReleaseTraces: true}
	if len(f.whatIf) > 0 {
		specs, err := registry.SplitLists(f.whatIf)
		if err != nil {
			return usageErrorf(cmd, "--whatif: %v", err)
		}
		for _, s := range specs {
			if _, err := registry.New(s, mem.MustDevice(80*mem.GiB, 0)); errors.Is(err, alloc.ErrBadSpec) {
				return usageErrorf(cmd, "--whatif %s: %v%s", s, err, human.DidYouMean(human.SpecKind(s), registry.Names()))
			}
		}
		opts.WhatIf = specs
	}
	defer analysis.SoftMemoryLimit(path)()
	rep, name, readErr, err := readAnalyze(cmd, path, analysis.ReadOptions(f.noReplay), opts)
	if readErr != nil {
		return readErr
	}
	var ce *analysis.CapacityError
	if errors.As(err, &ce) {
		return usageErrorf(cmd, "--capacity %s: %s", f.capacity, ce.Advice(name))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, w := range rep.CapacityWarnings() {
		fmt.Fprintf(cmd.ErrOrStderr(), "gpufrag: warning: %s\n", w)
	}
	if len(f.whatIf) > 0 && !slices.ContainsFunc(rep.Devices, func(d analysis.Device) bool { return d.WhatIf != nil }) {
		// Whether --whatif can act depends on the file, not the command
		// line: a warning, not a usage error.
		fmt.Fprintf(cmd.ErrOrStderr(), "gpufrag: warning: --whatif: %s has no allocation history to replay (a memory_stats dump, a snapshot taken without torch.cuda.memory._record_memory_history, or a replay that stopped), so no allocator was tried\n", name)
	}
	if f.html != "" {
		page, err := pages.Analyze(name, rep)
		if err == nil {
			err = writePage(f.html, page)
		}
		if err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	if err := writeProfiles(f, rep); err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, rep.Doc(name), true)
	}
	return rep.WriteTextWidth(stdout, name, tableWidth(stdout))
}

// writeProfiles writes the attribution files --profile and --folded ask for.
func writeProfiles(f analyzeFlags, rep *analysis.Report) error {
	for _, out := range []struct {
		flag, path string
		write      func(io.Writer) error
	}{{"--profile", f.profile, rep.WriteProfile},
		{"--folded", f.folded, func(w io.Writer) error { return rep.WriteFolded(w, f.foldedValue) }}} {
		if out.path == "" {
			continue
		}
		var b bytes.Buffer
		if err := out.write(&b); err != nil {
			return fmt.Errorf("%s: %w", out.flag, err)
		}
		if err := outfile.WriteFile(out.path, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("%s: %w", out.flag, err)
		}
	}
	return nil
}
