package rules

import (
	"fmt"
	"io"
	"strconv"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// Names of what WriteRules generates.
const (
	// AlertName is the alert of every generated rule; instance and model
	// labels tell the instances apart.
	AlertName = "GPUMemoryBelowUsualHealth"
	// ThresholdRecord is the recording rule holding each instance's
	// threshold, for dashboards (deploy/grafana/gpufrag.json plots it).
	ThresholdRecord = "gpufrag:health_ratio:threshold"
)

// RuleOptions shape the generated rules file.
type RuleOptions struct {
	Group    string // rule group name; default "gpufrag-per-instance"
	For      string // Prometheus duration the condition must hold; default "10m"
	Severity string // severity label; default "warning"
	// RunbookURL is the runbook_url annotation; default the monitoring
	// guide's section on derived thresholds.
	RunbookURL string
	// Quantile is shown in the annotations (the Options.Quantile used).
	Quantile float64
}

// DefaultRunbookURL points at docs/monitoring.md's section on derived thresholds.
const DefaultRunbookURL = "https://github.com/gpufrag/gpufrag/blob/main/docs/monitoring.md#per-instance-thresholds"

type rulesFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name  string `yaml:"name"`
	Rules []rule `yaml:"rules"`
}

type rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// WriteRules writes a Prometheus rules file (the format `promtool check
// rules` accepts) with, for each threshold, a recording rule
// ThresholdRecord{instance, model} and an alert AlertName that fires when
// gpufrag_health_ratio{instance, model} stays below the threshold for
// o.For. Label values are quoted for PromQL, so any UTF-8 value is safe.
func WriteRules(w io.Writer, ts []Threshold, o RuleOptions) error {
	if o.Group == "" {
		o.Group = "gpufrag-per-instance"
	}
	if o.For == "" {
		o.For = "10m"
	}
	if o.Severity == "" {
		o.Severity = "warning"
	}
	if o.RunbookURL == "" {
		o.RunbookURL = DefaultRunbookURL
	}
	if _, err := model.ParseDuration(o.For); err != nil {
		return fmt.Errorf("rules: for %q: %w", o.For, err)
	}
	g := ruleGroup{Name: o.Group}
	for _, t := range ts {
		thr := strconv.FormatFloat(t.Threshold, 'f', -1, 64)
		sel := fmt.Sprintf("instance=%s,model=%s", strconv.Quote(t.Instance), strconv.Quote(t.Model))
		labels := map[string]string{"instance": t.Instance}
		if t.Model != "" {
			labels["model"] = t.Model
		}
		g.Rules = append(g.Rules, rule{
			Record: ThresholdRecord,
			Expr:   "vector(" + thr + ")",
			Labels: labels,
		})
		how := fmt.Sprintf("the p%s of its fragmentation over %d points is %.3f (health %.3f), minus the margin",
			strconv.FormatFloat(o.Quantile*100, 'f', -1, 64), t.Points, t.FragQuantile, t.LowHealth)
		switch {
		case t.Fallback:
			how = fmt.Sprintf("too little history (%d points): the fleet convention", t.Points)
		case t.Clamped != "":
			how += ", clamped to the " + t.Clamped
		}
		g.Rules = append(g.Rules, rule{
			Alert: AlertName,
			Expr:  fmt.Sprintf("%s{%s} < %s", HealthMetric, sel, thr),
			For:   o.For,
			Labels: map[string]string{
				"severity":  o.Severity,
				"threshold": thr,
			},
			Annotations: map[string]string{
				"summary": "GPU memory of {{ $labels.instance }} ({{ $labels.model }}) is more fragmented than usual",
				"description": "Health {{ $value | printf \"%.3f\" }} on GPU {{ $labels.gpu }}, pool {{ $labels.pool }} of " +
					"{{ $labels.instance }} ({{ $labels.model }}) has been below its threshold " + thr + " for " + o.For +
					". The threshold comes from its own history: " + how + ". Large requests may fail with out-of-memory errors " +
					"although memory looks free; see the runbook.",
				"runbook_url": o.RunbookURL,
			},
		})
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(rulesFile{Groups: []ruleGroup{g}}); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	return nil
}
