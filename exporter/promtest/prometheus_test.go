package promtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpufrag/gpufrag/exporter"
	"github.com/gpufrag/gpufrag/frag"
)

// syncBuffer collects a process's output; exec writes it from its own
// goroutine while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// tail returns the last n lines.
func (b *syncBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimRight(b.buf.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// knownMemory is what the test source reports: health 0.375 with 40% of the
// reserved bytes cached free, so GPUMemoryFragmented and
// GPUMemoryFragmentationWorsening both match it.
var knownMemory = frag.Metrics{
	Capacity: 80 << 30, Reserved: 10 << 30, Allocated: 6 << 30, Requested: 6 << 30,
	CachedFree: 4 << 30, DeviceFree: 70 << 30, LargestFreeBlock: 1536 << 20, MaxAllocatable: 70 << 30,
	Health: 0.375, FragRate: 0.625, SizeEntropy: 1.5, DistinctSizes: 7,
}

// TestPrometheusScrapesExporter runs a real Prometheus against an
// exporter.Collector served over HTTP as the daemon serves it (the runtime
// families beside, exporter.Handler): Prometheus scrapes it every second
// with the job of deploy/prometheus/prometheus.yml (honor_labels, exporter
// label), loads deploy/prometheus/alerts.yml, and the test reads the known
// health back through /api/v1/query and the fragmentation alerts through
// /api/v1/alerts.
func TestPrometheusScrapesExporter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server (about 7 s); skipped with -short")
	}
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not on PATH; CI installs it (apt-get install prometheus)")
	}
	start := time.Now()

	reg := prometheus.NewPedanticRegistry()
	labels := exporter.Labels{GPU: "0", Instance: "vllm-it", Model: "llama-3-8b", Pool: "caching"}
	src := exporter.FuncSource{SourceName: "it", Fn: func() ([]exporter.Sample, error) {
		return []exporter.Sample{{Labels: labels, Memory: &exporter.Memory{Metrics: knownMemory, OOMs: 3}}}, nil
	}}
	// Served as the daemon serves it (exporter/daemon): the Collector's
	// families as prepared, beside the runtime families and the registry's,
	// through exporter.Handler's /metrics.
	coll, err := exporter.New(nil, src)
	if err != nil {
		t.Fatal(err)
	}
	g, err := coll.GathererWithRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(exporter.Handler(exporter.ServerConfig{Gatherer: g}, nil))
	defer srv.Close()
	target := strings.TrimPrefix(srv.URL, "http://")

	dir := t.TempDir()
	alerts, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [alerts.yml]
scrape_configs:
  - job_name: gpufrag
    honor_labels: true
    static_configs:
      - targets: [%q]
    relabel_configs:
      - source_labels: [__address__]
        target_label: exporter
`, target)
	for name, data := range map[string][]byte{"prometheus.yml": []byte(config), "alerts.yml": alerts} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var log syncBuffer
	cmd := exec.CommandContext(ctx, bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+fmt.Sprintf("127.0.0.1:%d", port),
	)
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	client := &http.Client{Timeout: 2 * time.Second}
	get := func(path string) ([]byte, int, error) {
		resp, err := client.Get(base + path)
		if err != nil {
			return nil, 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return b, resp.StatusCode, err
	}
	deadline := time.Now().Add(60 * time.Second)
	// poll calls f every 250 ms until it returns true or the deadline passes.
	poll := func(what string, f func() (bool, string)) {
		t.Helper()
		last := ""
		for {
			select {
			case err := <-exited:
				t.Fatalf("prometheus exited while waiting for %s: %v\n%s", what, err, log.tail(30))
			default:
			}
			ok, state := f()
			if ok {
				return
			}
			last = state
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; last: %s\nprometheus log:\n%s", what, last, log.tail(30))
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	poll("/-/ready", func() (bool, string) {
		_, code, err := get("/-/ready")
		return err == nil && code == http.StatusOK, fmt.Sprint(code, err)
	})

	// The health the source reports, under the exporter's own instance label.
	type vector struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	poll("gpufrag_health_ratio", func() (bool, string) {
		b, _, err := get("/api/v1/query?query=" + url.QueryEscape("gpufrag_health_ratio"))
		if err != nil {
			return false, err.Error()
		}
		var v vector
		if err := json.Unmarshal(b, &v); err != nil || v.Status != "success" || len(v.Data.Result) != 1 {
			return false, string(b)
		}
		r := v.Data.Result[0]
		s, _ := r.Value[1].(string)
		got, err := strconv.ParseFloat(s, 64)
		if err != nil || got != knownMemory.Health {
			return false, string(b)
		}
		want := map[string]string{"__name__": "gpufrag_health_ratio", "gpu": "0", "instance": "vllm-it",
			"model": "llama-3-8b", "pool": "caching", "job": "gpufrag", "exporter": target}
		for k, w := range want {
			if r.Metric[k] != w {
				t.Fatalf("label %s = %q, want %q (all: %v)", k, r.Metric[k], w, r.Metric)
			}
		}
		return true, ""
	})

	// The fragmentation alerts of alerts.yml match the scraped series (they
	// stay pending: their "for" is minutes).
	poll("pending alerts", func() (bool, string) {
		b, _, err := get("/api/v1/alerts")
		if err != nil {
			return false, err.Error()
		}
		var v struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return false, string(b)
		}
		seen := map[string]bool{}
		for _, a := range v.Data.Alerts {
			if a.Labels["instance"] == "vllm-it" && a.State == "pending" {
				seen[a.Labels["alertname"]] = true
			}
		}
		return seen["GPUMemoryFragmented"] && seen["GPUMemoryFragmentationWorsening"], string(b)
	})
	t.Logf("prometheus scraped, answered and evaluated alerts.yml in %v", time.Since(start).Round(time.Millisecond))
}
