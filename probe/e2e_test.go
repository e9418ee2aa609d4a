package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/internal/testkit"
)

// e2eScript is the probed program: a "server" that initialises CUDA (the
// fake torch's), lets the probe turn the history on, replays the frames of
// snapshot/testdata/replay.pickle as its allocations, then, once the test
// says so (the file $E2E_GO), fails an allocation of 1 GiB with an
// out-of-memory error, as a real request would, and keeps running until
// $E2E_STOP appears. It knows nothing of the probe: `python -m
// gpufrag_probe run` puts it there.
const e2eScript = `
import os, sys, time
import torch

torch.cuda.init()
deadline = time.time() + 60
while torch._fake.STATE.history is None:
    if time.time() > deadline:
        sys.exit("the probe never turned the memory history on")
    time.sleep(0.05)
torch._fake.load(os.environ["E2E_SNAPSHOT"], trace=True)
print("serving", flush=True)
while not os.path.exists(os.environ["E2E_GO"]):
    if time.time() > deadline + 120:
        sys.exit("never told to run out of memory")
    time.sleep(0.05)
try:
    torch._fake.oom(1 << 30, device_free=0)
except torch.cuda.OutOfMemoryError as e:
    print("request failed:", e, flush=True)
while not os.path.exists(os.environ["E2E_STOP"]):
    if time.time() > deadline + 240:
        break
    time.sleep(0.05)
`

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
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

// TestEndToEnd is issue 15's path without a GPU: a Python process under
// `python -m gpufrag_probe run` (the fake torch standing in for PyTorch)
// → the probe's directory → `gpufrag exporter --snapshots DIR
// --capture-dir CAP` → a real Prometheus with deploy/prometheus/alerts.yml.
// An out-of-memory error in the process must make GPUOOMsIncreasing fire
// for its instance and model, and the capture the exporter keeps must be
// what `gpufrag analyze` explains: the failed 1 GiB request, and a replay
// of the recorded trace that matches every address.
func TestEndToEnd(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() || testkit.SlowBuild {
		t.Skip("starts Python, the exporter and Prometheus (about 20 s); runs in the plain `go test ./...`")
	}
	need := func(what, hint string, ok bool) {
		if ok {
			return
		}
		msg := what + " not available; " + hint
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	promBin, err := exec.LookPath("prometheus")
	need("prometheus", "CI installs it (apt-get install prometheus)", err == nil)
	py := ""
	for _, c := range []string{os.Getenv("GPUFRAG_PYTHON"), "python3", "/usr/bin/python3"} {
		if p, err := exec.LookPath(c); c != "" && err == nil {
			py = p
			break
		}
	}
	need("python3", "install it (apt-get install python3)", py != "")
	goBin, err := exec.LookPath("go")
	need("the go command", "it builds gpufrag for the test", err == nil)

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	gpufrag := filepath.Join(tmp, "gpufrag")
	build := exec.Command(goBin, "build", "-o", gpufrag, "./cmd/gpufrag")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gpufrag: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := func(name string, cmd *exec.Cmd) (*lockedBuffer, <-chan error) {
		t.Helper()
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
		return &out, done
	}

	dir, capDir := filepath.Join(tmp, "snapshots"), filepath.Join(tmp, "captures")
	for _, d := range []string{dir, capDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exporterAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	exporterLog, exporterDone := start("gpufrag exporter", exec.CommandContext(ctx, gpufrag, "exporter",
		"--listen", exporterAddr, "--snapshots", dir, "--capture-dir", capDir, "--rescan", "1s"))

	alerts, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	promDir := filepath.Join(tmp, "prometheus")
	if err := os.Mkdir(promDir, 0o755); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [alerts.yml]
scrape_configs:
  - job_name: gpufrag
    honor_labels: true
    static_configs: [{targets: [%q]}]
    relabel_configs: [{source_labels: [__address__], target_label: exporter}]
`, exporterAddr)
	for name, data := range map[string][]byte{"prometheus.yml": []byte(config), "alerts.yml": alerts} {
		if err := os.WriteFile(filepath.Join(promDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	promAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	promLog, promDone := start("prometheus", exec.CommandContext(ctx, promBin,
		"--config.file="+filepath.Join(promDir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(promDir, "data"),
		"--web.listen-address="+promAddr))

	script := filepath.Join(tmp, "server.py")
	if err := os.WriteFile(script, []byte(e2eScript), 0o644); err != nil {
		t.Fatal(err)
	}
	goFile, stopFile := filepath.Join(tmp, "go"), filepath.Join(tmp, "stop")
	server := exec.CommandContext(ctx, py, "-m", "gpufrag_probe", "run", "--dir", dir, "--interval", "1",
		"--instance", "e2e-0", "--model", "tiny-llama", "--", py, script)
	server.Env = append(os.Environ(),
		"PYTHONPATH="+filepath.Join(root, "probe")+string(os.PathListSeparator)+filepath.Join(root, "probe", "tests", "fake_torch"),
		"PYTHONDONTWRITEBYTECODE=1",
		"E2E_SNAPSHOT="+filepath.Join(root, "snapshot", "testdata", "replay.pickle"),
		"E2E_GO="+goFile, "E2E_STOP="+stopFile)
	serverLog, serverDone := start("the probed server", server)
	t.Cleanup(func() { _ = os.WriteFile(stopFile, nil, 0o644) })

	logs := func() string {
		return fmt.Sprintf("\n--- server:\n%s\n--- exporter:\n%s\n--- prometheus:\n%s", serverLog, exporterLog, promLog)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	get := func(base, path string) []byte {
		resp, err := client.Get("http://" + base + path)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		return b
	}
	poll := func(what string, within time.Duration, f func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !f() {
			select {
			case err := <-exporterDone:
				t.Fatalf("the exporter exited while waiting for %s: %v%s", what, err, logs())
			case err := <-promDone:
				t.Fatalf("prometheus exited while waiting for %s: %v%s", what, err, logs())
			case err := <-serverDone:
				t.Fatalf("the probed server exited while waiting for %s: %v%s", what, err, logs())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s within %v%s", what, within, logs())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// query returns the values of an instant query's series, by their
	// instance label.
	query := func(q string) map[string]float64 {
		var v struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  [2]any            `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.Unmarshal(get(promAddr, "/api/v1/query?query="+url.QueryEscape(q)), &v) != nil {
			return nil
		}
		out := map[string]float64{}
		for _, r := range v.Data.Result {
			s, _ := r.Value[1].(string)
			if x, err := strconv.ParseFloat(s, 64); err == nil {
				out[r.Metric["instance"]+"/"+r.Metric["model"]] = x
			}
		}
		return out
	}

	// Before the error: the server's periodic snapshot is scraped with no
	// OOM, for a few scrapes, so that the OOM is an increase.
	var sawZero time.Time
	poll("gpufrag_ooms_total 0 for e2e-0 in Prometheus", 90*time.Second, func() bool {
		v, ok := query(`gpufrag_ooms_total`)["e2e-0/tiny-llama"]
		if ok && v == 0 && sawZero.IsZero() {
			sawZero = time.Now()
		}
		return !sawZero.IsZero() && time.Since(sawZero) > 3*time.Second
	})
	if h, ok := query(`gpufrag_health_ratio`)["e2e-0/tiny-llama"]; !ok || h < 0 || h > 1 {
		t.Errorf("gpufrag_health_ratio for e2e-0: %v (%t), want a ratio", h, ok)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	oomAt := time.Now()

	// The error shows in the counter within one rescan and fires the alert.
	poll("GPUOOMsIncreasing firing for e2e-0", 60*time.Second, func() bool {
		var v struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		if json.Unmarshal(get(promAddr, "/api/v1/alerts"), &v) != nil {
			return false
		}
		for _, a := range v.Data.Alerts {
			if a.Labels["alertname"] == "GPUOOMsIncreasing" && a.Labels["instance"] == "e2e-0" &&
				a.Labels["model"] == "tiny-llama" && a.State == "firing" {
				return true
			}
		}
		return false
	})
	t.Logf("GPUOOMsIncreasing fired %v after the out-of-memory error", time.Since(oomAt).Round(100*time.Millisecond))
	if m := string(get(exporterAddr, "/metrics")); !strings.Contains(m, `gpufrag_ooms_total{gpu="0",instance="e2e-0",model="tiny-llama",pool="pytorch"} 1`) {
		t.Errorf("/metrics has no gpufrag_ooms_total of 1 for e2e-0:\n%s", grep(m, "gpufrag_ooms_total"))
	}

	// The capture: kept under --capture-dir, listed at /snapshots/, and
	// explained by gpufrag analyze.
	var capture string
	poll("a capture under --capture-dir", 10*time.Second, func() bool {
		es, _ := os.ReadDir(capDir)
		for _, e := range es {
			if strings.HasPrefix(e.Name(), "e2e-0-tiny-llama-") && strings.HasSuffix(e.Name(), ".pickle") {
				capture = filepath.Join(capDir, e.Name())
			}
		}
		return capture != ""
	})
	if idx := string(get(exporterAddr, "/snapshots/index.json")); !strings.Contains(idx, filepath.Base(capture)) {
		t.Errorf("/snapshots/index.json does not list %s: %s", filepath.Base(capture), idx)
	}
	out, err := exec.CommandContext(ctx, gpufrag, "analyze", capture, "--json").Output()
	if err != nil {
		t.Fatalf("gpufrag analyze %s: %v\n%s", capture, err, out)
	}
	var doc struct {
		Devices []struct {
			OOMs []struct {
				RequestedBytes int64  `json:"requested_bytes"`
				Cause          string `json:"cause"`
				Why            string `json:"why"`
			} `json:"ooms"`
			Replay struct {
				Source         string `json:"source"`
				Allocs         int    `json:"allocs"`
				AddressMatches int    `json:"address_matches"`
			} `json:"replay"`
		} `json:"devices"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Devices) == 0 {
		t.Fatalf("gpufrag analyze --json: %v\n%s", err, out)
	}
	d := doc.Devices[0]
	if len(d.OOMs) != 1 || d.OOMs[0].RequestedBytes != 1<<30 || d.OOMs[0].Cause == "" || d.OOMs[0].Why == "" {
		t.Errorf("the capture's OOM explanation: %+v, want the failed 1 GiB request with a cause", d.OOMs)
	}
	if d.Replay.Source != "trace" || d.Replay.Allocs == 0 || d.Replay.AddressMatches != d.Replay.Allocs {
		t.Errorf("the capture's replay: %+v, want every recorded address matched", d.Replay)
	}
}

// grep returns the lines of s that contain sub.
func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
