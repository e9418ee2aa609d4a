//go:build unix

package cli

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExporterSignal runs `gpufrag exporter` through Main over a snapshot
// directory, scrapes it, sends it SIGHUP (logged, ignored: it keeps
// serving), and stops it with SIGTERM: exit 0 after a graceful shutdown.
func TestExporterSignal(t *testing.T) {
	snap, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "snapshot", "testdata", "modern_p4.pickle"))
	if err != nil {
		t.Skipf("snapshot/testdata/modern_p4.pickle not available: %v", err)
	}
	dir, capDir := t.TempDir(), filepath.Join(t.TempDir(), "caps")
	if err := os.WriteFile(filepath.Join(dir, "vllm-0__llama__x.pickle"), snap, 0o644); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan net.Addr, 1)
	exporterReady = func(a net.Addr) { addrc <- a }
	defer func() { exporterReady = nil }()
	stderr := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"exporter", "--listen", "127.0.0.1:0", "--snapshots", dir,
			"--capture-dir", capDir, "--log-format", "json"}, strings.NewReader(""), io.Discard, stderr)
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a.String()
	case code := <-done:
		t.Fatalf("exporter exited %d: %s", code, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("exporter did not start")
	}
	body := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		return string(b)
	}
	if got := body("/healthz"); got != "ok\n" {
		t.Errorf("/healthz = %q", got)
	}
	m := body("/metrics")
	for _, s := range []string{`gpufrag_fragmentation_ratio{gpu="0",instance="vllm-0",model="llama",pool="pytorch"}`,
		`gpufrag_ooms_total{gpu="0",instance="vllm-0",model="llama",pool="pytorch"} 1`,
		`gpufrag_oom_snapshots_captured_total{instance="vllm-0",model="llama"} 1`,
		`gpufrag_source_up{source="snapshots"} 1`, "go_goroutines"} {
		if !strings.Contains(m, s) {
			t.Errorf("/metrics lacks %s", s)
		}
	}
	if got := body("/snapshots/index.json"); !strings.Contains(got, `"name":"vllm-0-llama-`) {
		t.Errorf("/snapshots/index.json = %s", got)
	}
	// SIGHUP is logged and ignored: the exporter keeps serving.
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "SIGHUP ignored"); {
		if time.Now().After(deadline) {
			t.Fatalf("no log of SIGHUP:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := body("/healthz"); got != "ok\n" {
		t.Errorf("/healthz after SIGHUP = %q", got)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after SIGTERM: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("exporter did not stop on SIGTERM")
	}
	logs := stderr.String()
	for _, s := range []string{`"msg":"serving"`, `"msg":"shutting down"`, `"msg":"stopped"`} {
		if !strings.Contains(logs, s) {
			t.Errorf("logs lack %s:\n%s", s, logs)
		}
	}
}
