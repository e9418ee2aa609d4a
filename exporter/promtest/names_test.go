package promtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/exporter/rules"
)

// metricNames are the metric families the gpufrag exporter defines (see
// exporter/doc.go) plus the recording rule `gpufrag rules` writes. The
// dashboard and the alerts may use only these.
var metricNames = []string{
	// Memory, per gpu, instance, model, pool.
	"gpufrag_fragmentation_ratio", "gpufrag_health_ratio", "gpufrag_internal_fragmentation_ratio",
	"gpufrag_largest_free_block_bytes", "gpufrag_max_allocatable_bytes", "gpufrag_reserved_bytes",
	"gpufrag_allocated_bytes", "gpufrag_requested_bytes", "gpufrag_cached_free_bytes",
	"gpufrag_device_free_bytes", "gpufrag_allocation_size_entropy", "gpufrag_allocation_distinct_sizes",
	"gpufrag_ooms_total", "gpufrag_last_oom_timestamp_seconds",
	// KV-cache block pools.
	"gpufrag_kv_cache_usage_ratio", "gpufrag_kv_blocks", "gpufrag_kv_free_blocks", "gpufrag_kv_cached_blocks",
	"gpufrag_kv_evictable_blocks", "gpufrag_kv_block_size_tokens", "gpufrag_kv_preemptions_total",
	"gpufrag_kv_prefix_cache_queries_total", "gpufrag_kv_prefix_cache_hits_total",
	// GPUs through NVML, per gpu.
	"gpufrag_gpu_memory_total_bytes", "gpufrag_gpu_memory_used_bytes", "gpufrag_gpu_memory_free_bytes",
	"gpufrag_gpu_info", "gpufrag_gpu_process_memory_used_bytes",
	// Snapshots.
	"gpufrag_snapshots_analyzed_total", "gpufrag_snapshot_errors_total", "gpufrag_oom_snapshots_captured_total",
	"gpufrag_snapshot_files", "gpufrag_snapshot_stale_files", "gpufrag_snapshot_last_analyzed_timestamp_seconds",
	"gpufrag_oom_snapshot_capture_errors_total",
	// Cluster, per cluster.
	"gpufrag_cluster_nodes", "gpufrag_cluster_gpus", "gpufrag_cluster_allocated_gpus",
	"gpufrag_cluster_whole_free_nodes", "gpufrag_cluster_stranded_gpu_nodes", "gpufrag_cluster_pending_pods",
	// Per source.
	"gpufrag_source_up",
	// Recording rule written by `gpufrag rules`.
	rules.ThresholdRecord,
}

// labelNames are the labels the queries may use: the exporter's, the ones
// deploy/prometheus/prometheus.yml adds (exporter, node, pod) and job.
var labelNames = []string{
	"gpu", "instance", "model", "pool", "source", "reason", "cluster", "uuid", "name", "pid",
	"exporter", "node", "pod", "job",
}

var (
	nameInDocs = regexp.MustCompile(`\bgpufrag_[a-z0-9_]+\b`)
	// How the exporter's sources name their families: newDesc("health_ratio", ...)
	// and prometheus.Opts{Namespace: namespace, Name: "ooms_total"}, or a
	// full "gpufrag_..." literal.
	nameInSource = regexp.MustCompile(`newDesc\(\s*"([a-z0-9_]+)"|Namespace:\s*namespace,\s*Name:\s*"([a-z0-9_]+)"|"(gpufrag_[a-z0-9_]+)"`)
)

// exporterNames returns the metric names the exporter defines, each with
// the file that defines it: names in exporter/doc.go and the golden
// exposition files, and the families its non-test sources (exporter and its
// subpackages, except this one and rules) declare.
func exporterNames(t *testing.T) map[string]string {
	t.Helper()
	defined := map[string]string{}
	add := func(n, f string) {
		if _, ok := defined[n]; !ok {
			defined[n] = f
		}
	}
	docs, err := filepath.Glob("../testdata/*.prom")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(docs, "../doc.go") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nameInDocs.FindAllString(string(b), -1) {
			add(n, f)
		}
	}
	srcs, err := filepath.Glob("../*.go")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := filepath.Glob("../*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(srcs, sub...) {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, "../promtest/") || strings.HasPrefix(f, "../rules/") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range nameInSource.FindAllStringSubmatch(string(b), -1) {
			switch {
			case m[1] != "":
				add("gpufrag_"+m[1], f)
			case m[2] != "":
				add("gpufrag_"+m[2], f)
			default:
				add(m[3], f)
			}
		}
	}
	if len(defined) < 20 {
		t.Fatalf("found only %d metric names in the exporter: the layout changed", len(defined))
	}
	return defined
}

// TestMetricNamesMatchExporter cross-checks metricNames against what the
// exporter documents and declares, both ways: every name the exporter
// defines is listed (so the list is complete), and every listed name is
// defined (so the dashboard and alerts query nothing the exporter lacks).
func TestMetricNamesMatchExporter(t *testing.T) {
	defined := exporterNames(t)
	for n, f := range defined {
		if !slices.Contains(metricNames, n) {
			t.Errorf("%s defines %s, which metricNames lacks: add it (and use it in the dashboard if useful)", f, n)
		}
	}
	for _, n := range metricNames {
		if _, ok := defined[n]; !ok && !strings.Contains(n, ":") {
			t.Errorf("metricNames lists %s, which the exporter neither documents nor declares", n)
		}
	}
	// Every label of the golden expositions is one the queries may use.
	golden, err := filepath.Glob("../testdata/*.prom")
	if err != nil {
		t.Fatal(err)
	}
	labelRe := regexp.MustCompile(`[{,]([a-zA-Z_][a-zA-Z0-9_]*)="`)
	for _, f := range golden {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range labelRe.FindAllStringSubmatch(string(b), -1) {
			if !slices.Contains(labelNames, m[1]) {
				t.Errorf("%s uses label %s, which labelNames lacks", f, m[1])
			}
		}
	}
}

// promqlRefs returns the metric names and label names a PromQL expression
// uses. It is a small lexer, not a parser: it knows strings, numbers and
// durations, label matchers in braces, ranges in brackets, label lists
// after by/without/on/ignoring/group_left/group_right, function calls and
// Grafana's $variables, which is all the deploy files need.
func promqlRefs(expr string) (metrics, labels []string, err error) {
	keywords := map[string]bool{
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
		"sum": true, "min": true, "max": true, "avg": true, "count": true, "stddev": true, "stdvar": true,
		"topk": true, "bottomk": true, "quantile": true, "count_values": true, "group": true,
		"atan2": true,
	}
	labelLists := map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(expr) && strings.IndexByte(" \t\r\n", expr[i]) >= 0 {
			i++
		}
		return i
	}
	ident := func(i int) (string, int) {
		j := i
		for j < len(expr) && isIdent(expr[j]) {
			j++
		}
		return expr[i:j], j
	}
	str := func(i int) (int, error) { // i at the opening quote; returns index after the closing one
		q := expr[i]
		for j := i + 1; j < len(expr); j++ {
			if expr[j] == '\\' && q != '`' {
				j++
				continue
			}
			if expr[j] == q {
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string at %d in %q", i, expr)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case strings.IndexByte(" \t\r\n()+-*/%^=!<>,", c) >= 0:
			i++
		case c == '"' || c == '\'' || c == '`':
			j, err := str(i)
			if err != nil {
				return nil, nil, err
			}
			i = j
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				i = strings.IndexByte(expr[i:], '}') + i + 1
				continue
			}
			_, i = ident(i)
		case c == '[':
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return nil, nil, fmt.Errorf("unterminated [ at %d in %q", i, expr)
			}
			i += j + 1
		case c == '{':
			i++
			for {
				i = skipSpace(i)
				if i >= len(expr) {
					return nil, nil, fmt.Errorf("unterminated { in %q", expr)
				}
				if expr[i] == '}' {
					i++
					break
				}
				if expr[i] == ',' {
					i++
					continue
				}
				if !isIdentStart(expr[i]) {
					return nil, nil, fmt.Errorf("want a label name at %d in %q", i, expr)
				}
				var l string
				l, i = ident(i)
				labels = append(labels, l)
				i = skipSpace(i)
				for i < len(expr) && strings.IndexByte("=!~", expr[i]) >= 0 {
					i++
				}
				i = skipSpace(i)
				if i >= len(expr) || strings.IndexByte("\"'`", expr[i]) < 0 {
					return nil, nil, fmt.Errorf("want a quoted value at %d in %q", i, expr)
				}
				j, err := str(i)
				if err != nil {
					return nil, nil, err
				}
				i = j
			}
		case isIdentStart(c):
			var id string
			id, i = ident(i)
			next := skipSpace(i)
			switch {
			case labelLists[id]:
				if next < len(expr) && expr[next] == '(' {
					end := strings.IndexByte(expr[next:], ')')
					if end < 0 {
						return nil, nil, fmt.Errorf("unterminated %s( in %q", id, expr)
					}
					for _, l := range strings.Split(expr[next+1:next+end], ",") {
						if l = strings.TrimSpace(l); l != "" {
							labels = append(labels, l)
						}
					}
					i = next + end + 1
				}
			case keywords[strings.ToLower(id)]:
			case next < len(expr) && expr[next] == '(':
				// A function call.
			default:
				metrics = append(metrics, id)
			}
		default:
			return nil, nil, fmt.Errorf("unexpected %q at %d in %q", c, i, expr)
		}
	}
	return metrics, labels, nil
}

// checkExpr reports the unknown metric and label names of expr, and
// whether it uses no gpufrag metric at all.
func checkExpr(t *testing.T, where, expr string) {
	t.Helper()
	ms, ls, err := promqlRefs(expr)
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	if len(ms) == 0 {
		t.Errorf("%s: %q uses no metric", where, expr)
	}
	for _, m := range ms {
		if !slices.Contains(metricNames, m) {
			t.Errorf("%s: %q uses %s, which the exporter does not define", where, expr, m)
		}
	}
	for _, l := range ls {
		if !slices.Contains(labelNames, l) {
			t.Errorf("%s: %q uses label %s, which no gpufrag series has", where, expr, l)
		}
	}
}

func TestPromqlRefs(t *testing.T) {
	for _, c := range []struct {
		expr            string
		metrics, labels []string
	}{
		{`gpufrag_health_ratio < 0.4 and gpufrag_cached_free_bytes > 0.2 * gpufrag_reserved_bytes`,
			[]string{"gpufrag_health_ratio", "gpufrag_cached_free_bytes", "gpufrag_reserved_bytes"}, nil},
		{`sum by (instance, model) (increase(gpufrag_ooms_total{instance=~"$instance", model!="a}b"}[$__rate_interval])) * 60`,
			[]string{"gpufrag_ooms_total"}, []string{"instance", "model", "instance", "model"}},
		{`max(gpufrag_x) / on(gpu) group_left(name) gpufrag:y:z offset 5m`,
			[]string{"gpufrag_x", "gpufrag:y:z"}, []string{"gpu", "name"}},
		{`rate(gpufrg_typo[1h]) > 1e-3`, []string{"gpufrg_typo"}, nil},
	} {
		ms, ls, err := promqlRefs(c.expr)
		if err != nil {
			t.Errorf("%q: %v", c.expr, err)
			continue
		}
		if !slices.Equal(ms, c.metrics) || !slices.Equal(ls, c.labels) {
			t.Errorf("%q: metrics %v labels %v, want %v %v", c.expr, ms, ls, c.metrics, c.labels)
		}
	}
	for _, bad := range []string{`gpufrag_x{instance="a}`, `gpufrag_x[5m`, `gpufrag_x{="a"}`} {
		if _, _, err := promqlRefs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
