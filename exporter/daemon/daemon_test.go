package daemon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/exporter/nvml"
	"github.com/gpufrag/gpufrag/mem"
)

// valid is a Config that Check accepts: the command's defaults.
func valid() Config {
	return Config{
		Listen: "127.0.0.1:0", Rescan: 10 * time.Second, StuckAfter: time.Minute, SourceTimeout: 2 * time.Second,
		LogFormat: "text", LogLevel: "info", MaxFiles: 256, MaxFileBytes: mem.Bytes(256 * mem.MiB),
		MaxInstances: 256, MaxSeries: 20000, CaptureMaxFiles: 20, CaptureMaxBytes: mem.Bytes(2 * mem.GiB),
		Poll: 15 * time.Second, ClusterPoll: time.Minute,
	}
}

func TestCheck(t *testing.T) {
	if err := (&Config{}).Check(); err == nil {
		t.Error("the zero Config: no error")
	}
	c := valid()
	if err := c.Check(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.MaxFiles = 0 }, "--max-files must be positive"},
		{func(c *Config) { c.CaptureMaxBytes = -1 }, "--capture-max-bytes must be positive"},
		{func(c *Config) { c.MaxFileAge = -time.Minute }, "--max-file-age -1m0s: must not be negative"},
		{func(c *Config) { c.Rescan = time.Nanosecond }, "--rescan 1ns: must be at least 1s (shorter only burns CPU"},
		{func(c *Config) { c.SourceTimeout = time.Millisecond }, "--source-timeout 1ms: must be at least 10ms (a shorter deadline fails every source"},
		{func(c *Config) { c.Capacity = -1 }, "--capacity -1B: must not be negative"},
		{func(c *Config) { c.Snapshots, c.CaptureDir = dir, dir }, "captures would be read as snapshots"},
		{func(c *Config) { c.Listen = "9400" }, `--listen "9400": `},
		{func(c *Config) { c.Listen = ":99999" }, `--listen ":99999": port "99999": want a number from 0 to 65535`},
		{func(c *Config) { c.Scrape = []string{"localhost:8000/metrics"} }, "want an http(s) URL"},
		{func(c *Config) { c.Scrape = []string{"http://a%ff:80/metrics"} }, `--scrape: the host is the instance label: label instance value "a\xff:80"`},
		{func(c *Config) { c.Cluster = "prod\x1b" }, "--cluster: label cluster value"},
		{func(c *Config) { c.Scrape = []string{"http://b/", "http://a/", "http://b/", "http://a/"} }, "--scrape http://a/ given twice"},
	} {
		c := valid()
		tc.set(&c)
		if err := c.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", c, err, tc.want)
		}
	}
}

func TestLogger(t *testing.T) {
	c := valid()
	for _, f := range []string{"text", "JSON"} {
		c.LogFormat = f
		var b bytes.Buffer
		l, err := c.Logger(&b)
		if err != nil {
			t.Fatal(err)
		}
		l.Info("hello")
		if !strings.Contains(b.String(), "hello") {
			t.Errorf("%s: %q", f, b.String())
		}
	}
	c.LogFormat = "xml"
	if _, err := c.Logger(io.Discard); err == nil || err.Error() != `--log-format "xml": want text or json` {
		t.Errorf("xml: %v", err)
	}
	c.LogFormat, c.LogLevel = "text", "loud"
	if _, err := c.Logger(io.Discard); err == nil || !strings.Contains(err.Error(), `--log-level "loud"`) {
		t.Errorf("loud: %v", err)
	}
	// The names completion offers are the ones Logger takes.
	if got := LogFormats(); !slices.Equal(got, []string{"text", "json"}) {
		t.Errorf("LogFormats() = %v", got)
	}
	if got := LogLevels(); !slices.Equal(got, []string{"debug", "info", "warn", "error"}) {
		t.Errorf("LogLevels() = %v", got)
	}
	for _, f := range LogFormats() {
		for _, l := range LogLevels() {
			c.LogFormat, c.LogLevel = f, l
			if _, err := c.Logger(io.Discard); err != nil {
				t.Errorf("--log-format %s --log-level %s: %v", f, l, err)
			}
		}
	}
}

func TestGPUDevices(t *testing.T) {
	got := gpuDevices([]nvml.Device{{Index: 1, UUID: "u", TotalBytes: 8, UsedBytes: 3, FreeBytes: 5,
		Processes: []nvml.Process{{PID: 7, UsedBytes: 2, UsedKnown: true}, {PID: 8}}}})
	if len(got) != 1 || got[0].Index != 1 || got[0].FreeBytes != 5 || len(got[0].Processes) != 1 || got[0].Processes[0].PID != 7 {
		t.Errorf("%+v: want device 1 with only process 7 (8's usage is unknown)", got)
	}
}

// TestRunSnapshotsDir: a --snapshots that is not a listable directory
// fails Run (a failure, exit 1, not a usage error: Check passes it) before
// it listens, saying what to do.
func TestRunSnapshotsDir(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{dir + "/none", "--snapshots " + dir + "/none: not a readable directory (stat " + dir + "/none: no such file or directory): create it"},
		{file, "--snapshots " + file + ": not a directory: give the directory gpufrag-probe writes to"},
	} {
		c := valid()
		c.Snapshots = tc.dir
		if err := c.Check(); err != nil {
			t.Errorf("%s: Check: %v", tc.dir, err)
		}
		err := Run(context.Background(), c, logger, Hooks{Ready: func(net.Addr) { t.Errorf("%s: listening", tc.dir) }})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.dir, err, tc.want)
		}
	}
}

// TestRunNotBuilt: an NVML that cannot exist in this binary fails Run
// before it listens, wrapping nvml.ErrNotBuilt; one without a driver is a
// source that is down, served with the rest.
func TestRunNVML(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := valid()
	c.NVML = true
	err := Run(context.Background(), c, logger, Hooks{OpenNVML: func(string) (nvml.Reader, error) { return nil, nvml.ErrNotBuilt }})
	if !errors.Is(err, nvml.ErrNotBuilt) || !strings.HasPrefix(err.Error(), "--nvml: ") {
		t.Errorf("not built: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, c, logger, Hooks{
			OpenNVML: func(string) (nvml.Reader, error) { return nil, nvml.ErrNoDriver },
			Ready:    func(a net.Addr) { addr <- a },
		})
	}()
	a := <-addr
	resp, err := http.Get("http://" + a.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if !strings.Contains(string(body), `gpufrag_source_up{source="nvml"} 0`) {
		t.Errorf("/metrics has no nvml source down:\n%s", body)
	}
}
