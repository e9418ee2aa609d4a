package cli

import (
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/workload"
)

// benchSetupWarnings compares what a benchmark run states of its setup
// (calib.StatedSetup: the server's settings it records, the weight type
// its model id names) with the setup simulate replays it with, c, and
// returns a warning for each setting the run states otherwise and no flag
// gave. calibrate replays a run with what it states, so without these a
// profile calibrate fitted would be replayed on another setup (an FP8
// checkpoint's run as BF16 weights). An error of the run's statements
// (a value no flag takes) is a warning too: simulate replays the flags'.
func benchSetupWarnings(name string, b *workload.BenchResult, c *sim.Config, fl *pflag.FlagSet) []string {
	files := []*calib.File{{Name: name, Runs: []*workload.BenchResult{b}}}
	stated, warns, err := calib.StatedSetup(files)
	if err != nil {
		return []string{fmt.Sprintf("%v; simulate replays the flags' setup", err)}
	}
	rm := c.RunModel()
	if b.Runs > 1 && c.PrefixCaching && !c.WarmPrompts && !fl.Changed("warm-prompts") {
		if w := earlierSamePrompts(b); w != "" {
			warns = append(warns, w)
		}
	}
	if e, ok := calib.FilesEngine(files); ok && e == sim.EngineSGLang &&
		c.Engine != e && !fl.Changed("engine") {
		warns = append(warns, fmt.Sprintf("%s is a run of SGLang's bench_serving, which calibrate replays with --engine %v; simulate replays %v: "+
			"give --engine %v to replay it with SGLang's scheduler", name, e, c.Engine, e))
	}
	for _, w := range calib.ModelIDMismatches(rm, files) {
		from := "--model " + rm.Name
		if !fl.Changed("model") {
			from = rm.Name + ", the scenario's model (no --model was given)"
		}
		warns = append(warns, fmt.Sprintf("%s; simulate replays %s: give --model with the model the run served (a preset or its config.json)", w, from))
	}
	return append(warns, statedWarnings("simulate", stated, c, fl, nil)...)
}

// adviseSetupWarnings is benchSetupWarnings for advise, which sweeps the
// engine's limits and memory settings itself and holds only the model, the
// tensor-parallel degree, the KV cache's and weights' types and the
// context fixed: a run whose model id names another model, or that states
// one of those otherwise than advise's flags, is warned about.
func adviseSetupWarnings(name string, b *workload.BenchResult, c *sim.Config, fl *pflag.FlagSet) []string {
	files := []*calib.File{{Name: name, Runs: []*workload.BenchResult{b}}}
	stated, warns, err := calib.StatedSetup(files)
	if err != nil {
		return []string{fmt.Sprintf("%v; advise sizes the candidates for its flags' setup", err)}
	}
	for _, w := range calib.ModelIDMismatches(c.RunModel(), files) {
		warns = append(warns, fmt.Sprintf("%s; advise sizes every candidate for --model %s", w, c.Model.Name))
	}
	return append(warns, statedWarnings("advise", stated, c, fl, []string{"tp", "kv-dtype", "weight-dtype", "max-context"})...)
}

// statedWarnings returns a warning for each setting a run states (of only's
// flags; nil: any) that no flag of cmd gave and that c, the setup cmd
// replays, sets otherwise.
func statedWarnings(cmd string, stated []calib.Stated, c *sim.Config, fl *pflag.FlagSet, only []string) []string {
	var warns []string
	rm := c.RunModel()
	for _, st := range stated {
		if fl.Changed(st.Flag) || only != nil && !slices.Contains(only, st.Flag) {
			continue
		}
		var have string
		switch st.Flag {
		case "tp":
			have = strconv.Itoa(c.TP)
		case "kv-dtype":
			have = c.KVCacheDType().String()
		case "weight-dtype":
			have = rm.WeightDType.String()
		case "max-context":
			n := c.MaxContext
			if n == 0 {
				n = rm.MaxContext // 0: the model's
			}
			have = strconv.Itoa(n)
		case "max-seqs":
			have = strconv.Itoa(c.MaxSeqs)
		case "max-batch-tokens":
			have = strconv.Itoa(c.MaxBatchTokens)
		case "chunked-prefill":
			have = strconv.FormatBool(c.ChunkedPrefill)
		case "prefix-caching":
			have = strconv.FormatBool(c.PrefixCaching)
		case "gpu-memory-utilization":
			have = strconv.FormatFloat(c.GPUMemoryUtilization, 'g', -1, 64)
		default:
			continue
		}
		if canon, ok, err := calib.CanonicalSetting(st.Flag, have); err == nil && ok && canon == st.Value {
			continue
		}
		warns = append(warns, fmt.Sprintf("%s, which calibrate replays as --%s %s; %s replays %s: give --%s %s to replay the run as it ran",
			st, st.Flag, st.Value, cmd, have, st.Flag, st.Value))
	}
	return warns
}

// earlierSamePrompts says, for run b of a file of several, which earlier
// run of the file sent the same prompts (calib.EarlierSamePrompts: the
// same lengths in an order that tells them apart), so that a server with
// prefix caching found them cached, and that calibrate replays b warm; ""
// when none did or the file cannot be read again.
func earlierSamePrompts(b *workload.BenchResult) string {
	fh, err := os.Open(b.File)
	if err != nil {
		return ""
	}
	defer fh.Close()
	runs, err := workload.ReadBench(fh, b.File)
	if err != nil || b.Run < 1 || b.Run > len(runs) {
		return ""
	}
	same, bits := calib.EarlierSamePrompts(runs, b.Run-1)
	if same == nil {
		return ""
	}
	return fmt.Sprintf("run %d of %d: run %d of the file sent the same %d prompt lengths in the same order (odds of 1 in 2^%.0f for unrelated prompts), "+
		"so a server with prefix caching on had these prompts cached, and calibrate replays this run warm; simulate replays it cold: "+
		"give --warm-prompts to start with them cached", b.Run, b.Runs, same.Run, len(b.Requests), bits)
}
