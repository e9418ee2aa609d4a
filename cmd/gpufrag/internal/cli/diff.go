package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
	"github.com/gpufrag/gpufrag/snapshot/analysis/pages"
	"github.com/spf13/cobra"
)

// diffFlags are the flags of `gpufrag diff`.
type diffFlags struct {
	json       bool      // --json
	html       string    // --html FILE
	capacity   mem.Bytes // --capacity
	fullStacks bool      // --full-stacks
	top        int       // --top
	noReplay   bool      // --no-replay
}

// maxDiffFiles bounds the snapshots one diff reads: each is decoded and
// kept whole until the comparison is printed, so their number multiplies
// the memory; 1,024 covers the ranks of the largest jobs people snapshot.
const maxDiffFiles = 1024

func newDiffCmd(stdout io.Writer) *cobra.Command {
	var f diffFlags
	cmd := &cobra.Command{
		Use:   "diff A B [C ...]",
		Short: "Compare memory snapshots: side by side, or which of N ranks is the outlier",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErrorf(cmd, "diff takes two or more snapshot files, got %d", len(args))
			}
			if len(args) > maxDiffFiles {
				return usageErrorf(cmd, "diff takes at most %d snapshot files, got %d", maxDiffFiles, len(args))
			}
			stdin := 0
			for _, a := range args {
				if a == "-" {
					stdin++
				}
			}
			if stdin > 1 {
				return usageErrorf(cmd, "standard input (-) can be read once, given %d times", stdin)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd, f, args, stdout)
		},
	}
	withHelp(cmd, "diff")
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "print the comparison as JSON (schema in docs/json.md)")
	fl.StringVar(&f.html, "html", "", "also write a self-contained HTML page (the segment maps side by side) to `FILE`")
	fl.Var(&f.capacity, "capacity", "device memory for the max-allocatable figures, a `SIZE` such as 80GiB or 79.65GiB (rounded down to whole bytes); "+
		"without it, what an out-of-memory entry records, else 80GiB")
	fl.Lookup("capacity").DefValue = "0"
	fl.BoolVar(&f.fullStacks, "full-stacks", false, "compare allocation sites by whole stacks, not by their first frame outside PyTorch")
	fl.IntVar(&f.top, "top", 10, "list at most `N` sites and N segments that appeared or vanished (all are counted)")
	fl.BoolVar(&f.noReplay, "no-replay", false, "do not replay the traces (out-of-memory entries are listed, not explained)")
	return cmd
}

func runDiff(cmd *cobra.Command, f diffFlags, paths []string, stdout io.Writer) error {
	if err := checkCapacity(cmd, f.capacity); err != nil {
		return err
	}
	if f.top < 1 {
		return usageErrorf(cmd, "--top %d: must be at least 1", f.top)
	}
	var inputs []fileFlag
	for _, p := range paths {
		inputs = append(inputs, fileFlag{"the snapshot argument", p})
	}
	if err := checkOutputs(cmd, []fileFlag{{"--html", f.html}}, inputs); err != nil {
		return err
	}
	opts := analysis.Options{Capacity: int64(f.capacity), NoReplay: f.noReplay, WhatIf: []string{},
		FullStacks: f.fullStacks, TopSites: f.top, TopSegments: f.top, ReleaseTraces: true}
	reps := make([]*analysis.Report, len(paths))
	names := make([]string, len(paths))
	var tooSmall *analysis.CapacityError // the largest a file's live blocks need
	var tooSmallName string
	for i, p := range paths {
		rep, name, readErr, err := readAnalyze(cmd, p, analysis.ReadOptions(f.noReplay), opts)
		if readErr != nil {
			return readErr
		}
		// As analyze: a capacity below a file's live blocks is the flag's
		// mistake, and one below what a file reserved is warned about. The
		// files are all read first, so that the advice is the capacity
		// they all fit in, not the first one's.
		var ce *analysis.CapacityError
		if errors.As(err, &ce) {
			if tooSmall == nil || ce.Active > tooSmall.Active {
				tooSmall, tooSmallName = ce, name
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, w := range rep.CapacityWarnings() {
			fmt.Fprintf(cmd.ErrOrStderr(), "gpufrag: warning: %s: %s\n", name, w)
		}
		if len(rep.Devices) == 0 {
			return fmt.Errorf("%s: no device has a segment or a trace event: nothing to compare", name)
		}
		reps[i], names[i] = rep, name
	}
	if tooSmall != nil {
		return usageErrorf(cmd, "--capacity %s: %s", f.capacity, tooSmall.Advice(tooSmallName))
	}
	c, err := analysis.Compare(reps, names, analysis.DiffOptions{TopSites: f.top, TopSegments: f.top})
	if err != nil {
		return err
	}
	if f.html != "" {
		page, err := pages.Comparison(c)
		if err == nil {
			err = writePage(f.html, page)
		}
		if err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	if f.json {
		return writeJSON(stdout, c.Doc(), true)
	}
	return c.WriteTextWidth(stdout, tableWidth(stdout))
}
