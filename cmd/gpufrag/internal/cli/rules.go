package cli

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/exporter/rules"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// rulesFlags are the flags of `gpufrag rules`.
type rulesFlags struct {
	history   string  // --history
	format    string  // --format
	quantile  float64 // --quantile
	margin    float64 // --margin
	min, max  float64 // --min, --max
	window    string  // --window
	minPoints int     // --min-points
	maxInst   int     // --max-instances
	forDur    string  // --for
	severity  string  // --severity
	out       string  // --out
	json      bool    // --json
}

func newRulesCmd() *cobra.Command {
	d := rules.DefaultOptions()
	f := rulesFlags{
		format: rules.FormatAuto, quantile: d.Quantile, margin: d.Margin, min: d.Min, max: d.Max,
		window: "7d", minPoints: d.MinPoints, maxInst: d.MaxInstances, forDur: "10m", severity: "warning",
	}
	cmd := &cobra.Command{
		Use:   "rules --history FILE",
		Short: "Derive per-instance fragmentation alert thresholds from recorded history",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usageErrorf(cmd, "rules takes no arguments (the history is --history FILE), got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRules(cmd, f)
		},
	}
	withHelp(cmd, "rules")
	fl := cmd.Flags()
	fl.StringVar(&f.history, "history", "", "recorded history `FILE`: Prometheus query_range JSON or CSV (- for standard input)")
	fl.StringVar(&f.format, "format", f.format, "history `FORMAT`: auto, prometheus or csv")
	fl.Float64Var(&f.quantile, "quantile", f.quantile, "quantile `Q` of fragmentation taken as normal (0.5 < Q < 1)")
	fl.Float64Var(&f.margin, "margin", f.margin, "`M` subtracted from the health quantile")
	fl.Float64Var(&f.min, "min", f.min, "lowest threshold `T`")
	fl.Float64Var(&f.max, "max", f.max, "highest threshold `T`")
	fl.StringVar(&f.window, "window", f.window, "history `DURATION` before each instance's last point to use (0: all)")
	fl.IntVar(&f.minPoints, "min-points", f.minPoints, "fewest points `N` for a derived threshold (else 0.5)")
	fl.IntVar(&f.maxInst, "max-instances", f.maxInst, "most (instance, model) pairs `N` in the history (each makes two rules)")
	fl.StringVar(&f.forDur, "for", f.forDur, "`DURATION` the alert condition must hold")
	fl.StringVar(&f.severity, "severity", f.severity, "severity `LABEL` of the alerts")
	fl.StringVar(&f.out, "out", "", "write the rules to `FILE` and print a table of thresholds")
	fl.BoolVar(&f.json, "json", false, "print the thresholds as JSON (schema in docs/monitoring.md)")
	return cmd
}

func runRules(cmd *cobra.Command, f rulesFlags) error {
	if f.history == "" {
		return usageErrorf(cmd, "--history FILE is required")
	}
	o := rules.DefaultOptions()
	o.Quantile, o.Margin, o.Min, o.Max, o.MinPoints = f.quantile, f.margin, f.min, f.max, f.minPoints
	if f.maxInst < 1 {
		return usageErrorf(cmd, "--max-instances %d: must be at least 1", f.maxInst)
	}
	o.MaxInstances = f.maxInst
	if f.window != "0" {
		w, err := model.ParseDuration(f.window)
		if err != nil {
			return usageErrorf(cmd, "--window %q: %v", f.window, err)
		}
		o.Window = time.Duration(w).Seconds()
	} else {
		o.Window = 0
	}
	if err := o.Validate(); err != nil {
		var oe *rules.OptionError
		if errors.As(err, &oe) {
			if flag, ok := rulesFlagOf[oe.Option]; ok {
				return usageErrorf(cmd, "%s %s", flag, oe.Msg)
			}
		}
		return usageErrorf(cmd, "%v", err)
	}
	if _, err := model.ParseDuration(f.forDur); err != nil {
		return usageErrorf(cmd, "--for %q: %v", f.forDur, err)
	}
	if f.severity == "" {
		return usageErrorf(cmd, "--severity: empty")
	}
	// A label value of the rules file: no control character, which would
	// break the YAML line or an alert's notification.
	if err := untrusted.CheckName(f.severity); err != nil {
		return usageErrorf(cmd, "--severity %s: %v: give a plain label such as warning or critical", untrusted.Quote(f.severity), err)
	}
	if err := checkOutputs(cmd, []fileFlag{{"--out", f.out}}, []fileFlag{{"--history", f.history}}); err != nil {
		return err
	}

	if err := checkInputs(fileFlag{"--history", f.history}); err != nil {
		return err
	}
	if !slices.Contains(rules.Formats(), f.format) {
		return usageErrorf(cmd, "--format %q: want auto, prometheus or csv", f.format)
	}
	ropts := rules.ReadOptions{MaxSeries: 8 * o.MaxInstances} // up to 8 GPUs per instance
	h, name, format, err := rules.ReadHistoryFile(f.history, cmd.InOrStdin(), f.format, ropts)
	err = inFlagFile("--history", f.history, err)
	if errors.Is(err, rules.ErrTooManySeries) {
		return fmt.Errorf("%w (8 per --max-instances %d): split the fleet into several histories, or raise --max-instances", err, o.MaxInstances)
	}
	if err != nil {
		return err
	}
	ts, err := rules.Derive(h, o)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	ro := rules.RuleOptions{For: f.forDur, Severity: f.severity, Quantile: o.Quantile}
	stdout := cmd.OutOrStdout()
	if f.out != "" {
		if err := rules.WriteFile(f.out, ts, ro); err != nil {
			return err
		}
	}
	switch {
	case f.json:
		return writeJSON(stdout, rules.NewDocument(f.history, format, f.out, o, ts), true)
	case f.out != "":
		return rules.WriteTable(stdout, ts, o, f.out)
	}
	return rules.WriteRules(stdout, ts, ro)
}

// rulesFlagOf names the flag of each rules.Options option the command sets.
var rulesFlagOf = map[string]string{
	"quantile": "--quantile", "margin": "--margin", "min": "--min", "max": "--max",
	"window": "--window", "min points": "--min-points", "max instances": "--max-instances",
}
