package rules

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGeneratedRulesWithPromtool checks two claims with Prometheus' own
// engine (promtool test rules): quantile_over_time(1 − q, health) on the
// server equals Derive's LowHealth, and the generated alert fires for a
// series just below its threshold and not for one just above.
func TestGeneratedRulesWithPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH; CI installs it (apt-get install prometheus)")
	}
	// 100 health values, one a minute, in a scrambled order.
	vals := make([]float64, 100)
	for i := range vals {
		vals[i] = 0.3 + float64((i*37)%100)/200
	}
	h := &History{Series: []Series{{Labels: map[string]string{"instance": "vllm-0", "model": "m", "gpu": "0"}}}}
	for i, v := range vals {
		h.Series[0].Points = append(h.Series[0].Points, Point{Time: float64(i * 60), Health: v})
	}
	o := DefaultOptions()
	o.MinPoints = 1
	ts, err := Derive(h, o)
	if err != nil {
		t.Fatal(err)
	}
	thr := ts[0].Threshold
	var rules bytes.Buffer
	if err := WriteRules(&rules, ts, RuleOptions{Quantile: o.Quantile, For: "5m"}); err != nil {
		t.Fatal(err)
	}

	series := make([]string, len(vals))
	for i, v := range vals {
		series[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	below, above := thr-0.01, thr+0.01
	test := fmt.Sprintf(`rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'gpufrag_health_ratio{gpu="0",instance="vllm-0",model="m"}'
        values: '%s'
    promql_expr_test:
      - expr: quantile_over_time(0.05, gpufrag_health_ratio[100m])
        eval_time: 99m
        exp_samples:
          - labels: '{gpu="0",instance="vllm-0",model="m"}'
            value: %v
  - interval: 1m
    input_series:
      - series: 'gpufrag_health_ratio{gpu="0",instance="vllm-0",model="m"}'
        values: '%vx15'
      - series: 'gpufrag_health_ratio{gpu="1",instance="vllm-0",model="m"}'
        values: '%vx15'
    promql_expr_test:
      - expr: ALERTS{alertname=%q,alertstate="firing"}
        eval_time: 10m
        exp_samples:
          - labels: '{__name__="ALERTS",alertname=%q,alertstate="firing",gpu="0",instance="vllm-0",model="m",severity="warning",threshold="%v"}'
            value: 1
      - expr: gpufrag:health_ratio:threshold
        eval_time: 10m
        exp_samples:
          - labels: '{__name__="gpufrag:health_ratio:threshold",instance="vllm-0",model="m"}'
            value: %v
`, strings.Join(series, " "), ts[0].LowHealth, below, above, AlertName, AlertName, thr, thr)
	dir := t.TempDir()
	for name, data := range map[string][]byte{"rules.yml": rules.Bytes(), "test.yml": []byte(test)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "test", "rules", "test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n--- test.yml\n%s", err, out, test)
	}
}
