package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/exporter/rules"
)

// rulesHistoryCSV writes a CSV history: vllm-0 with 100 points of health
// 0.505 ... 1.000 and vllm-1 with 5 points.
func rulesHistoryCSV(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("timestamp,instance,model,health\n")
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "%d,vllm-0,llama-3-8b,%v\n", 1764460800+60*i, 0.5+float64(i)/200)
	}
	for i := range 5 {
		fmt.Fprintf(&b, "%d,vllm-1,qwen2.5-7b,0.3\n", 1764460800+60*i)
	}
	path := filepath.Join(t.TempDir(), "health.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRulesCommand(t *testing.T) {
	hist := rulesHistoryCSV(t)

	// Default: the rules file on stdout. vllm-0's threshold: rank
	// 0.05·99 = 4.95 between 0.525 and 0.530 gives 0.52975, minus 0.05 is
	// 0.47975, floored 0.479; vllm-1 has 5 < 60 points: 0.5.
	code, out, errb := run(t, "", "rules", "--history", hist)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	for _, w := range []string{
		`gpufrag_health_ratio{instance="vllm-0",model="llama-3-8b"} < 0.479`,
		`gpufrag_health_ratio{instance="vllm-1",model="qwen2.5-7b"} < 0.5`,
		"record: gpufrag:health_ratio:threshold", "for: 10m", "severity: warning",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("rules output lacks %q:\n%s", w, out)
		}
	}

	// --out writes the file and prints the table; from stdin with --format.
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "r.yml")
	code, out, errb = run(t, string(data), "rules", "--history", "-", "--format", "csv", "--out", path, "--for", "15m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if !strings.Contains(out, "0.479") || !strings.Contains(out, "fewer than 60 points") || !strings.Contains(out, "2 alert rules written to "+path) {
		t.Errorf("table:\n%s", out)
	}
	written, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(written), "for: 15m") {
		t.Errorf("rules file (%v):\n%s", err, written)
	}

	// --json with a quantile of 0.9: vllm-0 rank 0.1·99 = 9.9 between
	// 0.550 and 0.555 gives 0.5545, threshold 0.504.
	code, out, errb = run(t, "", "rules", "--history", hist, "--json", "--quantile", "0.9")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var doc rules.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	if doc.Format != "csv" || doc.Quantile != 0.9 || doc.WindowS != 7*24*3600 || len(doc.Thresholds) != 2 ||
		doc.Thresholds[0].Threshold != 0.504 || !doc.Thresholds[1].Fallback {
		t.Errorf("JSON document: %+v", doc)
	}
}

func TestRulesCommandErrors(t *testing.T) {
	hist := rulesHistoryCSV(t)
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("1,a,m,0.5\n2,a,m,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	many := filepath.Join(t.TempDir(), "many.csv")
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, "1,vllm-%d,m,0.5\n", i)
	}
	if err := os.WriteFile(many, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// Binary input (as /dev/zero) is refused at its first bytes; it was read
	// up to the 256 MiB limit first.
	zeros := filepath.Join(t.TempDir(), "zeros")
	if err := os.WriteFile(zeros, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"rules"}, 2, "--history FILE is required"},
		{[]string{"rules", "--history", hist, "--severity", "a\"b: c\nd"}, 2, `--severity "a\"b: c\nd": byte 6: control character U+000A`},
		{[]string{"rules", "x.csv"}, 2, "rules takes no arguments"},
		{[]string{"rules", "--history", hist, "--quantile", "1.5"}, 2, "--quantile 1.5: must be above 0.5 and below 1"},
		{[]string{"rules", "--history", hist, "--window", "a week"}, 2, "--window"},
		{[]string{"rules", "--history", hist, "--for", "soon"}, 2, "--for"},
		{[]string{"rules", "--history", hist, "--format", "xml"}, 2, "--format"},
		{[]string{"rules", "--history", hist, "--min", "0.6", "--max", "0.5"}, 2, "--max 0.5: must be in [min, 1] (min is 0.6)"},
		{[]string{"rules", "--history", hist, "--min-points", "0"}, 2, "--min-points 0: must be at least 1"},
		{[]string{"rules", "--history", filepath.Join(t.TempDir(), "none.csv")}, 1, "no such file"},
		{[]string{"rules", "--history", bad}, 1, "bad.csv:2:7: health: value 2 is outside [0, 1]"},
		{[]string{"rules", "--history", hist, "--format", "prometheus"}, 1, "health.csv:1:2: not JSON: byte 1: invalid character"},
		{[]string{"rules", "--history", hist, "--max-instances", "0"}, 2, "--max-instances 0: must be at least 1"},
		{[]string{"rules", "--history", hist, "--max-instances", "1"}, 1,
			"health.csv: rules: too many instances: the history has 2 (instance, model) pairs, over the limit of 1 (--max-instances); " +
				"each makes two rules: split the fleet into several histories (a query per part, e.g. {instance=~\"a.*\"}) " +
				"and write one rules file each, or raise the limit to 2\n"},
		{[]string{"rules", "--history", many, "--max-instances", "1"}, 1, "many.csv:9: rules: too many series: more than 8 (instance, model) series (8 per --max-instances 1)"},
		{[]string{"rules", "--history", zeros}, 1, "zeros:1:1: not a text file: byte 0 is NUL"},
		{[]string{"rules", "--history", hist, "--out", hist}, 2, "--out " + hist + " is the input file given to --history"},
		{[]string{"rules", "--history", hist, "--out", filepath.Join(filepath.Dir(hist), ".", "health.csv")}, 2, "refusing to overwrite it"},
	} {
		code, _, errb := run(t, "", c.args...)
		if code != c.code || !strings.Contains(errb, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errb, c.code, c.want)
		}
	}
	if data, err := os.ReadFile(hist); err != nil || !strings.HasPrefix(string(data), "timestamp,instance") {
		t.Errorf("the history was overwritten (%v): %.100s", err, data)
	}
}

// TestRulesPromtoolLint (issue 28): instances that share a threshold (the
// fleet fallback, here three; one without a model) make no rules that
// promtool check rules reports as duplicates, with its lint fatal.
func TestRulesPromtoolLint(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH; CI installs it (apt-get install prometheus)")
	}
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.csv")
	csv := "timestamp,instance,model,health\n1,vllm-0,m,0.9\n2,vllm-1,m,0.8\n3,vllm-2,,0.7\n4,vllm-0,n,0.9\n"
	if err := os.WriteFile(hist, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.yml")
	if code, stdout, stderr := run(t, "", "rules", "--history", hist, "--out", out); code != 0 || strings.Count(stdout, "fleet default") != 4 {
		t.Fatalf("exit %d, want 4 thresholds at the fleet default:\n%s%s", code, stdout, stderr)
	}
	b, err := exec.Command(promtool, "check", "rules", "--lint=duplicate-rules", "--lint-fatal", out).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "SUCCESS: 8 rules found") {
		t.Errorf("promtool: %s", b)
	}
}
