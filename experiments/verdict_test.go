package experiments

import (
	"math"
	"strings"
	"testing"
)

func f64(v float64) *float64 { return &v }

// TestRuleShapes feeds synthetic figures to every shape of rule and checks
// that the verdict follows the figures.
func TestRuleShapes(t *testing.T) {
	cases := []struct {
		name       string
		check      Check
		pass, fail Figures
	}{
		{"lt", Check{Metric: "m", Run: "a", Op: "lt", Value: f64(0.1)},
			Figures{"a": {"m": 0.05}}, Figures{"a": {"m": 0.1}}},
		{"le", Check{Metric: "m", Run: "a", Op: "le", Value: f64(0.1)},
			Figures{"a": {"m": 0.1}}, Figures{"a": {"m": 0.11}}},
		{"gt", Check{Metric: "m", Run: "a", Op: "gt", Value: f64(2)},
			Figures{"a": {"m": 2.5}}, Figures{"a": {"m": 2}}},
		{"ge", Check{Metric: "m", Run: "a", Op: "ge", Value: f64(2)},
			Figures{"a": {"m": 2}}, Figures{"a": {"m": 1.99}}},
		{"between", Check{Metric: "m", Run: "a", Op: "between", Low: f64(0.2), High: f64(0.3)},
			Figures{"a": {"m": 0.25}}, Figures{"a": {"m": 0.31}}},
		{"between-low-edge", Check{Metric: "m", Run: "a", Op: "between", Low: f64(0.2), High: f64(0.3)},
			Figures{"a": {"m": 0.2}}, Figures{"a": {"m": 0.19}}},
		{"approx", Check{Metric: "m", Run: "a", Op: "approx", Value: f64(70), Tol: 0.1},
			Figures{"a": {"m": 76}}, Figures{"a": {"m": 327.68}}},
		{"ratio", Check{Metric: "m", Run: "a", Ref: "b", Combine: "ratio", Op: "between", Low: f64(2), High: f64(3)},
			Figures{"a": {"m": 500}, "b": {"m": 200}}, Figures{"a": {"m": 500}, "b": {"m": 400}}},
		{"diff", Check{Metric: "m", Run: "a", Ref: "b", Combine: "diff", Op: "lt", Value: f64(0)},
			Figures{"a": {"m": 0.1}, "b": {"m": 0.2}}, Figures{"a": {"m": 0.2}, "b": {"m": 0.2}}},
		{"reduction", Check{Metric: "m", Run: "a", Ref: "b", Combine: "reduction", Op: "ge", Value: f64(0.9)},
			Figures{"a": {"m": 5}, "b": {"m": 100}}, Figures{"a": {"m": 20}, "b": {"m": 100}}},
		{"ref-metric", Check{Metric: "end", Run: "a", RefMetric: "start", Combine: "diff", Op: "gt", Value: f64(0.05)},
			Figures{"a": {"end": 0.3, "start": 0.05}}, Figures{"a": {"end": 0.3, "start": 0.28}}},
		{"ref-metric-other-run", Check{Metric: "x", Run: "a", Ref: "b", RefMetric: "y", Combine: "ratio", Op: "lt", Value: f64(1)},
			Figures{"a": {"x": 1}, "b": {"y": 2}}, Figures{"a": {"x": 2}, "b": {"y": 1}}},
		{"missing-ref", Check{Metric: "m", Run: "a", Ref: "b", Combine: "ratio", Op: "gt", Value: f64(0)},
			Figures{"a": {"m": 1}, "b": {"m": 1}}, Figures{"a": {"m": 1}}},
		{"zero-ref", Check{Metric: "m", Run: "a", Ref: "b", Combine: "reduction", Op: "le", Value: f64(1)},
			Figures{"a": {"m": 0}, "b": {"m": 1}}, Figures{"a": {"m": 0}, "b": {"m": 0}}},
		{"nan", Check{Metric: "m", Run: "a", Op: "lt", Value: f64(1)},
			Figures{"a": {"m": 0}}, Figures{"a": {"m": math.NaN()}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, f := c.check.Evaluate(c.pass), c.check.Evaluate(c.fail)
			if !p.Pass || f.Pass {
				t.Fatalf("%s: pass case %v (value %v), fail case %v (value %v)", c.check.String(), p.Pass, p.Value, f.Pass, f.Value)
			}
			if v, _ := Decide([]CheckResult{p}, ""); v != Holds {
				t.Errorf("passing rule gives %q", v)
			}
			if v, _ := Decide([]CheckResult{f}, ""); v != DoesNotHold {
				t.Errorf("failing rule gives %q", v)
			}
			if v, _ := Decide([]CheckResult{p, f}, ""); v != HoldsInPart {
				t.Errorf("one of two gives %q", v)
			}
			if v, why := Decide([]CheckResult{p}, "kernel speed"); v != HoldsInPart || !strings.Contains(why, "kernel speed") {
				t.Errorf("passing rule with an untested part gives %q (%s)", v, why)
			}
		})
	}
}

func TestDecideNoRules(t *testing.T) {
	if v, why := Decide(nil, "needs a GPU"); v != CannotSimTest || why != "needs a GPU" {
		t.Fatalf("%q %q", v, why)
	}
	if v, _ := Decide(nil, ""); v != DoesNotHold {
		t.Fatalf("%q", v)
	}
}

func TestMetricNames(t *testing.T) {
	good := map[string][]string{
		"scenario":   {"frag_rate.p50", "kv.token_states", "frag.mean", "waste.mean[90%:100%]", "kv_held.mean[5m:10m]", "defrag.freed_per_run_share"},
		"cluster":    {"alloc_ratio@100", "stranded_nodes@0", "failed"},
		"arithmetic": {"kv_total_gb"},
	}
	bad := map[string][]string{
		"scenario":   {"", "frag", "frag.mean[", "frag.mean[10%:5%]", "frag.mean[1m:90%]", "nope.mean", "waste.mean[0%:101%]", "frag.mean[-1%:5%]"},
		"cluster":    {"alloc_ratio", "alloc_ratio@x", "alloc_ratio@200", "nope@10"},
		"arithmetic": {"frag.mean"},
	}
	for kind, names := range good {
		for _, n := range names {
			if _, err := parseMetric(n, kind); err != nil {
				t.Errorf("%s %q: %v", kind, n, err)
			}
		}
	}
	for kind, names := range bad {
		for _, n := range names {
			if _, err := parseMetric(n, kind); err == nil {
				t.Errorf("%s %q: no error", kind, n)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	const ok = `name: x
claim: c
arithmetic: true
runs:
  - {name: a, model: llama-3-70b, tokens: 10}
decide:
  - {metric: kv_total_gb, run: a, op: gt, value: 1}
`
	if _, err := Parse([]byte(ok), "ok.yaml"); err != nil {
		t.Fatalf("valid file: %v", err)
	}
	cases := []struct{ name, src, want string }{
		{"unknown field", strings.Replace(ok, "claim: c", "claim: c\nclam: d", 1), `f.yaml: line 3: field "clam"`},
		{"wrong type", strings.Replace(ok, "tokens: 10", "tokens: many", 1), `f.yaml: line 5: field "runs[0].tokens"`},
		{"bad op", strings.Replace(ok, "op: gt", "op: near", 1), `f.yaml: line 7: field "decide[0]": op "near"`},
		{"bad metric", strings.Replace(ok, "metric: kv_total_gb", "metric: frag.mean", 1), `line 7: field "decide[0]": metric "frag.mean"`},
		{"unknown run", strings.Replace(ok, "run: a", "run: b", 1), `field "decide[0]": run "b"`},
		{"no claim", strings.Replace(ok, "claim: c", "claim: ''", 1), `line 2: field "claim"`},
		{"bad name", strings.Replace(ok, "name: x", "name: X Y", 1), `line 1: field "name"`},
		{"two setups", ok + "cluster: {nodes: a, pods: b}\n", `field "scenario": want exactly one`},
		{"two documents", ok + "---\nname: y\n", "more than one YAML document"},
		{"syntax", "name: [", "f.yaml"},
		{"not a mapping", "- 1\n", "f.yaml: line 1: want a mapping"},
		{"between without high", strings.Replace(ok, "op: gt, value: 1", "op: between, low: 1", 1), "between needs low <= high"},
		{"combine without ref", strings.Replace(ok, "op: gt", "combine: ratio, op: gt", 1), "needs ref"},
		{"duplicate run", strings.Replace(ok, "runs:\n", "runs:\n  - {name: a, model: llama-3-70b, tokens: 1}\n", 1), `field "runs[1].name": run "a" defined twice`},
		// A run's specs are parsed as the file is read (scenario.KVSpec,
		// AllocSpec), a bad one named with its line.
		{"bad kv", strings.Replace(ok, "model: llama-3-70b, tokens: 10", "model: llama-3-70b, tokens: 10, kv: 'paged:0'", 1), `f.yaml: line 5: field "kv": bad strategy spec: "paged:0"`},
		{"bad alloc", strings.Replace(ok, "model: llama-3-70b, tokens: 10", "model: llama-3-70b, tokens: 10, alloc: slab", 1), `f.yaml: line 5: field "alloc": bad allocator spec: unknown allocator "slab"`},
		{"inline scenario unknown field", `name: x
claim: c
scenario:
  model: llama-3.1-8b
  modle: x
runs: [{name: a, kv: "paged:16", alloc: caching}]
decide: [{metric: frag.mean, run: a, op: lt, value: 1}]
`, `f.yaml: line 5: field "scenario.modle"`},
		// Issue 28: what a document can multiply is bounded before it is
		// decoded: aliases of aliases, and runs (each a simulation).
		{"aliases of aliases", ok + "a: &a [1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n" +
			"c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d]\n",
			"f.yaml: line 12: the aliases up to *d expand the document to more than 16384 values and keys"},
		{"65 runs", strings.Replace(ok, "runs:\n", "runs:\n"+strings.Repeat("  - &r {name: a, model: llama-3-70b, tokens: 1}\n", 1)+
			strings.Repeat("  - *r\n", 63), 1), `f.yaml: line 4: field "runs": 65 runs, more than 64 (scenario.MaxRuns)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), "f.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	files, err := embeddedFiles()
	if err != nil {
		f.Fatal(err)
	}
	for _, fl := range files {
		f.Add(fl.data)
	}
	f.Add([]byte("name: x\nclaim: c\na: &a [1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n" +
		"c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d]\n"))
	f.Add([]byte("name: x\nclaim: c\narithmetic: true\nruns: [&r {name: a, model: llama-3-70b, tokens: 1}" + strings.Repeat(", *r", 64) + "]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), ErrBadExperiment.Error()) {
				t.Fatalf("error without the package's prefix: %v", err)
			}
			return
		}
		// A parsed experiment's rules evaluate on empty figures without
		// panicking, and fail.
		for _, c := range e.Decide {
			if r := c.Evaluate(Figures{}); r.Pass {
				t.Fatalf("rule %s passes without figures", c.String())
			}
		}
	})
}
