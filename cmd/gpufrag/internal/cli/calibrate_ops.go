package cli

import (
	"fmt"
	"github.com/gpufrag/gpufrag/internal/human"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
)

// runCalibrateOps is calibrate --ops: a profile's linear-layer and
// attention terms fitted to operator timings taken on a GPU by
// calib/device/steptime.py (calib.FitOps).
func runCalibrateOps(cmd *cobra.Command, f *calibrateFlags, args []string) error {
	stdout := cmd.OutOrStdout()
	switch {
	case len(args) > 0:
		return usageErrorf(cmd, "--ops fits operator timings alone: give benchmark result FILEs in a separate run")
	case f.gpu == "":
		return usageErrorf(cmd, "--gpu is required: the GPU the timings were taken on, whose profile's peaks (sustained, sim.SustainedPeaks) the efficiencies are shares of (%s)",
			strings.Join(model.GPUNames(), ", "))
	}
	if _, err := checkGPUFlag(cmd, "--gpu", f.gpu); err != nil {
		return err
	}
	engine := sim.EngineVLLMV1
	if f.engine != "" {
		var err error
		if engine, err = sim.ParseEngine(f.engine); err != nil {
			return usageErrorf(cmd, "--engine %q: want one of %s%s", f.engine, strings.Join(sim.EngineNames(), ", "), human.DidYouMean(f.engine, sim.EngineNames()))
		}
	}
	inputs := []fileFlag{{"--ops", f.ops}, {"--profile", f.profile}}
	if err := checkOutputs(cmd, []fileFlag{{"--output", f.output}}, inputs); err != nil {
		return err
	}
	if err := checkInputs(inputs...); err != nil {
		return err
	}
	start, name := (*sim.Profile)(nil), ""
	if f.profile != "" {
		p, err := readProfileFile(f.profile)
		if err != nil {
			return err
		}
		start, name = p, f.profile
	} else {
		version, err := checkEngineVersion(cmd, f.engine, f.engineVersion)
		if err != nil {
			return err
		}
		p, err := sim.DefaultProfile(f.gpu, engine, version)
		if err != nil {
			return usageErrorf(cmd, "--gpu %s: %v (give a starting --profile)", f.gpu, err)
		}
		start, name = p, "the embedded "+f.gpu+" "+engine.String()+" profile"
	}
	fh, err := os.Open(f.ops)
	if err != nil {
		return fmt.Errorf("--ops: %w", err)
	}
	defer fh.Close()
	ops, err := calib.ReadOps(fh, f.ops)
	if err != nil {
		return err
	}
	fit, err := calib.FitOps(ops, start)
	if err != nil {
		return fmt.Errorf("%s: %w", f.ops, err)
	}
	return writeFitted(stdout, f, &fit.Fitted, fit, func(w io.Writer) error { return fit.WriteText(w, ops, name, f.output) })
}
