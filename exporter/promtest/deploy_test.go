package promtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/exporter/rules"
	"github.com/gpufrag/gpufrag/mem"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

const (
	deployDir  = "../../deploy"
	alertsFile = deployDir + "/prometheus/alerts.yml"
	monitoring = "../../docs/monitoring.md"
)

// lookPath finds a Prometheus tool or skips the test.
func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not on PATH; CI installs it (apt-get install prometheus)", name)
	}
	return p
}

func promtool(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(lookPath(t, "promtool"), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestPromtoolRules(t *testing.T) {
	dir := filepath.Join(deployDir, "prometheus")
	if out, err := promtool(t, dir, "check", "rules", "alerts.yml"); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := promtool(t, dir, "test", "rules", "alerts_test.yml"); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}

	// The unit tests bite: with the warning threshold moved from 0.5 to
	// 0.4, health 0.45 no longer fires; without the last OOM's time, an
	// exporter's restart fires GPUOOMsIncreasing. promtool must say so.
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile(filepath.Join(dir, "alerts_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ old, new, alert string }{
		{"gpufrag_health_ratio < 0.5", "gpufrag_health_ratio < 0.4", "GPUMemoryFragmented"},
		{"\n          unless changes(gpufrag_last_oom_timestamp_seconds[10m]) == 0", "", "GPUOOMsIncreasing"},
	} {
		old := m.old
		mutated := bytes.Replace(b, []byte(old), []byte(m.new), 1)
		if bytes.Equal(mutated, b) {
			t.Fatalf("alerts.yml no longer has the expression this test mutates: %q", old)
		}
		tmp := t.TempDir()
		for name, data := range map[string][]byte{"alerts.yml": mutated, "alerts_test.yml": test} {
			if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, err := promtool(t, tmp, "test", "rules", "alerts_test.yml")
		if err == nil || !strings.Contains(out, m.alert) {
			t.Errorf("promtool test rules passed with %q mutated (%v):\n%s", old, err, out)
		}
	}
}

// TestPromtoolConfig checks prometheus.yml. Debian's prometheus package is
// built without Kubernetes service discovery, so its promtool rejects
// kubernetes_sd_configs; then the file is checked without those jobs (the
// Kubernetes jobs are still checked by TestPrometheusConfigShape).
func TestPromtoolConfig(t *testing.T) {
	dir := filepath.Join(deployDir, "prometheus")
	out, err := promtool(t, dir, "check", "config", "prometheus.yml")
	if err == nil {
		return
	}
	if !strings.Contains(out, "field kubernetes_sd_configs not found") {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	t.Logf("this promtool lacks Kubernetes service discovery (Debian build); checking the other jobs")
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	var kept []any
	for _, sc := range cfg["scrape_configs"].([]any) {
		if _, k8s := sc.(map[string]any)["kubernetes_sd_configs"]; !k8s {
			kept = append(kept, sc)
		}
	}
	if len(kept) == 0 {
		t.Fatal("no scrape config without kubernetes_sd_configs to check")
	}
	cfg["scrape_configs"] = kept
	tmp := t.TempDir()
	stripped, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"prometheus.yml": stripped, "alerts.yml": alerts} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := promtool(t, tmp, "check", "config", "prometheus.yml"); err != nil {
		t.Fatalf("promtool check config (without Kubernetes jobs): %v\n%s", err, out)
	}
}

// TestPrometheusConfigShape checks what promtool cannot: every gpufrag job
// honours the exporter's labels and keeps the scrape address in "exporter",
// which the alerts and the dashboard's snapshot links use.
func TestPrometheusConfigShape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "prometheus", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName     string `yaml:"job_name"`
			HonorLabels bool   `yaml:"honor_labels"`
			K8s         []struct {
				Role string `yaml:"role"`
			} `yaml:"kubernetes_sd_configs"`
			Relabel []struct {
				SourceLabels []string `yaml:"source_labels"`
				TargetLabel  string   `yaml:"target_label"`
				Regex        string   `yaml:"regex"`
				Action       string   `yaml:"action"`
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.RuleFiles, "alerts.yml") {
		t.Errorf("rule_files %v lacks alerts.yml", cfg.RuleFiles)
	}
	sawK8s := false
	for _, sc := range cfg.ScrapeConfigs {
		if !sc.HonorLabels {
			t.Errorf("job %s: honor_labels must be true, or the exporter's instance label becomes exported_instance", sc.JobName)
		}
		exporter := false
		for _, r := range sc.Relabel {
			if r.TargetLabel == "exporter" && slices.Equal(r.SourceLabels, []string{"__address__"}) {
				exporter = true
			}
		}
		if !exporter {
			t.Errorf("job %s: no relabelling of __address__ into the exporter label", sc.JobName)
		}
		for _, k := range sc.K8s {
			sawK8s = true
			if k.Role != "endpoints" && k.Role != "pod" {
				t.Errorf("job %s: role %q", sc.JobName, k.Role)
			}
			// The DaemonSet's Service or pods are named gpufrag-exporter; a
			// sidecar is found by its port name gpufrag-metrics (a port name
			// has at most 15 characters).
			keep := false
			for _, r := range sc.Relabel {
				if r.Action == "keep" && (strings.Contains(r.Regex, "gpufrag-exporter") || r.Regex == "gpufrag-metrics") {
					keep = true
				}
			}
			if !keep {
				t.Errorf("job %s: no keep rule selecting gpufrag-exporter or the port gpufrag-metrics", sc.JobName)
			}
		}
	}
	if !sawK8s {
		t.Error("no kubernetes_sd_configs job")
	}
}

// headingAnchors returns the GitHub anchors of the Markdown headings in path.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	strip := regexp.MustCompile(`[^a-z0-9 _-]`)
	inCode := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := strings.ReplaceAll(strip.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		anchors[a] = true
	}
	return anchors
}

func TestAlertsUseDefinedMetrics(t *testing.T) {
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	anchors := headingAnchors(t, monitoring)
	var alerts []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			checkExpr(t, "alerts.yml "+r.Alert, r.Expr)
			if s := r.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
				t.Errorf("%s: severity %q", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
			url := r.Annotations["runbook_url"]
			base, anchor, ok := strings.Cut(url, "#")
			if !ok || !strings.HasSuffix(base, "/docs/monitoring.md") || !anchors[anchor] {
				t.Errorf("%s: runbook_url %s is not a heading of docs/monitoring.md", r.Alert, url)
			}
		}
	}
	for _, want := range []string{"GPUMemoryFragmented", "GPUMemoryFragmentationWorsening", "GPUOOMsIncreasing", "GPUFragSourceDown", "GPUKVCachePreemptionsRising"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("alerts.yml lacks %s", want)
		}
	}
	// Every alert has a promtool unit test.
	tb, err := os.ReadFile(filepath.Join(deployDir, "prometheus", "alerts_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		if !strings.Contains(string(tb), "alertname: "+a+"\n") {
			t.Errorf("alerts_test.yml does not test %s", a)
		}
	}
	// The generated per-instance rules link a heading that exists.
	if _, anchor, _ := strings.Cut(rules.DefaultRunbookURL, "#"); !anchors[anchor] {
		t.Errorf("gpufrag rules' runbook anchor #%s is not a heading of docs/monitoring.md", anchor)
	}
}

// grafanaPanel is the part of a panel the tests read.
type grafanaPanel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *grafanaDS               `json:"datasource"`
	GridPos    struct{ X, Y, W, H int } `json:"gridPos"`
	Targets    []struct {
		Datasource *grafanaDS `json:"datasource"`
		Expr       string     `json:"expr"`
		RefID      string     `json:"refId"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Links []struct {
				Title string `json:"title"`
				URL   string `json:"url"`
			} `json:"links"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Panels []grafanaPanel `json:"panels"` // of collapsed rows
}

type grafanaDS struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana", "gpufrag.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title         string         `json:"title"`
		UID           string         `json:"uid"`
		SchemaVersion int            `json:"schemaVersion"`
		Panels        []grafanaPanel `json:"panels"`
		Templating    struct {
			List []struct {
				Name       string          `json:"name"`
				Type       string          `json:"type"`
				Query      json.RawMessage `json:"query"`
				Definition string          `json:"definition"`
				Datasource *grafanaDS      `json:"datasource"`
			} `json:"list"`
		} `json:"templating"`
		Annotations struct {
			List []struct {
				Name       string     `json:"name"`
				Expr       string     `json:"expr"`
				Datasource *grafanaDS `json:"datasource"`
			} `json:"list"`
		} `json:"annotations"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("gpufrag.json: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Fatal("gpufrag.json: data after the dashboard")
	}
	if d.Title == "" || d.UID == "" || len(d.UID) > 40 {
		t.Errorf("title %q uid %q: both needed, uid at most 40 characters", d.Title, d.UID)
	}
	if d.SchemaVersion < 36 || d.SchemaVersion > 41 {
		t.Errorf("schemaVersion %d, want about 39", d.SchemaVersion)
	}
	const ds = "${DS_PROMETHEUS}"
	isDS := func(x *grafanaDS) bool { return x != nil && x.Type == "prometheus" && x.UID == ds }

	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		switch v.Type {
		case "datasource":
			if string(v.Query) != `"prometheus"` {
				t.Errorf("variable %s: query %s, want \"prometheus\"", v.Name, v.Query)
			}
		case "query":
			if !isDS(v.Datasource) {
				t.Errorf("variable %s: datasource %+v, want %s", v.Name, v.Datasource, ds)
			}
			m := regexp.MustCompile(`^label_values\((.+),\s*([a-z_]+)\)$`).FindStringSubmatch(v.Definition)
			if m == nil {
				t.Errorf("variable %s: definition %q is not label_values(selector, label)", v.Name, v.Definition)
				continue
			}
			checkExpr(t, "variable "+v.Name, m[1])
			if !slices.Contains(labelNames, m[2]) {
				t.Errorf("variable %s: label %s", v.Name, m[2])
			}
			if !strings.Contains(string(v.Query), v.Definition) && !strings.Contains(string(v.Query), strings.ReplaceAll(v.Definition, `"`, `\"`)) {
				t.Errorf("variable %s: query %s does not match definition %q", v.Name, v.Query, v.Definition)
			}
		}
	}
	for name, typ := range map[string]string{"DS_PROMETHEUS": "datasource", "instance": "query", "model": "query"} {
		if vars[name] != typ {
			t.Errorf("variable %s: type %q, want %q", name, vars[name], typ)
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			if !isDS(a.Datasource) {
				t.Errorf("annotation %s: datasource %+v", a.Name, a.Datasource)
			}
			checkExpr(t, "annotation "+a.Name, a.Expr)
		}
	}

	var all []grafanaPanel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	ids := map[int]bool{}
	byTitle := map[string]grafanaPanel{}
	for i, p := range all {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID <= 0 || ids[p.ID] {
			t.Errorf("%s: id missing or repeated", where)
		}
		ids[p.ID] = true
		byTitle[p.Title] = p
		if p.Title == "" || !slices.Contains([]string{"row", "timeseries", "stat", "barchart", "table", "text", "gauge", "bargauge"}, p.Type) {
			t.Errorf("%s: type %q or no title", where, p.Type)
		}
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
			t.Errorf("%s: gridPos %+v outside the 24-column grid", where, g)
		}
		for _, q := range all[:i] {
			h := q.GridPos
			if g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
				t.Errorf("%s overlaps panel %d %q", where, q.ID, q.Title)
			}
		}
		if p.Type == "row" || p.Type == "text" {
			continue
		}
		if !isDS(p.Datasource) {
			t.Errorf("%s: datasource %+v, want %s", where, p.Datasource, ds)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no queries", where)
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if q.RefID == "" || refs[q.RefID] || !isDS(q.Datasource) {
				t.Errorf("%s: query %q has a missing or repeated refId or another datasource", where, q.Expr)
			}
			refs[q.RefID] = true
			checkExpr(t, where, q.Expr)
			ms, _, _ := promqlRefs(q.Expr)
			for _, m := range ms {
				if perInstance(m) && !strings.Contains(q.Expr, `instance=~"$instance"`) {
					t.Errorf("%s: %q ignores the instance variable", where, q.Expr)
				}
			}
		}
	}

	// The four panels operators asked for, each on the right metrics.
	for title, want := range map[string][]string{
		"Fragmentation rate per instance and model": {"gpufrag_fragmentation_ratio"},
		"Allocation size dispersion":                {"gpufrag_allocation_size_entropy", "gpufrag_allocation_distinct_sizes"},
		"OOM events":                                {"gpufrag_ooms_total"},
		"Whole-free GPU nodes":                      {"gpufrag_cluster_whole_free_nodes"},
	} {
		p, ok := byTitle[title]
		if !ok {
			t.Errorf("no panel %q", title)
			continue
		}
		var used []string
		for _, q := range p.Targets {
			ms, _, _ := promqlRefs(q.Expr)
			used = append(used, ms...)
		}
		for _, m := range want {
			if !slices.Contains(used, m) {
				t.Errorf("panel %q does not query %s", title, m)
			}
		}
	}
	if p := byTitle["OOM events"]; len(p.FieldConfig.Defaults.Links) == 0 ||
		!strings.HasSuffix(p.FieldConfig.Defaults.Links[0].URL, "/snapshots/") ||
		!strings.Contains(p.FieldConfig.Defaults.Links[0].URL, "${__field.labels.exporter}") {
		t.Errorf("OOM events: no data link to the exporter's /snapshots/ page: %+v", p.FieldConfig.Defaults.Links)
	}
}

// perInstance reports whether metric carries the instance label.
func perInstance(m string) bool {
	for _, p := range []string{"gpufrag_cluster_", "gpufrag_gpu_", "gpufrag_source_", "gpufrag_snapshot"} {
		if strings.HasPrefix(m, p) {
			return false
		}
	}
	return true
}

// TestKubernetesManifests decodes every document of the manifests strictly
// (unknown fields are errors) into the Kubernetes API types and checks the
// DaemonSet's essentials.
func TestKubernetesManifests(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "kubernetes", "exporter-daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		ds    *appsv1.DaemonSet
		svc   *corev1.Service
		kinds []string
	)
	for i, doc := range strings.Split(string(b), "\n---\n") {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := sigsyaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		kinds = append(kinds, meta.Kind)
		var obj any
		switch meta.Kind {
		case "Namespace":
			obj = &corev1.Namespace{}
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "DaemonSet":
			ds = &appsv1.DaemonSet{}
			obj = ds
		case "Service":
			svc = &corev1.Service{}
			obj = svc
		default:
			t.Fatalf("document %d: unexpected kind %q", i, meta.Kind)
		}
		if err := sigsyaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Errorf("document %d (%s): %v", i, meta.Kind, err)
		}
	}
	if ds == nil || svc == nil {
		t.Fatalf("want a DaemonSet and a Service, got %v", kinds)
	}
	spec := ds.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("containers: %d", len(spec.Containers))
	}
	checkExporterContainer(t, spec.Containers[0], "--nvml")
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("pod does not run as non-root: %+v", spec.SecurityContext)
	}
	if spec.NodeSelector["nvidia.com/gpu.present"] != "true" || len(spec.Tolerations) == 0 || spec.Tolerations[0].Key != "nvidia.com/gpu" {
		t.Errorf("not placed on GPU nodes: %v %v", spec.NodeSelector, spec.Tolerations)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" {
		t.Errorf("service is not headless on port metrics: %+v", svc.Spec)
	}
	for k, v := range svc.Spec.Selector {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("service selector %s=%s does not select the DaemonSet's pods", k, v)
		}
	}
}

// checkExporterContainer checks an exporter container of a manifest: its
// arguments (with extra ones), that its memory limit holds the largest
// snapshot it reads, GOMEMLIMIT, and a security context without root or
// capabilities.
func checkExporterContainer(t *testing.T, c corev1.Container, extra ...string) {
	t.Helper()
	args := strings.Join(c.Args, " ")
	for _, w := range append([]string{"exporter", "--listen 0.0.0.0:9400", "--snapshots /var/run/gpufrag/snapshots", "--capture-dir /var/lib/gpufrag/oom"}, extra...) {
		if !strings.Contains(args, w) {
			t.Errorf("args %q lack %q", args, w)
		}
	}
	// The memory limit must hold the largest snapshot the exporter reads
	// (--max-file-bytes, analysed at up to 25 bytes of memory per file
	// byte) over its 40 MiB at rest, or one large file gets the pod
	// OOM-killed again at every restart; GOMEMLIMIT sits below the limit.
	var fileBytes mem.Bytes
	if i := slices.Index(c.Args, "--max-file-bytes"); i < 0 || i+1 >= len(c.Args) || fileBytes.Set(c.Args[i+1]) != nil {
		t.Errorf("args %q: no --max-file-bytes SIZE (the default 256 MiB needs 6.4 GB)", args)
	}
	lim := c.Resources.Limits.Memory()
	if need := 40<<20 + 25*int64(fileBytes); lim.IsZero() || lim.Value() < need || lim.Value() > 1<<30 {
		t.Errorf("memory limit %v: want at least %d MiB for --max-file-bytes %v, at most 1Gi", lim, need>>20, fileBytes)
	}
	goMemLimit := ""
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			goMemLimit = e.Value
		}
	}
	var gml mem.Bytes
	if err := gml.Set(goMemLimit); err != nil || int64(gml) >= lim.Value() || int64(gml) < lim.Value()*3/4 {
		t.Errorf("GOMEMLIMIT %q: want 75-100%% of the memory limit %v (%v)", goMemLimit, lim, err)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container security context: %+v (want non-root, read-only root, no escalation, capabilities drop ALL)", c.SecurityContext)
	}
}

// decodeManifest decodes every document of a deploy/kubernetes file
// strictly into the Kubernetes API type its kind names.
func decodeManifest(t *testing.T, name string) (deps []*appsv1.Deployment, pvcs []*corev1.PersistentVolumeClaim) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "kubernetes", name))
	if err != nil {
		t.Fatal(err)
	}
	for i, doc := range strings.Split(string(b), "\n---\n") {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := sigsyaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
		var obj any
		switch meta.Kind {
		case "Deployment":
			d := &appsv1.Deployment{}
			deps, obj = append(deps, d), d
		case "PersistentVolumeClaim":
			p := &corev1.PersistentVolumeClaim{}
			pvcs, obj = append(pvcs, p), p
		default:
			t.Fatalf("%s: document %d: unexpected kind %q", name, i, meta.Kind)
		}
		if err := sigsyaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Errorf("%s: document %d (%s): %v", name, i, meta.Kind, err)
		}
	}
	return deps, pvcs
}

// probeDir checks that c runs under gpufrag-probe (GPUFRAG_PROBE_DIR, and
// POD_NAME from the downward API for the instance label) and returns the
// directory and the volume mounted there.
func probeDir(t *testing.T, c corev1.Container) (dir, volume string) {
	t.Helper()
	pod := false
	for _, e := range c.Env {
		switch e.Name {
		case "GPUFRAG_PROBE_DIR":
			dir = e.Value
		case "POD_NAME":
			pod = e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
		}
	}
	if dir == "" || !pod {
		t.Errorf("container %s: GPUFRAG_PROBE_DIR %q, POD_NAME from metadata.name %t: the probe would not start or would name the host", c.Name, dir, pod)
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == dir && !m.ReadOnly {
			volume = m.Name
		}
	}
	if volume == "" {
		t.Errorf("container %s: no writable volume at GPUFRAG_PROBE_DIR %s", c.Name, dir)
	}
	return dir, volume
}

func volumeNamed(spec corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// TestProbeManifests checks the two ways of deploying gpufrag-probe with
// vLLM: the probe's directory is the exporter's --snapshots, on one
// emptyDir shared with an exporter sidecar whose captures go to a
// PersistentVolumeClaim of the same file, found by Prometheus through its
// port name; or on the node's hostPath that the DaemonSet watches.
func TestProbeManifests(t *testing.T) {
	deps, pvcs := decodeManifest(t, "vllm-probe-sidecar.yaml")
	if len(deps) != 1 || len(pvcs) != 1 {
		t.Fatalf("vllm-probe-sidecar.yaml: %d Deployments, %d claims; want one each", len(deps), len(pvcs))
	}
	spec := deps[0].Spec.Template.Spec
	if len(spec.Containers) != 2 {
		t.Fatalf("sidecar pod: %d containers, want vLLM and the exporter", len(spec.Containers))
	}
	vllm, exp := spec.Containers[0], spec.Containers[1]
	if !slices.Contains(vllm.Args, "serve") || !slices.Contains(vllm.Args, "--served-model-name") {
		t.Errorf("vLLM args %v: want vllm serve with --served-model-name (the model label)", vllm.Args)
	}
	dir, vol := probeDir(t, vllm)
	checkExporterContainer(t, exp)
	if i := slices.Index(exp.Args, "--snapshots"); i < 0 || exp.Args[i+1] != dir {
		t.Errorf("exporter --snapshots is not the probe's directory %s: %v", dir, exp.Args)
	}
	shared := false
	for _, m := range exp.VolumeMounts {
		shared = shared || (m.Name == vol && m.MountPath == dir && m.ReadOnly)
	}
	if v := volumeNamed(spec, vol); !shared || v == nil || v.EmptyDir == nil {
		t.Errorf("the probe's directory is not one emptyDir mounted read-only at %s in the exporter", dir)
	}
	capDir := exp.Args[slices.Index(exp.Args, "--capture-dir")+1]
	captures := ""
	for _, m := range exp.VolumeMounts {
		if m.MountPath == capDir {
			captures = m.Name
		}
	}
	if v := volumeNamed(spec, captures); v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pvcs[0].Name {
		t.Errorf("--capture-dir %s is not on the claim %s: captures would die with the pod", capDir, pvcs[0].Name)
	}
	if len(exp.Ports) != 1 || exp.Ports[0].Name != "gpufrag-metrics" {
		t.Errorf("exporter ports %+v: want one named gpufrag-metrics (the Prometheus job gpufrag-sidecars keeps it)", exp.Ports)
	}
	if psc := spec.SecurityContext; psc == nil || psc.FSGroup == nil || *psc.FSGroup != *exp.SecurityContext.RunAsUser {
		t.Errorf("pod fsGroup must be the exporter's user, so it can write captures to the claim: %+v", spec.SecurityContext)
	}

	deps, _ = decodeManifest(t, "vllm-probe-hostpath.yaml")
	if len(deps) != 1 {
		t.Fatalf("vllm-probe-hostpath.yaml: %d Deployments", len(deps))
	}
	spec = deps[0].Spec.Template.Spec
	dir, vol = probeDir(t, spec.Containers[0])
	if v := volumeNamed(spec, vol); v == nil || v.HostPath == nil || v.HostPath.Path != "/var/run/gpufrag/snapshots" || dir != v.HostPath.Path {
		t.Errorf("the probe's directory is not the node's /var/run/gpufrag/snapshots, which the DaemonSet watches")
	}
}
