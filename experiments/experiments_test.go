package experiments

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/testkit"
)

// root is the repository root seen from this package's directory.
const root = ".."

// heavy are the experiments whose reduced runs take seconds; they are
// skipped under -short and under -race (testkit.SlowBuild).
var heavy = map[string]bool{"weekly-compaction": true, "long-chat-compaction": true, "compaction-threshold": true, "day-long-growth": true}

func load(t *testing.T) []*Experiment {
	t.Helper()
	exps, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return exps
}

func TestLoad(t *testing.T) {
	exps := load(t)
	if len(exps) < 16 {
		t.Fatalf("%d experiments, want at least 16 (one per claim of the findings issue)", len(exps))
	}
	for _, e := range exps {
		base := filepath.Base(e.File)
		if !strings.HasSuffix(strings.TrimSuffix(base, ".yaml"), e.Name) {
			t.Errorf("%s: name %q does not match the file name", e.File, e.Name)
		}
		if len(e.Decide) == 0 && e.CannotSimulate == "" {
			t.Errorf("%s: no rule and no cannot_simulate", e.File)
		}
		if e.Reduced == nil && e.Kind() != "arithmetic" {
			t.Errorf("%s: no reduced: overrides; its test would run at full size", e.File)
		}
	}
}

// TestReduced runs every experiment at its reduced size and checks that
// the outcome is consistent with its figures: the verdict is what the rules
// give on the measured figures, every figure is finite, and the verdict
// changes when the figures are destroyed.
func TestReduced(t *testing.T) {
	for _, e := range load(t) {
		t.Run(e.Name, func(t *testing.T) {
			if heavy[e.Name] && (testing.Short() || testkit.SlowBuild) {
				t.Skip("heavy: skipped under -short and -race")
			}
			if e.Kind() == "scenario" && testkit.SlowBuild {
				t.Skip("the engine checks its invariants under -race and -tags invariants: too slow; TestDeterministic covers the pool")
			}
			t.Parallel()
			outs, err := RunAll([]*Experiment{e}, Options{Root: root, Reduced: true, Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			o := outs[0]
			if o.Skipped != "" {
				t.Fatalf("skipped at reduced size: %s (reduced runs must use data in the repository)", o.Skipped)
			}
			if len(o.Runs) != len(e.Runs) {
				t.Fatalf("%d run outcomes for %d runs", len(o.Runs), len(e.Runs))
			}
			for _, r := range o.Runs {
				for _, m := range neededMetrics(e) {
					v, ok := r.Figures[m]
					if !ok || math.IsInf(v, 0) {
						t.Errorf("run %s: metric %s = %v (present %v)", r.Name, m, v, ok)
					}
				}
			}
			if e.Kind() != "arithmetic" && len(o.plots) != len(o.Runs) {
				t.Errorf("%d plot lines for %d runs", len(o.plots), len(o.Runs))
			}
			// The verdict is a function of the figures and the rules.
			f := o.Figures()
			var checks []CheckResult
			for _, c := range e.Decide {
				checks = append(checks, c.Evaluate(f))
			}
			verdict, why := Decide(checks, e.CannotSimulate)
			if verdict != o.Verdict || why != o.Why || !reflect.DeepEqual(checks, o.Checks) && !hasNaN(checks) {
				t.Errorf("verdict %q (%s) is not what the figures give: %q (%s)", o.Verdict, o.Why, verdict, why)
			}
			// Without figures every rule fails.
			if len(e.Decide) > 0 {
				empty := Figures{}
				var none []CheckResult
				for _, c := range e.Decide {
					none = append(none, c.Evaluate(empty))
				}
				if v, _ := Decide(none, ""); v != DoesNotHold {
					t.Errorf("with no figures the verdict is %q, want %q", v, DoesNotHold)
				}
			}
		})
	}
}

func hasNaN(cs []CheckResult) bool {
	for _, c := range cs {
		if math.IsNaN(c.Value) {
			return true
		}
	}
	return false
}

// tiny is a small scenario experiment, quick even under -race.
func tiny(t *testing.T) *Experiment {
	t.Helper()
	e, err := Parse([]byte(`name: tiny
claim: A tiny claim.
scenario:
  model: llama-3.1-8b
  gpu: h100-80g
  seed: 7
  duration: 1m
  workload:
    requests: {rate: 1, count: 12, prompt: {dist: uniform, min: 100, max: 3000}, output: {dist: uniform, min: 10, max: 200}}
runs:
  - {name: paged, kv: "paged:16", alloc: caching}
  - {name: grow, kv: contiguous-grow, alloc: caching}
  - {name: expandable, kv: contiguous-grow, alloc: "caching:expandable_segments:True"}
show: [completed, kv_held.mean]
decide:
  - {metric: frag.mean, run: expandable, ref: grow, combine: diff, op: le, value: 0}
  - {metric: "waste.mean[50%:100%]", run: paged, op: lt, value: 0.5}
`), "tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestDeterministic checks that outcomes do not depend on the parallelism.
func TestDeterministic(t *testing.T) {
	exps, err := Select(load(t), []string{"bin-packing-cluster", "kv-1m-llama70b"})
	if err != nil {
		t.Fatal(err)
	}
	exps = append(exps, tiny(t))
	var docs [2][]byte
	for i, par := range []int{1, 3} {
		outs, err := RunAll(exps, Options{Root: root, Reduced: true, Parallel: par})
		if err != nil {
			t.Fatal(err)
		}
		docs[i], err = json.Marshal(outs)
		if err != nil {
			t.Fatal(err)
		}
		docs[i] = append(docs[i], Markdown(outs, strings.Repeat("0", 64))...)
		if got := outs[2].Runs[0].Figures["completed"]; got < 1 {
			t.Fatalf("tiny experiment: %v requests completed on paged", got)
		}
	}
	if string(docs[0]) != string(docs[1]) {
		t.Fatal("outcomes differ between --parallel 1 and 3")
	}
}

// TestFindingsUpToDate fails when the experiment files changed without
// docs/findings.md being regenerated.
func TestFindingsUpToDate(t *testing.T) {
	exps := load(t)
	want, err := Digest(exps, func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(root, filepath.FromSlash(p))) })
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, FindingsPath))
	if err != nil {
		t.Fatal(err)
	}
	got := FindingsDigest(doc)
	if got != want {
		t.Fatalf("%s was generated from experiment files with digest %q, the files now have %q: regenerate it from the repository root with\n\t%s",
			FindingsPath, got, want, RegenerateCommand)
	}
	for _, e := range exps {
		if !strings.Contains(string(doc), "## ") || !strings.Contains(string(doc), "experiments run "+e.Name) {
			t.Errorf("%s has no section for %s", FindingsPath, e.Name)
		}
	}
}

func TestDigestChanges(t *testing.T) {
	exps := load(t)
	read := func(content string) func(string) ([]byte, error) {
		return func(string) ([]byte, error) { return []byte(content), nil }
	}
	a, err := Digest(exps, read("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Digest(exps, read("b"))
	if err != nil {
		t.Fatal(err)
	}
	if a == b || len(a) != 64 {
		t.Fatalf("digest does not cover the referenced scenario files: %s %s", a, b)
	}
	if FindingsDigest([]byte("x experiments-digest: sha256:"+a+" y")) != a {
		t.Fatal("FindingsDigest does not read back the digest")
	}
}

func TestSelect(t *testing.T) {
	exps := load(t)
	if _, err := Select(exps, []string{"no-such"}); err == nil || !strings.Contains(err.Error(), "int8-kv") {
		t.Fatalf("unknown name: %v", err)
	}
	got, err := Select(exps, []string{"int8-kv", "int8-kv"})
	if err != nil || len(got) != 1 {
		t.Fatalf("duplicate names: %d, %v", len(got), err)
	}
}

func TestSkippedWhenDataAbsent(t *testing.T) {
	e, err := Parse([]byte(`name: absent
claim: c
cluster: {nodes: no/such/nodes.csv, pods: no/such/pods.csv}
runs: [{name: a, policy: random}]
decide: [{metric: "alloc_ratio@100", run: a, op: gt, value: 0}]
`), "absent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	outs, err := RunAll([]*Experiment{e}, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Verdict != Skipped || !strings.Contains(outs[0].Why, "no/such/nodes.csv") || !strings.Contains(outs[0].Why, "give it with --root DIR") {
		t.Fatalf("verdict %q (%s), want skipped naming the file and --root", outs[0].Verdict, outs[0].Why)
	}
}

// TestScenarioFileOutsideRoot: an experiment whose scenario is a file of
// the repository, run from elsewhere, failed with a bare "open
// docs/scenarios/...: no such file or directory", then aborted the whole
// run; it is skipped like one whose data is absent, saying what to do.
func TestScenarioFileOutsideRoot(t *testing.T) {
	exps, err := Select(load(t), []string{"vllm-token-states"})
	if err != nil {
		t.Fatal(err)
	}
	if exps[0].ScenarioFile == "" {
		t.Fatal("vllm-token-states no longer reads a scenario file: pick another experiment for this test")
	}
	outs, err := RunAll(exps, Options{Root: t.TempDir(), Reduced: true})
	if err != nil || outs[0].Verdict != Skipped || !strings.Contains(outs[0].Why, "scenario file "+exps[0].ScenarioFile) ||
		!strings.Contains(outs[0].Why, "run from the repository's root or give it with --root DIR") {
		t.Fatalf("got %v, %+v; want it skipped naming the file and --root", err, outs)
	}
}

func TestWriteFindings(t *testing.T) {
	exps, err := Select(load(t), []string{"kv-1m-llama70b"})
	if err != nil {
		t.Fatal(err)
	}
	exps = append(exps, tiny(t))
	outs, err := RunAll(exps, Options{Root: root, Reduced: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteFindings(dir, outs, "ab"); err == nil {
		t.Fatal("reduced outcomes were written as findings")
	}
	for _, o := range outs {
		o.Reduced = false
	}
	if err := os.MkdirAll(filepath.Join(dir, PlotsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, PlotsDir, "gone.png")
	if err := os.WriteFile(stale, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFindings(dir, outs, strings.Repeat("ab", 32)); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(dir, FindingsPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"experiments-digest: sha256:" + strings.Repeat("ab", 32), "| 1 | A 1M-token", "**does not hold**",
		"![tiny](findings/tiny.png)", RegenerateCommand} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("findings lack %q", want)
		}
	}
	png, err := os.ReadFile(filepath.Join(dir, PlotsDir, "tiny.png"))
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Errorf("plot: %v", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale plot kept: %v", err)
	}
}
