package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/spec"
	"github.com/gpufrag/gpufrag/internal/loc"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
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
	fl.Var(&f.capacity, "capacity", "device memory for the what-if replays, a `SIZE` such as 40GiB; "+
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
	if f.capacity < 0 {
		return usageErrorf(cmd, "--capacity %s: must not be negative", f.capacity)
	}
	if f.capacity > 0 {
		if _, err := mem.NewDevice(int64(f.capacity), 0); err != nil {
			return usageErrorf(cmd, "--capacity %s: %v", f.capacity, err)
		}
	}
	if !slices.Contains(analysis.ProfileValues, f.foldedValue) {
		return usageErrorf(cmd, "--folded-value %s: want one of %s", loc.Quote(f.foldedValue), strings.Join(analysis.ProfileValues, ", "))
	}
	if err := checkOutputs(cmd, []fileFlag{{"--html", f.html}, {"--profile", f.profile}, {"--folded", f.folded}},
		[]fileFlag{{"the snapshot argument", path}}); err != nil {
		return err
	}
	// The snapshot serves nothing after the analysis: its traces can go
	// once they are the what-if replays' ops.
	opts := analysis.Options{Capacity: int64(f.capacity), NoReplay: f.noReplay, FullStacks: f.fullStacks, ReleaseTraces: true}
	if len(f.whatIf) > 0 {
		specs, err := allocSpecs(f.whatIf)
		if err != nil {
			return usageErrorf(cmd, "--whatif: %v", err)
		}
		for _, s := range specs {
			if _, err := spec.New(s, mem.MustDevice(80*mem.GiB, 0)); errors.Is(err, alloc.ErrBadSpec) {
				return usageErrorf(cmd, "--whatif: %v", err)
			}
		}
		opts.WhatIf = specs
	}
	ro := *readOpts
	// Without a replay the trace's entries are checked as they stream and
	// only its oom entries kept: memory then follows the segments, not
	// the history.
	ro.TraceOOMsOnly = f.noReplay
	defer softLimit(path)()
	snap, name, err := readSnapshot(cmd.InOrStdin(), path, &ro)
	if err != nil {
		return err
	}
	rep, err := analysis.Analyze(snap, opts)
	var ce *analysis.CapacityError
	if errors.As(err, &ce) {
		return usageErrorf(cmd, "--capacity %s: below the %s that live blocks hold on device %d of %s (%s reserved): "+
			"no allocator could hold them; give at least %s, or leave --capacity out", f.capacity,
			mem.Bytes(ce.Active), ce.Device, name, mem.Bytes(ce.Reserved), mem.Bytes(roundUpUnit(ce.Active)))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	warnCapacityBelowReserved(cmd.ErrOrStderr(), rep)
	if f.html != "" {
		if err := writeAnalyzeHTML(f.html, name, rep); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	if err := writeProfiles(f, rep); err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, rep.Doc(name), true)
	}
	return rep.WriteText(stdout, name)
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
		if err := os.WriteFile(out.path, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("%s: %w", out.flag, err)
		}
	}
	return nil
}

// roundUpUnit rounds n up to a whole GiB from 1 GiB on, else to a whole
// MiB: a size that a suggestion can print exactly (68.97GiB, printed to two
// decimals, may be below the figure it stands for; 69GiB is not).
func roundUpUnit(n int64) int64 {
	u := int64(mem.MiB)
	if n >= mem.GiB {
		u = mem.GiB
	}
	return (n + u - 1) / u * u
}

// warnCapacityBelowReserved warns, for each device analysed at a --capacity
// below what it reserved (at the end of the snapshot or at the timeline's
// peak), that the final state's figures at that capacity describe a state
// the smaller device could not have held. A warning, not an error
// (analysis.CapacityError refuses a capacity below the live blocks): the
// what-ifs answer a fair question there, whether the same requests fit on
// the smaller device when the allocator reserves less (on
// examples/snapshot.pickle, which reserved 73.02GiB, every caching variant
// fits in 72GiB, since the caching allocator frees its cache and retries
// before it fails).
func warnCapacityBelowReserved(w io.Writer, rep *analysis.Report) {
	for _, d := range rep.Devices {
		if d.CapacitySource != "flag" {
			continue
		}
		peak, at := d.Classes.Reserved, "at the end of the snapshot"
		for _, p := range d.Timeline {
			if p.Reserved > peak {
				peak, at = p.Reserved, fmt.Sprintf("at trace event %d", p.Event)
			}
		}
		if peak <= d.Capacity {
			continue
		}
		fmt.Fprintf(w, "gpufrag: warning: --capacity %s is below the %s device %d reserved %s: "+
			"the final state's device-free memory and max allocatable are figured on a device that could not "+
			"have held it; the what-ifs replay the same requests on %s, where an allocator fits only by reserving less\n",
			mem.Bytes(d.Capacity), mem.Bytes(peak), d.Device, at, mem.Bytes(d.Capacity))
	}
}

// readOpts: the analysis reads the stacks of blocks and oom entries only.
var readOpts = &snapshot.Options{SkipTraceFrames: true}

// readSnapshot reads the snapshot at path ("-": standard input) with ro.
// The collector runs as usual (GOGC): the reader streams, so most of what
// decoding allocates is garbage at once. Holding the collector off while
// decoding (until 64 bytes per input byte) had paid when the decoded
// pickle stayed live to the end; streamed, it cost more than it saved
// (a generated 1 GB snapshot, analyze --no-replay: 18.1 s user + 22.2 s
// system and 12.6 GB with it, 21.7 s + 5.8 s and 4.3 GB without).
func readSnapshot(stdin io.Reader, path string, ro *snapshot.Options) (*snapshot.Snapshot, string, error) {
	if path == "-" {
		s, err := snapshot.ReadOptions(stdin, "stdin", ro)
		return s, "stdin", err
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, path, err
	}
	defer file.Close()
	if st, err := file.Stat(); err == nil && st.IsDir() {
		return nil, path, fmt.Errorf("%s: is a directory, not a snapshot file", path)
	}
	s, err := snapshot.ReadOptions(file, path, ro)
	return s, path, err
}

// softLimit sets a soft memory limit (debug.SetMemoryLimit) of 2 bytes per
// byte of the snapshot at path, at least 1 GiB, unless the user set GOGC
// or GOMEMLIMIT, and returns the function that restores the previous one.
// The collector then runs more often as the heap nears the limit instead of
// letting it grow to twice the live data (GOGC=100): an analysis holds
// about 1.5 bytes per input byte at its high-water mark (the trace as
// TraceEntry, then the what-if ops beside it). A generated 1 GB snapshot:
// 3.43 GB peak without a limit, 2.24 GB with GOMEMLIMIT=1800MiB, for 12%
// more CPU.
func softLimit(path string) (restore func()) {
	st, err := os.Stat(path)
	if err != nil || path == "-" || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(max(1<<30, 2*st.Size()))
	return func() { debug.SetMemoryLimit(prev) }
}
