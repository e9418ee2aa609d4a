package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// point is one row of a hand-made history.
type point struct {
	t        float64
	instance string
	model    string
	gpu      string
	health   float64
}

const day = 24 * 3600.0

// handHistory is the history the derivation tests use; the expected
// thresholds in TestDeriveHandMade are worked out by hand from it.
func handHistory() []point {
	var ps []point
	t0 := 1.7e9
	// vllm-0: 100 points, health 0.505, 0.510, ..., 1.000 (i/200 + 0.5),
	// written in reverse time order so that the readers must sort.
	for i := 100; i >= 1; i-- {
		ps = append(ps, point{t0 + float64(i)*60, "vllm-0", "llama-3-8b", "0", 0.5 + float64(i)/200})
	}
	// vllm-1: two GPUs, 60 points each at health 1 (no cache held): clamp at max.
	for _, gpu := range []string{"0", "1"} {
		for i := range 60 {
			ps = append(ps, point{t0 + float64(i)*60, "vllm-1", "qwen2.5-7b", gpu, 1})
		}
	}
	// vllm-2: 10 points only: fallback.
	for i := range 10 {
		ps = append(ps, point{t0 + float64(i)*60, "vllm-2", "llama-3-8b", "0", 0.2})
	}
	// vllm-3: 10 points of health 0 eight days before 60 points of health 0.9.
	for i := range 10 {
		ps = append(ps, point{t0 - 8*day + float64(i)*60, "vllm-3", "", "0", 0})
	}
	for i := range 60 {
		ps = append(ps, point{t0 + float64(i)*60, "vllm-3", "", "0", 0.9})
	}
	return ps
}

func toCSV(ps []point) string {
	var b strings.Builder
	b.WriteString("timestamp,instance,model,health\n# a comment line\n")
	for _, p := range ps {
		if p.gpu != "0" {
			continue // the CSV format has no gpu column: one series per instance
		}
		fmt.Fprintf(&b, "%v,%s,%s,%v\n", p.t, p.instance, p.model, p.health)
	}
	return b.String()
}

// toPromJSON renders ps as a query_range response, one series per
// (instance, model, gpu), values in time order.
func toPromJSON(ps []point, metric string, invert bool) string {
	type sk struct{ instance, model, gpu string }
	byKey := map[sk][]point{}
	var keys []sk
	for _, p := range ps {
		k := sk{p.instance, p.model, p.gpu}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], p)
	}
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",\n")
		}
		pts := byKey[k]
		sort.Slice(pts, func(a, c int) bool { return pts[a].t < pts[c].t })
		fmt.Fprintf(&b, `{"metric":{"__name__":%q,"gpu":%q,"instance":%q,"job":"gpufrag"`, metric, k.gpu, k.instance)
		if k.model != "" {
			fmt.Fprintf(&b, `,"model":%q`, k.model)
		}
		b.WriteString(`},"values":[`)
		for j, p := range pts {
			if j > 0 {
				b.WriteString(",")
			}
			v := p.health
			if invert {
				v = 1 - v
			}
			fmt.Fprintf(&b, `[%v,"%v"]`, p.t, v)
		}
		b.WriteString("]}")
	}
	b.WriteString("]}}\n")
	return b.String()
}

// want is the hand derivation with DefaultOptions (q 0.95, margin 0.05,
// clamp [0.1, 0.9], 7 days, 60 points, fallback 0.5):
//
//	vllm-0: n = 100, rank 0.05·99 = 4.95 between the 5th and 6th smallest,
//	        0.525 and 0.530: low = 0.525·0.05 + 0.530·0.95 = 0.52975;
//	        0.52975 − 0.05 = 0.47975, floored to 0.479.
//	vllm-1: every point 1: low 1, 0.95 > 0.9: clamped to 0.9.
//	vllm-2: 10 points < 60: fallback 0.5 (low is still 0.2).
//	vllm-3: the zeros are 8 days older than the last point: out of the
//	        window; low 0.9, threshold 0.85.
func want(csv bool) []Threshold {
	series1 := 2
	if csv {
		series1 = 1
	}
	return []Threshold{
		{Instance: "vllm-0", Model: "llama-3-8b", Series: 1, Points: 100, From: 1.7e9 + 60, To: 1.7e9 + 6000,
			LowHealth: 0.52975, FragQuantile: 0.47025, Threshold: 0.479},
		{Instance: "vllm-1", Model: "qwen2.5-7b", Series: series1, Points: 120 / (3 - series1), From: 1.7e9, To: 1.7e9 + 59*60,
			LowHealth: 1, FragQuantile: 0, Threshold: 0.9, Clamped: "max"},
		{Instance: "vllm-2", Model: "llama-3-8b", Series: 1, Points: 10, From: 1.7e9, To: 1.7e9 + 9*60,
			LowHealth: 0.2, FragQuantile: 0.8, Threshold: 0.5, Fallback: true},
		{Instance: "vllm-3", Model: "", Series: 1, Points: 60, From: 1.7e9, To: 1.7e9 + 59*60,
			LowHealth: 0.9, FragQuantile: 0.1, Threshold: 0.85},
	}
}

func equalThresholds(t *testing.T, got, want []Threshold) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d thresholds, want %d: %+v", len(got), len(want), got)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for i := range got {
		g, w := got[i], want[i]
		if g.Instance != w.Instance || g.Model != w.Model || g.Series != w.Series || g.Points != w.Points ||
			g.From != w.From || g.To != w.To || !near(g.LowHealth, w.LowHealth) ||
			!near(g.FragQuantile, w.FragQuantile) || g.Threshold != w.Threshold ||
			g.Clamped != w.Clamped || g.Fallback != w.Fallback {
			t.Errorf("threshold %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestDeriveHandMade(t *testing.T) {
	ps := handHistory()
	hc, err := ReadCSV("hand.csv", strings.NewReader(toCSV(ps)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Derive(hc, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	equalThresholds(t, got, want(true))

	for _, c := range []struct {
		metric string
		invert bool
	}{{HealthMetric, false}, {FragmentationMetric, true}} {
		hj, err := ReadPrometheusJSON("hand.json", strings.NewReader(toPromJSON(ps, c.metric, c.invert)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Derive(hj, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		equalThresholds(t, got, want(false))
	}
}

func TestDeriveWindowAndOptions(t *testing.T) {
	h, err := ReadCSV("hand.csv", strings.NewReader(toCSV(handHistory())))
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Window = 0 // every point: vllm-3 has 70, ten of them 0
	got, err := Derive(h, o)
	if err != nil {
		t.Fatal(err)
	}
	// rank 0.05·69 = 3.45 falls between the 4th and 5th smallest, both 0:
	// low 0, below min: 0.1.
	if g := got[3]; g.Points != 70 || g.LowHealth != 0 || g.Threshold != 0.1 || g.Clamped != "min" {
		t.Errorf("vllm-3 over all points: %+v", g)
	}
	// q = 0.9: vllm-0 rank 0.1·99 = 9.9 between 0.550 and 0.555:
	// 0.550·0.1 + 0.555·0.9 = 0.5545; minus 0.05: 0.5045 → 0.504.
	o = DefaultOptions()
	o.Quantile = 0.9
	got, err = Derive(h, o)
	if err != nil {
		t.Fatal(err)
	}
	if g := got[0]; math.Abs(g.LowHealth-0.5545) > 1e-9 || g.Threshold != 0.504 {
		t.Errorf("vllm-0 at q 0.9: %+v", g)
	}
	for _, bad := range []Options{
		{Quantile: 0.5, Max: 1, MinPoints: 1}, {Quantile: 1, Max: 1, MinPoints: 1},
		{Quantile: 0.9, Margin: -0.1, Max: 1, MinPoints: 1}, {Quantile: 0.9, Min: 0.6, Max: 0.5, MinPoints: 1},
		{Quantile: 0.9, Max: 1, MinPoints: 0}, {Quantile: 0.9, Max: 1, MinPoints: 1, Window: -1},
		{Quantile: 0.9, Max: 1, MinPoints: 1, Fallback: 2}, {Quantile: math.NaN(), Max: 1, MinPoints: 1},
	} {
		if _, err := Derive(h, bad); err == nil {
			t.Errorf("Derive accepted options %+v", bad)
		}
	}
	if _, err := Derive(&History{}, DefaultOptions()); err == nil {
		t.Error("Derive accepted an empty history")
	}
}

// naiveQuantile is the textbook definition, written independently of
// Quantile: sort, then walk to the two order statistics around rank φ(n−1).
func naiveQuantile(phi float64, xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := phi * float64(len(s)-1)
	for i := range s {
		if float64(i) <= rank && rank < float64(i+1) {
			if i+1 == len(s) {
				return s[i]
			}
			return s[i] + (rank-float64(i))*(s[i+1]-s[i])
		}
	}
	return s[len(s)-1]
}

func TestQuantile(t *testing.T) {
	if got := Quantile(0.5, []float64{3, 1, 2, 4}); got != 2.5 {
		t.Errorf("median of 1..4 = %v, want 2.5", got)
	}
	if got := Quantile(0.05, []float64{7}); got != 7 {
		t.Errorf("quantile of one value = %v", got)
	}
	if !math.IsNaN(Quantile(0.5, nil)) {
		t.Error("quantile of nothing is not NaN")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		xs := make([]float64, 1+r.IntN(50))
		for i := range xs {
			xs[i] = float64(r.IntN(1000)) / 1000
		}
		phi := r.Float64()
		got, want := Quantile(phi, xs), naiveQuantile(phi, xs)
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("Quantile(%v, %v) = %v, want %v", phi, xs, got, want)
		}
		// The package doc's claim: quantile(1−q, health) = 1 − quantile(q, frag).
		frag := make([]float64, len(xs))
		for i, x := range xs {
			frag[i] = 1 - x
		}
		if d := Quantile(1-phi, xs) - (1 - Quantile(phi, frag)); math.Abs(d) > 1e-12 {
			t.Fatalf("health/fragmentation duality off by %v for %v at %v", d, xs, phi)
		}
	}
}

func TestWriteRules(t *testing.T) {
	h, err := ReadCSV("hand.csv", strings.NewReader(toCSV(handHistory())))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := Derive(h, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	// An instance name that needs quoting in PromQL and YAML.
	ts = append(ts, Threshold{Instance: `we"ird\name: {x}`, Model: "m", Points: 1, Threshold: 0.5, Fallback: true})
	var buf bytes.Buffer
	if err := WriteRules(&buf, ts, RuleOptions{Quantile: 0.95}); err != nil {
		t.Fatal(err)
	}
	var f rulesFile
	if err := yaml.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatalf("output is not YAML: %v\n%s", err, buf.String())
	}
	if len(f.Groups) != 1 || len(f.Groups[0].Rules) != 2*len(ts) {
		t.Fatalf("want one group of %d rules, got %+v", 2*len(ts), f)
	}
	rs := f.Groups[0].Rules
	if r := rs[1]; r.Alert != AlertName || r.For != "10m" ||
		r.Expr != `gpufrag_health_ratio{instance="vllm-0",model="llama-3-8b"} < 0.479` ||
		!reflect.DeepEqual(r.Labels, map[string]string{"instance": "vllm-0", "model": "llama-3-8b", "severity": "warning", "threshold": "0.479"}) ||
		!strings.Contains(r.Annotations["description"], "p95") || r.Annotations["runbook_url"] != DefaultRunbookURL {
		t.Errorf("vllm-0 alert: %+v", r)
	}
	// Issue 28: instances that share a threshold (here the fallback 0.5)
	// got alerts of the same name and labels, duplicates to promtool.
	shared := map[string]int{}
	for _, r := range rs {
		if r.Alert != "" {
			shared[r.Labels["threshold"]]++
		}
	}
	if shared["0.5"] < 2 {
		t.Fatalf("the test needs two alerts at 0.5: %v", shared)
	}
	checkUniqueRules(t, f)
	if r := rs[0]; r.Record != ThresholdRecord || r.Expr != "vector(0.479)" ||
		!reflect.DeepEqual(r.Labels, map[string]string{"instance": "vllm-0", "model": "llama-3-8b"}) {
		t.Errorf("vllm-0 record: %+v", r)
	}
	if r := rs[7]; r.Expr != `gpufrag_health_ratio{instance="vllm-3",model=""} < 0.85` || rs[6].Labels["model"] != "" ||
		!reflect.DeepEqual(r.Labels, map[string]string{"instance": "vllm-3", "severity": "warning", "threshold": "0.85"}) {
		t.Errorf("vllm-3 (no model) rules: %+v %+v", rs[6], r)
	}
	if r := rs[9]; r.Expr != `gpufrag_health_ratio{instance="we\"ird\\name: {x}",model="m"} < 0.5` ||
		!strings.Contains(r.Annotations["description"], "too little history") {
		t.Errorf("quoted instance: %+v", r)
	}
	if err := WriteRules(&buf, ts, RuleOptions{For: "ten minutes"}); err == nil {
		t.Error("WriteRules accepted for \"ten minutes\"")
	}

	// promtool is the judge of validity when it is installed.
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH; CI installs it (apt-get install prometheus)")
	}
	path := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", "--lint=duplicate-rules", "--lint-fatal", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// checkUniqueRules fails when two rules of f have the same name (alert or
// record) and labels: what promtool check rules reports as duplicate rules
// (its duplicate-rules lint compares exactly these).
func checkUniqueRules(t *testing.T, f rulesFile) {
	t.Helper()
	seen := map[string]int{}
	for _, g := range f.Groups {
		for i, r := range g.Rules {
			key := r.Alert + r.Record
			for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
				key += "\x00" + k + "=" + r.Labels[k]
			}
			if j, dup := seen[key]; dup {
				t.Errorf("rules %d and %d have the same name and labels: %+v", j, i, r)
			}
			seen[key] = i
		}
	}
}

func TestThresholdJSON(t *testing.T) {
	b, err := json.Marshal(Threshold{Instance: "i", Threshold: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"threshold":0.4`) || !strings.Contains(string(b), `"fragmentation_quantile"`) {
		t.Errorf("JSON field names changed: %s", b)
	}
}

// TestWriteRulesStreamsTheDocument: the streamed file is byte for byte the
// whole document through one yaml.v3 encoder, with names that YAML quotes,
// folds or writes as block scalars (newlines, long lines, leading spaces).
func TestWriteRulesStreamsTheDocument(t *testing.T) {
	long := strings.Repeat("very-long-instance-name-", 20)
	ts := []Threshold{
		{Instance: "vllm-0", Model: "llama", Points: 100, Threshold: 0.479, LowHealth: 0.52975, FragQuantile: 0.47025},
		{Instance: "multi\nline\n\ninstance", Model: "m\n", Points: 1, Threshold: 0.5, Fallback: true},
		{Instance: "  leading", Model: "#comment: x", Points: 70, Threshold: 0.9, Clamped: "max"},
		{Instance: long, Model: "yes", Points: 61, Threshold: 0.1, Clamped: "min"},
		{Instance: "tab\there", Model: "", Points: 2, Threshold: 0.5, Fallback: true},
	}
	for _, ts := range [][]Threshold{ts, nil} {
		o := RuleOptions{Quantile: 0.95, Group: "g: x", For: "5m", Severity: "page"}
		var got bytes.Buffer
		if err := WriteRules(&got, ts, o); err != nil {
			t.Fatal(err)
		}
		doc := rulesFile{Groups: []ruleGroup{{Name: o.Group}}}
		o.RunbookURL = DefaultRunbookURL
		for _, th := range ts {
			r, a := thresholdRules(th, o)
			doc.Groups[0].Rules = append(doc.Groups[0].Rules, r, a)
		}
		want, err := encodeYAML(doc)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want) {
			t.Errorf("%d thresholds: streamed file differs from the document:\n%s\n--- want\n%s", len(ts), got.String(), want)
		}
	}
}

func TestNewDocument(t *testing.T) {
	o := Options{Quantile: 0.9, Margin: 0.05, Min: 0.1, Max: 0.9, Window: 3600, MinPoints: 12, Fallback: 0.5, MaxInstances: 7}
	ts := []Threshold{{Instance: "a", Threshold: 0.4}}
	d := NewDocument("h.csv", "csv", "", o, ts)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	// out is omitted when empty; MaxInstances is not part of the document.
	want := `{"history":"h.csv","format":"csv","quantile":0.9,"margin":0.05,"min":0.1,"max":0.9,"window_s":3600,"min_points":12,"fallback":0.5,"thresholds":[` +
		string(must(json.Marshal(ts[0]))) + `]}`
	if string(b) != want {
		t.Errorf("document:\n got %s\nwant %s", b, want)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
