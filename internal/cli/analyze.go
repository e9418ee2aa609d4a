package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/spec"
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
}

const analyzeLong = `Analyze diagnoses a PyTorch CUDA memory snapshot: the pickle written by
torch.cuda.memory._dump_snapshot() (every format generation since PyTorch 2.0,
protocols 2-5), or torch.cuda.memory_stats() dumped as JSON. The pickle is
read by a bounded decoder that refuses every opcode that could run code.

For each device it prints:

  - the memory classes (reserved, allocated, requested, active, cached free,
    reserved but unallocated, rounding waste, free memory stranded by live
    blocks), health (largest free block / cached free; below 0.5 is worth
    acting on), the largest free block and the largest request that would
    still succeed, and the dispersion of live block sizes;
  - the segments that waste most, memory per stream and per pool, and the
    call sites whose live blocks keep fragmented segments from being freed;
  - for each out-of-memory entry of the trace: what was requested, what was
    free and whether fragmentation or demand made it fail;
  - replay fidelity: the trace replayed through gpufrag's model of the caching
    allocator with the file's own settings, after rebuilding the segments that
    existed before recording started; every alloc address and segment_alloc
    size is compared and mismatches are listed. A PyTorch 2.0 file, whose
    trace has no alloc event, is replayed from its block histories in a
    reconstructed (not recorded) order, which checks segment sizes, rounding
    and splits against the recorded layout;
  - what-if: the same requests under other settings (expandable_segments,
    max_split_size_mb, roundup_power2_divisions, garbage_collection_threshold)
    and gpufrag's other allocators, with peak reserved, OOMs and
    fragmentation each, and a recommended PYTORCH_CUDA_ALLOC_CONF line.

FILE "-" reads standard input. A file that cannot be read safely (a pickle
that would run code, a truncated or corrupt file, a field of the wrong type)
is an error naming the byte offset and the field.`

func newAnalyzeCmd(stdout, stderr io.Writer) *cobra.Command {
	var f analyzeFlags
	cmd := &cobra.Command{
		Use:   "analyze FILE",
		Short: "Diagnose a PyTorch memory snapshot: fragmentation, OOMs, replay and what-if",
		Long:  analyzeLong,
		Example: `  # A snapshot taken with torch.cuda.memory._dump_snapshot("snap.pickle"):
  gpufrag analyze snap.pickle

  # As JSON (schema in docs/json.md), what-if on a 40 GiB device:
  gpufrag analyze snap.pickle --json --capacity 40GiB

  # An HTML report with the timeline and a segment map:
  gpufrag analyze snap.pickle --html report.html`,
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
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "print the analysis as JSON (schema in docs/json.md)")
	fl.StringVar(&f.html, "html", "", "also write a self-contained HTML report (timeline, segment map) to `FILE`")
	fl.Var(&f.capacity, "capacity", "device memory for the what-if replays, a `SIZE` such as 40GiB; "+
		"without it, what an out-of-memory entry of the trace records, else 80GiB")
	fl.Lookup("capacity").DefValue = "0" // pflag then prints no "(default 0B)": the usage says it
	fl.StringArrayVar(&f.whatIf, "whatif", nil, "allocator `SPEC` to try instead of the default alternatives; repeat it or separate with commas")
	fl.BoolVar(&f.noReplay, "no-replay", false, "diagnose the final state only: no replay, timeline or what-if")
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
	if err := checkOutputs(cmd, []fileFlag{{"--html", f.html}}, []fileFlag{{"the snapshot argument", path}}); err != nil {
		return err
	}
	// The snapshot serves nothing after the analysis: its traces can go
	// once they are the what-if replays' ops.
	opts := analysis.Options{Capacity: int64(f.capacity), NoReplay: f.noReplay, ReleaseTraces: true}
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
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if f.html != "" {
		if err := writeAnalyzeHTML(f.html, name, rep); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	if f.json {
		return writeJSON(stdout, rep.Doc(name), true)
	}
	return rep.WriteText(stdout, name)
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

// trimNewline drops one trailing newline.
func trimNewline(s string) string { return strings.TrimSuffix(s, "\n") }
