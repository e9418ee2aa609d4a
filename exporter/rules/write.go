package rules

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
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

// rulesFile is the document WriteRules streams (tests decode it, and
// compare the stream with this document encoded whole).
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
// ThresholdRecord{instance, model} and an alert AlertName{instance, model,
// severity, threshold} that fires when gpufrag_health_ratio{instance,
// model} stays below the threshold for o.For. Every rule has its own name
// and labels (promtool's duplicate-rules lint), as the thresholds are of
// distinct (instance, model) groups; model is left out of the labels when
// empty. Label values are quoted for PromQL, so any UTF-8 value is safe.
//
// The file is streamed: one group, each rule encoded on its own and written
// out, so memory does not grow with the number of thresholds (a YAML
// encoder over the whole document held about 46 KB per instance).
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
	bw := bufio.NewWriterSize(w, 64<<10)
	rw := &ruleWriter{w: bw}
	// The same bytes as a yaml.v3 encoder with indent 2 over
	// {groups: [{name, rules: [...]}]}: the header, then each rule as a
	// one-element sequence indented under "rules:".
	head, err := encodeYAML(map[string]string{"name": o.Group})
	if err != nil {
		return err
	}
	if _, err := bw.WriteString("groups:\n  - " + string(head)); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	if len(ts) == 0 {
		_, _ = bw.WriteString("    rules: []\n")
	} else {
		_, _ = bw.WriteString("    rules:\n")
	}
	for _, t := range ts {
		record, alert := thresholdRules(t, o)
		rw.rule(record)
		rw.rule(alert)
		if rw.err != nil {
			return rw.err
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	return nil
}

// thresholdRules returns the recording rule and the alert of t.
func thresholdRules(t Threshold, o RuleOptions) (rule, rule) {
	thr := strconv.FormatFloat(t.Threshold, 'f', -1, 64)
	sel := fmt.Sprintf("instance=%s,model=%s", strconv.Quote(t.Instance), strconv.Quote(t.Model))
	labels := map[string]string{"instance": t.Instance}
	if t.Model != "" {
		labels["model"] = t.Model
	}
	record := rule{
		Record: ThresholdRecord,
		Expr:   "vector(" + thr + ")",
		Labels: labels,
	}
	how := fmt.Sprintf("the p%s of its fragmentation over %d points is %.3f (health %.3f), minus the margin",
		strconv.FormatFloat(o.Quantile*100, 'f', -1, 64), t.Points, t.FragQuantile, t.LowHealth)
	switch {
	case t.Fallback:
		how = fmt.Sprintf("too little history (%d points): the fleet convention", t.Points)
	case t.Clamped != "":
		how += ", clamped to the " + t.Clamped
	}
	// The alert carries the instance's labels too, which its series give
	// every alert anyway: without them, two instances that share a
	// threshold have two rules of the same name and labels, which
	// promtool check rules reports as duplicates.
	alertLabels := map[string]string{"severity": o.Severity, "threshold": thr}
	maps.Copy(alertLabels, labels)
	alert := rule{
		Alert:  AlertName,
		Expr:   fmt.Sprintf("%s{%s} < %s", HealthMetric, sel, thr),
		For:    o.For,
		Labels: alertLabels,
		Annotations: map[string]string{
			"summary": "GPU memory of {{ $labels.instance }} ({{ $labels.model }}) is more fragmented than usual",
			"description": "Health {{ $value | printf \"%.3f\" }} on GPU {{ $labels.gpu }}, pool {{ $labels.pool }} of " +
				"{{ $labels.instance }} ({{ $labels.model }}) has been below its threshold " + thr + " for " + o.For +
				". The threshold comes from its own history: " + how + ". Large requests may fail with out-of-memory errors " +
				"although memory looks free; see the runbook.",
			"runbook_url": o.RunbookURL,
		},
	}
	return record, alert
}

// ruleWriter writes rules one at a time as items of the group's "rules:"
// sequence; the first error sticks.
type ruleWriter struct {
	w   *bufio.Writer
	err error
}

// ruleIndent is the indentation of a rule item under "groups: - rules:".
const ruleIndent = "      "

func (rw *ruleWriter) rule(r rule) {
	if rw.err != nil {
		return
	}
	b, err := encodeYAML([]rule{r})
	if err != nil {
		rw.err = err
		return
	}
	for line := range bytes.Lines(b) {
		if len(bytes.TrimRight(line, "\n")) > 0 { // blank lines stay blank inside block scalars
			_, _ = rw.w.WriteString(ruleIndent)
		}
		if _, err := rw.w.Write(line); err != nil {
			rw.err = fmt.Errorf("rules: %w", err)
			return
		}
	}
}

// encodeYAML encodes v as a yaml.v3 encoder with indent 2 does.
func encodeYAML(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	return buf.Bytes(), nil
}
