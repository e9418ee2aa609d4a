package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/cluster/kube/live"
	"github.com/gpufrag/gpufrag/exporter/nvml"
)

// fakeNVML is an nvml.Reader with fixed devices.
type fakeNVML struct{ devs []nvml.Device }

func (f fakeNVML) Devices(context.Context) ([]nvml.Device, error) { return f.devs, nil }
func (fakeNVML) Close() error                                     { return nil }

// serveExporter runs `gpufrag exporter ARGS` on 127.0.0.1:0 until the test
// ends and returns a function that waits until /metrics contains every one
// of want (the slow sources poll in the background) and returns it.
func serveExporter(t *testing.T, args ...string) func(want ...string) string {
	t.Helper()
	scrape, _ := serveExporterLog(t, args...)
	return scrape
}

// serveExporterLog is serveExporter that also returns the exporter's log.
func serveExporterLog(t *testing.T, args ...string) (func(want ...string) string, *lockedBuffer) {
	t.Helper()
	addrc, done := make(chan net.Addr, 1), make(chan error, 1)
	exporterReady = func(a net.Addr) { addrc <- a }
	stderr := &lockedBuffer{}
	root := newRoot(strings.NewReader(""), io.Discard, stderr)
	cmdline := []string{"exporter", "--listen", "127.0.0.1:0"}
	if slices.Contains(args, "--nvml") || slices.Contains(args, "--scrape") {
		cmdline = append(cmdline, "--poll-interval", "1s") // the flag needs one of them
	}
	root.SetArgs(append(cmdline, args...))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("exporter: %v", err)
		}
		exporterReady = nil
	})
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a.String()
	case err := <-done:
		done <- nil // for the cleanup, which waits on done
		t.Fatalf("exporter stopped: %v; log: %s", err, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("exporter did not start")
	}
	return func(want ...string) string {
		var body string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			resp, err := http.Get(base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			missing := false
			for _, w := range want {
				missing = missing || !strings.Contains(body, w)
			}
			if !missing {
				return body
			}
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("/metrics lacks %s", w)
			}
		}
		t.Fatalf("log: %s", stderr.String())
		return ""
	}, stderr
}

func TestExporterNVML(t *testing.T) {
	defer func(o func(string) (nvml.Reader, error)) { nvmlOpen = o }(nvmlOpen)
	nvmlOpen = func(string) (nvml.Reader, error) {
		return fakeNVML{[]nvml.Device{{Index: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3",
			TotalBytes: 85 << 30, UsedBytes: 60 << 30, FreeBytes: 25 << 30,
			Processes: []nvml.Process{{PID: 42, UsedBytes: 59 << 30, UsedKnown: true}, {PID: 43, UsedKnown: false}}}}}, nil
	}
	m := serveExporter(t, "--nvml")(
		`gpufrag_source_up{source="nvml"} 1`,
		fmt.Sprintf(`gpufrag_gpu_memory_total_bytes{gpu="0"} %g`, float64(85<<30)),
		fmt.Sprintf(`gpufrag_gpu_memory_free_bytes{gpu="0"} %g`, float64(25<<30)),
		`gpufrag_gpu_info{gpu="0",name="NVIDIA H100 80GB HBM3",uuid="GPU-a"} 1`,
		fmt.Sprintf(`gpufrag_gpu_process_memory_used_bytes{gpu="0",pid="42"} %g`, float64(59<<30)))
	if strings.Contains(m, `pid="43"`) {
		t.Error("a process whose usage NVML does not know was exported")
	}
}

// Without a driver the source is reported down and the exporter serves on,
// after one warning (not one at startup and another at the first scrape).
func TestExporterNVMLNoDriver(t *testing.T) {
	defer func(o func(string) (nvml.Reader, error)) { nvmlOpen = o }(nvmlOpen)
	nvmlOpen = func(string) (nvml.Reader, error) { return nil, fmt.Errorf("test: %w", nvml.ErrNoDriver) }
	scrape, log := serveExporterLog(t, "--nvml")
	for range 3 {
		if m := scrape(`gpufrag_source_up{source="nvml"} 0`); strings.Contains(m, "gpufrag_gpu_memory_total_bytes{") {
			t.Error("GPU series exported without a driver")
		}
	}
	if n := strings.Count(log.String(), "test: NVML not available"); n != 1 || !strings.Contains(log.String(), "GPU source off") {
		t.Errorf("the missing driver is logged %d times, want once, as 'GPU source off':\n%s", n, log.String())
	}
}

// A binary without the NVML reader says so and exits 2 when --nvml is
// asked for, rather than serving with the GPU source silently down.
func TestExporterNVMLNotBuilt(t *testing.T) {
	defer func(o func(string) (nvml.Reader, error)) { nvmlOpen = o }(nvmlOpen)
	nvmlOpen = func(string) (nvml.Reader, error) {
		return nil, fmt.Errorf("%w: %w: built with -tags nonvml; the GPU source is off", nvml.ErrNoDriver, nvml.ErrNotBuilt)
	}
	code, _, stderr := run(t, "", "exporter", "--listen", "127.0.0.1:0", "--nvml")
	if code != exitUsage || !strings.Contains(stderr, "--nvml: NVML not available: not in this build: built with -tags nonvml") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming --nvml and the build", code, stderr)
	}
}

// The real nvml.Open in this build: a binary with the reader opens (or
// misses) a driver; one without it exits 2 saying so.
func TestExporterNVMLBuild(t *testing.T) {
	if nvml.Built() == nil {
		t.Skip("this build has the NVML reader; the fake-library tests of exporter/nvml cover it")
	}
	code, _, stderr := run(t, "", "exporter", "--listen", "127.0.0.1:0", "--nvml")
	if code != exitUsage || !strings.Contains(stderr, nvml.Built().Error()) {
		t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, nvml.Built())
	}
}

func TestExporterScrape(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "exporter", "scrape", "testdata", "vllm_v1.prom"))
	if err != nil {
		t.Fatal(err)
	}
	up := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !up {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	u := srv.URL + "/metrics"
	inst := strings.TrimPrefix(srv.URL, "http://")
	labels := fmt.Sprintf(`{gpu="",instance=%q,model="example-org/chat-8b",pool="engine/engine=0"}`, inst)
	serveExporter(t, "--scrape", u)(
		fmt.Sprintf(`gpufrag_source_up{source=%q} 1`, "scrape:"+u),
		"gpufrag_kv_cache_usage_ratio"+labels+" 0.6875",
		"gpufrag_kv_blocks"+labels+" 27910",
		"gpufrag_kv_block_size_tokens"+labels+" 16",
		"gpufrag_kv_preemptions_total"+labels+" 17",
		"gpufrag_kv_prefix_cache_queries_total"+labels+" 1.048576e+06",
		"gpufrag_kv_prefix_cache_hits_total"+labels+" 393216")
}

// TestExporterScrapeRedirect (issue 28): an engine endpoint that redirects
// is not followed. The server it points at is never asked, so its body (a
// valid exposition, an HTML page) reaches neither /metrics nor the log; the
// sources are down and the log names the redirect.
func TestExporterScrapeRedirect(t *testing.T) {
	const secret = "SECRET-c2VjcmV0"
	page, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "exporter", "scrape", "testdata", "vllm_v1.prom"))
	if err != nil {
		t.Fatal(err)
	}
	page = bytes.ReplaceAll(page, []byte("example-org/chat-8b"), []byte(secret))
	var hits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/page" {
			_, _ = w.Write(page)
			return
		}
		_, _ = w.Write([]byte("<html>" + secret + "</html>\n"))
	}))
	defer other.Close()
	var polls [2]atomic.Int64
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			polls[0].Add(1)
			http.Redirect(w, r, other.URL+"/page", http.StatusFound)
			return
		}
		polls[1].Add(1)
		http.Redirect(w, r, other.URL+"/html", http.StatusTemporaryRedirect)
	}))
	defer engine.Close()
	u1, u2 := engine.URL+"/metrics", engine.URL+"/other"
	scrape, logs := serveExporterLog(t, "--scrape", u1, "--scrape", u2)
	// A source's state is logged when the first scrape finds it down, with
	// the error of its last poll: wait until each source's second poll has
	// begun (its first has ended).
	for deadline := time.Now().Add(20 * time.Second); polls[0].Load() < 2 || polls[1].Load() < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not polled twice in 20 s: %d and %d polls", polls[0].Load(), polls[1].Load())
		}
	}
	body := scrape(fmt.Sprintf(`gpufrag_source_up{source=%q} 0`, "scrape:"+u1), fmt.Sprintf(`gpufrag_source_up{source=%q} 0`, "scrape:"+u2))
	log := logs.String()
	for _, want := range []string{"status 302 Found: redirect to \\\"" + other.URL + "/page\\\" refused",
		"status 307 Temporary Redirect: redirect to \\\"" + other.URL + "/html\\\" refused"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(body, secret) || strings.Contains(log, secret) {
		t.Errorf("the redirect target's body leaked:\n%s\n%s", body, log)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the redirect target was asked %d times", n)
	}
}

func TestExporterSourceFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scrape", "localhost:8000/metrics"}, "want an http(s) URL"},
		{[]string{"--scrape", "http://a/metrics", "--scrape", "http://a/metrics"}, "given twice"},
		{[]string{"--nvml-library", "/x.so"}, "--nvml-library has no effect without --nvml"},
		{[]string{"--scrape", "http://a/metrics", "--poll-interval", "0s"}, "--poll-interval 0s: must be at least 1s"},
		// Issue 28: label values that are not plain text are refused at
		// start (a --scrape given twice, checked after them, keeps the
		// test from serving when they are not).
		{[]string{"--scrape", "http://a%ff:80/metrics", "--scrape", "http://a%ff:80/metrics"},
			`--scrape: the host is the instance label: label instance value "a\xff:80": byte 1: invalid UTF-8 (byte 0xff)`},
		{[]string{"--cluster", "prod\x1b[2J", "--scrape", "http://a/", "--scrape", "http://a/"},
			`--cluster: label cluster value "prod\x1b[2J": byte 4: control character U+001B`},
	} {
		code, _, stderr := run(t, "", append([]string{"exporter"}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

func TestExporterCluster(t *testing.T) {
	nodes, pods := fixtureObjects(t)
	var conf live.Config
	withLive(t, func(c live.Config) (live.Client, error) { conf = c; return &fakeLive{nodes: nodes, pods: pods}, nil })
	serveExporter(t, "--cluster", "prod", "--kubeconfig", "/k", "--cluster-poll-interval", "1s")(
		`gpufrag_source_up{source="cluster"} 1`,
		`gpufrag_cluster_nodes{cluster="prod"} 4`,
		`gpufrag_cluster_gpus{cluster="prod"} 10`,
		`gpufrag_cluster_allocated_gpus{cluster="prod"} 2.5`,
		`gpufrag_cluster_pending_pods{cluster="prod"} 3`,
		`gpufrag_cluster_whole_free_nodes{cluster="prod"} `)
	if conf.Kubeconfig != "/k" {
		t.Errorf("connected with %+v", conf)
	}
	// A cluster that cannot be reached at start is an error, not a silent gap.
	withLive(t, func(live.Config) (live.Client, error) { return nil, fmt.Errorf("no kubeconfig") })
	if code, _, stderr := run(t, "", "exporter", "--listen", "127.0.0.1:0", "--cluster", "prod"); code != exitFail || !strings.Contains(stderr, "--cluster prod: no kubeconfig") {
		t.Errorf("unreachable cluster: exit %d, %q", code, stderr)
	}
	if code, _, stderr := run(t, "", "exporter", "--kubeconfig", "/k"); code != exitUsage || !strings.Contains(stderr, "--kubeconfig has no effect without --cluster") {
		t.Errorf("--kubeconfig alone: exit %d, %q", code, stderr)
	}
}
