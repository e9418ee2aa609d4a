package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/optrace"
)

// replayFlags are the flags of `gpufrag replay`.
type replayFlags struct {
	allocs   []string  // --alloc, each a spec or a comma-separated list
	capacity mem.Bytes // --capacity
	other    mem.Bytes // --other
	json     bool      // --json
}

func newReplay() *cobra.Command {
	f := replayFlags{capacity: mem.Bytes(80 * mem.GiB)}
	cmd := &cobra.Command{
		Use:   "replay [OPS]",
		Short: "Replay an allocation op trace through allocators and compare them",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf(cmd, "replay takes at most one trace file, got %d arguments (%s)",
					len(args), strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			path := ""
			if len(args) == 1 {
				path = args[0]
			}
			return runReplay(cmd, f, path)
		},
	}
	withHelp(cmd, "replay")
	cmd.Long = replayLong(cmd.Long)
	fl := cmd.Flags()
	fl.StringArrayVar(&f.allocs, "alloc", nil,
		"allocator `SPEC` to replay through; repeat it or separate specs with commas (default: all "+strconv.Itoa(len(registry.Kinds))+", as --alloc all)")
	fl.Var(&f.capacity, "capacity", "device memory the allocators may use, a `SIZE` with units such as 80GiB or 512MiB; a decimal size is rounded down to whole bytes")
	fl.Var(&f.other, "other", "`SIZE` of device memory already taken by weights, the CUDA context or other processes")
	fl.BoolVar(&f.json, "json", false, "print the results as JSON (schema in docs/json.md)")
	return cmd
}

// replayLong fills replay's long help (help/replay.txt) in: the embedded
// example and the allocators (registry.Kinds).
func replayLong(help string) string {
	var kinds strings.Builder
	w := 0
	for _, k := range registry.Kinds {
		w = max(w, len(k.Name))
	}
	for _, k := range registry.Kinds {
		fmt.Fprintf(&kinds, "  %-*s  %s\n", w, k.Name, k.Summary)
		if k.Example != k.Name {
			fmt.Fprintf(&kinds, "  %-*s  e.g. %s\n", w, "", k.Example)
		}
	}
	return strings.NewReplacer("{example}", human.Wrap("Without OPS, replay runs an embedded example of 5,000 ops: "+exampleAbout+".", 76),
		"{n}", strconv.Itoa(len(registry.Kinds)), "{allocators}", kinds.String()).Replace(help)
}

// runReplay checks the flags, reads the trace, replays it and prints.
func runReplay(cmd *cobra.Command, f replayFlags, path string) error {
	specs, err := registry.Names(), error(nil) // no --alloc: every allocator
	if len(f.allocs) > 0 {
		if specs, err = registry.SplitLists(f.allocs); err != nil {
			return usageErrorf(cmd, "--alloc: %v", err)
		}
	}
	capacity, other := int64(f.capacity), int64(f.other)
	if _, err := mem.NewDevice(capacity, other); err != nil {
		return usageErrorf(cmd, "--capacity %s, --other %s: %v", f.capacity, f.other, err)
	}
	newAllocator := func(s string) (alloc.Allocator, error) {
		dev, err := mem.NewDevice(capacity, other)
		if err != nil {
			return nil, err
		}
		return registry.New(s, dev)
	}
	// Build every allocator once before reading the trace, so a bad spec is
	// reported at once, even when the trace comes from a slow pipe. Other
	// errors (an allocator that cannot be built) come from ReplayAll, after
	// the trace has been read and checked.
	for _, s := range specs {
		if _, err := newAllocator(s); errors.Is(err, alloc.ErrBadSpec) {
			if len(f.allocs) == 0 {
				// Every allocator, not one the user named: what is wrong is
				// the device the flags give it (arena's 0.9 of the free
				// memory is less than a driver page).
				return usageErrorf(cmd, "--capacity %s, --other %s leave too little free memory for allocator %s "+
					"(without --alloc replay runs every allocator; --alloc picks some): %v",
					f.capacity, f.other, s, err)
			}
			return usageErrorf(cmd, "--alloc %s: %v%s", s, err, human.DidYouMean(human.SpecKind(s), registry.Names()))
		}
	}

	ops, name := []optrace.Op(nil), exampleName
	if path == "" {
		ops, err = optrace.Read(bytes.NewReader(exampleTrace), exampleName)
	} else if err = checkNotDir(path, "an op trace file"); err == nil {
		ops, name, err = optrace.ReadFile(path, cmd.InOrStdin())
	}
	if err != nil {
		return err
	}
	results, err := optrace.ReplayAllWorkers(ops, specs, newAllocator, 0)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	doc := optrace.Report{Trace: name, CapacityBytes: capacity, OtherUseBytes: other, Results: results}
	if f.json {
		return writeJSON(out, doc, true)
	}
	what := name
	if path == "" {
		what = "the embedded example trace (a Llama-3-8B-like server; see gpufrag replay --help)"
	}
	return doc.WriteTextWidth(out, what, len(ops), tableWidth(out))
}
