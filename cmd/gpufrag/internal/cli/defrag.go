package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/defrag"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
)

// defragFlags are the flags of `gpufrag defrag`.
type defragFlags struct {
	gpu       string // --gpu
	goal      string // --goal
	json      bool   // --json
	device    int    // --device
	allocator string // --allocator
	moves     int    // --moves
}

func newDefragCmd() *cobra.Command {
	f := defragFlags{gpu: "h100-80g", goal: "compact", moves: 10}
	cmd := &cobra.Command{
		Use:   "defrag FILE",
		Short: "Plan and price the compaction of a snapshot or saved layout",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(cmd, "defrag takes one file (a snapshot or a saved layout), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDefrag(cmd, f, args[0])
		},
	}
	withHelp(cmd, "defrag")
	fl := cmd.Flags()
	fl.StringVar(&f.gpu, "gpu", f.gpu, "GPU `NAME` whose bandwidth prices the copies and whose capacity a snapshot is read against ("+strings.Join(model.GPUNames(), ", ")+")")
	fl.StringVar(&f.goal, "goal", f.goal, "`GOAL`: compact, or fit:SIZE (e.g. fit:2GiB)")
	fl.BoolVar(&f.json, "json", false, "print the plan as JSON (schema in docs/json.md)")
	fl.IntVar(&f.device, "device", 0, "device `N` of a snapshot")
	fl.StringVar(&f.allocator, "allocator", "", "allocator `SPEC` whose relocation rules apply: "+registry.RelocationSummary()+" (default: the file's, else inferred from pool names)")
	fl.IntVar(&f.moves, "moves", f.moves, "print the first `N` moves (-1: all)")
	return cmd
}

// runDefrag checks the flags, reads the layout, plans and prints.
func runDefrag(cmd *cobra.Command, f defragFlags, path string) error {
	gpu, err := checkGPUFlag(cmd, "--gpu", f.gpu)
	if err != nil {
		return err
	}
	goal, err := defrag.ParseGoal(f.goal)
	if err != nil {
		return usageErrorf(cmd, "--goal: %v", err)
	}
	if f.device < 0 {
		return usageErrorf(cmd, "--device %d: must be 0 or more", f.device)
	}
	if f.moves < -1 {
		return usageErrorf(cmd, "--moves %d: want -1 (every move), 0 or a positive number", f.moves)
	}
	var flagAlloc registry.Spec
	if f.allocator != "" {
		if flagAlloc, err = registry.Parse(f.allocator); err != nil {
			return usageErrorf(cmd, "--allocator: %v", err)
		}
	}
	r := cmd.InOrStdin()
	name := "stdin"
	if path != "-" {
		if err := checkNotDir(path, "a snapshot or a saved layout"); err != nil {
			return err
		}
		fh, err := os.Open(path)
		if err != nil {
			return err
		}
		defer fh.Close()
		r, name = fh, path
	}
	in, err := defrag.ReadInput(r, name, defrag.InputOptions{Device: f.device, Capacity: gpu.Capacity,
		Parse: func(s string) (alloc.Described, error) { return registry.Parse(s) }, SnapshotAllocator: registry.Default()})
	var noDevice *defrag.NoDeviceError
	if errors.As(err, &noDevice) {
		return usageErrorf(cmd, "--device %d: %v", f.device, err)
	}
	if err != nil {
		return err
	}
	if err := in.CheckGPU(gpu); err != nil {
		return usageErrorf(cmd, "--gpu %s: %v", gpu.Name, err)
	}
	if c := in.Layout.Capacity; goal.Kind == defrag.GoalFit && c > 0 && goal.Size > c {
		return usageErrorf(cmd, "--goal %s: larger than the device (%s): no plan makes room for it; give the size of the request that failed (its out-of-memory message says it)",
			f.goal, mem.FormatBytes(c))
	}
	if f.allocator != "" {
		in.Allocator = flagAlloc
	} else if in.Allocator == nil {
		in.Allocator = registry.ForPools(in.Layout) // a layout file that names none
	}
	p, err := defrag.PlanLayout(in.Layout, goal, defrag.Options{Allocator: in.Allocator})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	cm := defrag.DefaultCostModel
	out := cmd.OutOrStdout()
	if f.json {
		return writeJSON(out, defrag.NewReport(name, in.Source, f.device, gpu, cm, &p, f.moves), true)
	}
	return defrag.WriteTextWidth(out, in, gpu, cm, p, f.moves, tableWidth(out))
}
