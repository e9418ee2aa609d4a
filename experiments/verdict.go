package experiments

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Verdicts.
const (
	Holds         = "holds"
	HoldsInPart   = "holds in part"
	DoesNotHold   = "does not hold"
	CannotSimTest = "cannot be tested by simulation"
	Skipped       = "skipped"
)

// Figures are the measured values: run name → metric → value.
type Figures map[string]map[string]float64

// CheckResult is one decision rule applied to the figures.
type CheckResult struct {
	Label string  `json:"label,omitempty"`
	Rule  string  `json:"rule"`
	Value float64 `json:"value"`
	Pass  bool    `json:"pass"`
}

// MarshalJSON writes a value that is not finite as null.
func (c CheckResult) MarshalJSON() ([]byte, error) {
	type plain struct {
		Label string   `json:"label,omitempty"`
		Rule  string   `json:"rule"`
		Value *float64 `json:"value"`
		Pass  bool     `json:"pass"`
	}
	return json.Marshal(plain{c.Label, c.Rule, finiteOrNil(c.Value), c.Pass})
}

func finiteOrNil(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// Evaluate applies one check to the figures. A missing or non-finite value
// fails the check.
func (c *Check) Evaluate(f Figures) CheckResult {
	v, ok := f[c.Run][c.Metric]
	if !ok {
		v = math.NaN()
	}
	if refRun, refMetric, combined := c.reference(); combined {
		r, ok := f[refRun][refMetric]
		if !ok {
			r = math.NaN()
		}
		switch c.Combine {
		case "ratio":
			v = v / r
		case "diff":
			v = v - r
		case "reduction":
			v = (r - v) / r
		}
	}
	pass := false
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		switch c.Op {
		case "lt":
			pass = v < *c.Value
		case "le":
			pass = v <= *c.Value
		case "gt":
			pass = v > *c.Value
		case "ge":
			pass = v >= *c.Value
		case "between":
			pass = v >= *c.Low && v <= *c.High
		case "approx":
			pass = math.Abs(v-*c.Value) <= c.Tol*math.Abs(*c.Value)
		}
	}
	return CheckResult{Label: c.Label, Rule: c.String(), Value: v, Pass: pass}
}

// reference is the run and metric a combined check compares with.
func (c *Check) reference() (run, metric string, ok bool) {
	if c.Combine == "" {
		return "", "", false
	}
	run, metric = c.Ref, c.RefMetric
	if run == "" {
		run = c.Run
	}
	if metric == "" {
		metric = c.Metric
	}
	return run, metric, true
}

// Subject is what the check measures, e.g. "frag_rate.p50 of paged ÷ caching".
func (c *Check) Subject() string {
	s := c.Metric + " of " + c.Run
	run, metric, ok := c.reference()
	if !ok {
		return s
	}
	r := metric + " of " + run
	switch {
	case run == c.Run:
		r = metric
	case metric == c.Metric:
		r = run
	}
	switch c.Combine {
	case "ratio":
		s += " ÷ " + r
	case "diff":
		s += " − " + r
	case "reduction":
		if metric == c.Metric {
			s = "reduction of " + c.Metric + " from " + run + " to " + c.Run
		} else {
			s = "reduction from " + r + " to " + s
		}
	}
	return s
}

// String is the rule in words.
func (c *Check) String() string {
	s := c.Subject()
	switch c.Op {
	case "lt":
		return fmt.Sprintf("%s < %s", s, num(*c.Value))
	case "le":
		return fmt.Sprintf("%s ≤ %s", s, num(*c.Value))
	case "gt":
		return fmt.Sprintf("%s > %s", s, num(*c.Value))
	case "ge":
		return fmt.Sprintf("%s ≥ %s", s, num(*c.Value))
	case "between":
		return fmt.Sprintf("%s in [%s, %s]", s, num(*c.Low), num(*c.High))
	case "approx":
		return fmt.Sprintf("%s ≈ %s ±%s%%", s, num(*c.Value), num(c.Tol*100))
	}
	return s
}

// Decide combines check results into a verdict and the reason for it: every
// check passes → holds; none → does not hold; some → holds in part. When
// the experiment says part of the claim cannot be simulated, a verdict of
// holds becomes holds in part, and with no checks at all the verdict is
// cannot be tested by simulation.
func Decide(results []CheckResult, cannotSimulate string) (verdict, why string) {
	if len(results) == 0 {
		if cannotSimulate != "" {
			return CannotSimTest, cannotSimulate
		}
		return DoesNotHold, "no rule decided it"
	}
	pass := 0
	var parts []string
	for _, r := range results {
		mark := "✗"
		if r.Pass {
			pass++
			mark = "✓"
		}
		parts = append(parts, fmt.Sprintf("%s %s: %s", mark, ruleLabel(r), num(r.Value)))
	}
	switch {
	case pass == len(results) && cannotSimulate != "":
		verdict = HoldsInPart
		parts = append(parts, "not simulated: "+cannotSimulate)
	case pass == len(results):
		verdict = Holds
	case pass == 0:
		verdict = DoesNotHold
	default:
		verdict = HoldsInPart
	}
	return verdict, strings.Join(parts, "; ")
}

func ruleLabel(r CheckResult) string {
	if r.Label != "" {
		return r.Label + " (" + r.Rule + ")"
	}
	return r.Rule
}

// num formats a figure compactly: 4 significant digits, no exponent below
// 1e12.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 0):
		return "∞"
	case v == math.Trunc(v) && math.Abs(v) < 1e12:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1e12:
		return fmt.Sprintf("%.4g", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.4g", v)
	}
}
