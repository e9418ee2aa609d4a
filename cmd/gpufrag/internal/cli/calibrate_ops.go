package cli

import (
	"fmt"
	"github.com/gpufrag/gpufrag/internal/human"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/internal/loc"
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
		return usageErrorf(cmd, "--gpu is required: the GPU the timings were taken on, whose datasheet peaks the efficiencies are shares of (%s)",
			strings.Join(modelGPUNames(), ", "))
	}
	if _, err := checkGPUFlag(cmd, "--gpu", f.gpu); err != nil {
		return err
	}
	engine := sim.EngineVLLMV1
	if f.engine != "" {
		var err error
		if engine, err = sim.ParseEngine(f.engine); err != nil {
			return usageErrorf(cmd, "--engine %q: want one of %s%s", f.engine, strings.Join(sim.EngineNames(), ", "), didYouMean(f.engine, sim.EngineNames()))
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
	return writeFitted(stdout, f, &fit.Fitted, fit, func(sb *strings.Builder) { writeOpsReport(sb, fit, ops, name, f.output) })
}

// writeOpsReport prints the fitted terms and every point, before and after.
func writeOpsReport(sb *strings.Builder, f *calib.OpsFit, o *calib.Ops, start, out string) {
	fmt.Fprintf(sb, "%s:\n\n", loc.Printable(fmt.Sprintf("Operator timings of %s on %s (torch %s, CUDA %s, %s), fitted from %s",
		o.Model.Name, f.GPUName, o.Torch, o.CUDA, o.Date, start)))
	t := human.Table{Head: []string{"term", "before", "after"}}
	row := func(name string, v [2]float64, format string) {
		t.Rows = append(t.Rows, []string{name, fmt.Sprintf(format, v[0]), fmt.Sprintf(format, v[1])})
	}
	row("linear.compute_eff_max", f.Linear.ComputeEffMax, "%.3f")
	row("linear.compute_half_tokens", f.Linear.ComputeHalfTokens, "%.1f")
	row("linear.weight_bw_eff", f.Linear.WeightBWEff, "%.3f")
	row("linear.blend_exponent", f.Linear.BlendExponent, "%.2f")
	row("attention.prefill_compute_eff", f.Attention.PrefillComputeEff, "%.3f")
	row("attention.kv_bw_eff", f.Attention.KVBWEff, "%.3f")
	t.Write(sb)
	sb.WriteString("\n")
	p := human.Table{Head: []string{"op", "point", "measured ms", "before ms", "error", "after ms", "error"}}
	for _, x := range f.Points {
		p.Rows = append(p.Rows, []string{x.Op, x.What, fmt.Sprintf("%.4g", x.MeasuredMs),
			fmt.Sprintf("%.4g", x.BeforeMs), fmt.Sprintf("%+.1f%%", 100*x.BeforeError),
			fmt.Sprintf("%.4g", x.AfterMs), fmt.Sprintf("%+.1f%%", 100*x.AfterError)})
	}
	p.Write(sb)
	fmt.Fprintf(sb, "\n|error| over the %d points: median %.1f%%, max %.1f%% before; median %.1f%%, max %.1f%% after.\n",
		len(f.Points), 100*f.MedianBefore, 100*f.MaxBefore, 100*f.MedianAfter, 100*f.MaxAfter)
	if out != "" {
		fmt.Fprintf(sb, "Wrote the profile to %s (use it with gpufrag simulate --profile %s).\n", out, out)
	}
}
