// Package daemon is the run of `gpufrag exporter`: its settings (Config,
// one field per flag), checked (Config.Check), turned into the exporter's
// sources (a directory of snapshots, OOM capture, NVML, scraped inference
// servers, a Kubernetes cluster) and served until the context ends (Run).
// The command line only fills a Config and prints what fails.
//
// Messages name the flag of `gpufrag exporter` that sets the field they are
// about ("--rescan 10ms: must be at least 1s (...)"): Config is that
// command's settings, and its users read them as flags.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpufrag/gpufrag/cluster/kube/live"
	"github.com/gpufrag/gpufrag/exporter"
	"github.com/gpufrag/gpufrag/exporter/nvml"
	"github.com/gpufrag/gpufrag/mem"
)

// Config is what the exporter serves and how: the flags of `gpufrag
// exporter`, named alike (Snapshots: --snapshots, Poll: --poll-interval).
type Config struct {
	Listen                            string
	Snapshots                         string
	Rescan, StuckAfter, SourceTimeout time.Duration
	LogFormat, LogLevel               string
	MaxFiles                          int
	MaxFileAge                        time.Duration
	MaxFileBytes                      mem.Bytes
	Capacity                          mem.Bytes
	MaxInstances, MaxSeries           int
	CaptureDir                        string
	CaptureMaxFiles                   int
	CaptureMaxBytes                   mem.Bytes
	NVML                              bool
	NVMLLibrary                       string
	Scrape                            []string
	Poll                              time.Duration
	Cluster, Kubeconfig               string
	ClusterPoll                       time.Duration
	Gzip                              bool
}

// Hooks are Run's seams for tests; a nil field is the real thing.
type Hooks struct {
	// OpenNVML opens NVML (nvml.Open, with the library path when one is given).
	OpenNVML func(libraryPath string) (nvml.Reader, error)
	// ConnectCluster builds a live cluster's client (live.Connect).
	ConnectCluster func(live.Config) (live.Client, error)
	// Listening receives the listening address before the snapshot
	// directory's first scan; Ready receives it once that scan is done (or
	// stuck for StuckAfter).
	Listening, Ready func(net.Addr)
}

// Floors of the durations. A rescan stats every file of the directory and
// a poll is a driver call or an HTTP round trip: below a second they only
// burn CPU (a 1ns ticker spins a core) while Prometheus scrapes every 15 s
// or so. A source timeout below 10 ms fails every HTTP or NVML source even
// on loopback.
const (
	MinInterval      = time.Second
	MinSourceTimeout = 10 * time.Millisecond
)

// logHandlers are the log formats Logger writes, by LogFormat's name.
var logHandlers = [...]struct {
	name string
	new  func(io.Writer, *slog.HandlerOptions) slog.Handler
}{
	{"text", func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewTextHandler(w, o) }},
	{"json", func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) }},
}

// LogFormats are the values of LogFormat (in any case), in order: for
// hints and shell completion.
func LogFormats() []string {
	out := make([]string, len(logHandlers))
	for i, h := range logHandlers {
		out[i] = h.name
	}
	return out
}

// LogLevels are the names of slog's levels, lower-cased, which LogLevel
// takes (as slog.Level's UnmarshalText does, which also takes offsets
// such as "info+2"): for hints and shell completion.
func LogLevels() []string {
	var out []string
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		out = append(out, strings.ToLower(l.String()))
	}
	return out
}

// Logger builds the slog logger of LogFormat and LogLevel, writing to w.
func (c *Config) Logger(w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: lv}
	for _, h := range logHandlers {
		if strings.EqualFold(c.LogFormat, h.name) {
			return slog.New(h.new(w, opts)), nil
		}
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", c.LogFormat)
}

// Check refuses settings that cannot work, before anything is opened (the
// command line reports them as usage errors): the first one found, naming
// its flag. It does not open NVML, reach the cluster or bind the address:
// those fail in Run.
func (c *Config) Check() error {
	for _, p := range []struct {
		name string
		bad  bool
	}{
		{"--max-files", c.MaxFiles <= 0}, {"--max-file-bytes", c.MaxFileBytes <= 0},
		{"--max-instances", c.MaxInstances <= 0}, {"--max-series", c.MaxSeries <= 0},
		{"--capture-max-files", c.CaptureMaxFiles <= 0}, {"--capture-max-bytes", c.CaptureMaxBytes <= 0},
	} {
		if p.bad {
			return fmt.Errorf("%s must be positive", p.name)
		}
	}
	if c.MaxFileAge < 0 {
		return fmt.Errorf("--max-file-age %v: must not be negative (0: off)", c.MaxFileAge)
	}
	for _, d := range []struct {
		name     string
		v, floor time.Duration
	}{
		{"--rescan", c.Rescan, MinInterval}, {"--stuck-after", c.StuckAfter, MinInterval},
		{"--poll-interval", c.Poll, MinInterval}, {"--cluster-poll-interval", c.ClusterPoll, MinInterval},
		{"--source-timeout", c.SourceTimeout, MinSourceTimeout},
	} {
		if d.v < d.floor {
			why := "shorter only burns CPU: Prometheus scrapes every 15s or so"
			if d.floor == MinSourceTimeout {
				why = "a shorter deadline fails every source, even on loopback"
			}
			return fmt.Errorf("%s %v: must be at least %v (%s)", d.name, d.v, d.floor, why)
		}
	}
	if c.Capacity < 0 {
		return fmt.Errorf("--capacity %s: must not be negative", c.Capacity)
	}
	if c.Capacity > 0 {
		if _, err := mem.NewDevice(int64(c.Capacity), 0); err != nil {
			return fmt.Errorf("--capacity %s: %w", c.Capacity, err)
		}
	}
	if c.CaptureDir != "" {
		if err := exporter.DistinctDirs(c.Snapshots, c.CaptureDir); err != nil {
			return fmt.Errorf("--capture-dir %s and --snapshots %s: %w: captures would be read as snapshots and captured again; give a directory outside --snapshots",
				c.CaptureDir, c.Snapshots, err)
		}
	}
	// A malformed address is refused here; one that is well formed but
	// cannot be bound (in use, not ours) fails in Run.
	if _, port, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("--listen %q: %w: want host:port, such as 127.0.0.1:9400 or :9400", c.Listen, err)
	} else if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--listen %q: port %q: want a number from 0 to 65535 (0 picks a free port)", c.Listen, port)
	}
	for _, u := range c.Scrape {
		if _, err := scrapeInstance(u); err != nil {
			return err
		}
	}
	if c.Cluster != "" {
		if err := exporter.CheckLabel("cluster", c.Cluster); err != nil {
			return fmt.Errorf("--cluster: %w", err)
		}
	}
	if dup := firstRepeated(c.Scrape); dup != "" {
		return fmt.Errorf("--scrape %s given twice", dup)
	}
	return nil
}

// firstRepeated returns the least value that vals hold twice, or "".
func firstRepeated(vals []string) string {
	s := slices.Clone(vals)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return s[i]
		}
	}
	return ""
}

// Run serves c (which Check has accepted) until ctx ends, logging to
// logger. An error from NVML in a binary built without it wraps
// nvml.ErrNotBuilt: --nvml can never work there.
func Run(ctx context.Context, c Config, logger *slog.Logger, h Hooks) error {
	defer exporter.DaemonGC()()
	reg := prometheus.NewRegistry()
	scfg := exporter.ServerConfig{Gatherer: reg, Logger: logger, Gzip: c.Gzip}
	var sources []exporter.Source
	var capture *exporter.Capturer
	var firstScan *exporter.SnapshotDir
	var err error
	if c.Snapshots != "" {
		// A failure, not a usage error (Check): the flag is well formed, the
		// directory is what is missing, as for any file a command reads.
		if err := snapshotsDir(c.Snapshots); err != nil {
			return err
		}
	}
	if c.CaptureDir != "" {
		capture, err = exporter.NewCapturer(exporter.CaptureConfig{
			Dir: c.CaptureDir, MaxFiles: c.CaptureMaxFiles, MaxBytes: int64(c.CaptureMaxBytes),
			Logger: logger, Registerer: reg,
		})
		if err != nil {
			return err
		}
		scfg.Snapshots = capture
	}
	if c.Snapshots != "" {
		dir, err := exporter.NewSnapshotDir(exporter.SnapshotDirConfig{
			Dir: c.Snapshots, Rescan: c.Rescan, MaxFiles: c.MaxFiles, MaxFileAge: c.MaxFileAge, MaxFileBytes: int64(c.MaxFileBytes),
			MaxInstances: c.MaxInstances, StuckAfter: c.StuckAfter, Logger: logger, Registerer: reg, Capture: capture,
			Capacity: int64(c.Capacity),
		})
		if err != nil {
			return err
		}
		firstScan = dir
		sources = append(sources, dir)
		scfg.Runners = append(scfg.Runners, dir)
	}
	polled, err := c.polledSources(logger, h)
	if err != nil {
		return err
	}
	for _, p := range polled {
		defer p.close()
		sources, scfg.Runners = append(sources, p.src), append(scfg.Runners, p.src)
	}
	// The Collector's families are assembled when a source changes and
	// served beside the registry's (exporter.Collector.Gatherer).
	coll, err := exporter.NewWithOptions(nil, exporter.Options{
		SourceTimeout: c.SourceTimeout, MaxSeries: c.MaxSeries, Logger: logger,
	}, sources...)
	if err != nil {
		return err
	}
	// The Go and process collectors' families are served beside them
	// (Collector.GathererWithRuntime), without a registry's gathering.
	if scfg.Gatherer, err = coll.GathererWithRuntime(reg); err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", c.Listen, err)
	}
	// The server answers (/metrics, /healthz) from the start, while the
	// snapshot directory's first scan runs (issue 25: a directory holding
	// a large snapshot kept the listener closed for up to 86 s). Ready is
	// told once that scan is done, or stuck for StuckAfter (then it goes
	// on in the background, the source down and /healthz degraded
	// meanwhile), so that a test's first scrape has the directory's
	// figures.
	served := make(chan error, 1)
	go func() { served <- exporter.Serve(ctx, ln, scfg) }()
	if h.Listening != nil {
		h.Listening(ln.Addr())
	}
	if firstScan != nil {
		if err := firstScan.FirstScan(ctx); errors.Is(err, exporter.ErrStuck) {
			logger.Error("first snapshot rescan stuck; serving meanwhile", "err", err.Error())
		}
	}
	if h.Ready != nil {
		h.Ready(ln.Addr())
	}
	return <-served
}

// polled is a slow source run in the background, and what closes it.
type polled struct {
	src   *exporter.PolledSource
	close func()
}

// snapshotsDir checks that --snapshots names a directory that can be
// listed, saying what to do where it does not.
func snapshotsDir(dir string) error {
	st, err := os.Stat(dir)
	if err == nil && !st.IsDir() {
		return fmt.Errorf("--snapshots %s: not a directory: give the directory gpufrag-probe writes to", dir)
	}
	if err == nil {
		var f *os.File
		if f, err = os.Open(dir); err == nil {
			_, err = f.ReadDir(1)
			f.Close()
			if errors.Is(err, io.EOF) {
				err = nil
			}
		}
	}
	if err != nil {
		return fmt.Errorf("--snapshots %s: not a readable directory (%w): create it, or mount it, before the exporter starts", dir, err)
	}
	return nil
}

// polledSources builds the slow sources (NVML, each --scrape URL, the
// cluster) as polled sources: a scrape reads their last result. NVML and
// the scrapes are polled every Poll (each within min(10s, Poll)), the
// cluster every ClusterPoll.
func (c *Config) polledSources(logger *slog.Logger, h Hooks) ([]polled, error) {
	var out []polled
	add := func(src exporter.ContextSource, interval, timeout time.Duration, close func()) error {
		p, err := exporter.NewPolledSource(src, interval, min(timeout, interval), nil)
		if err != nil {
			close()
			return err
		}
		out = append(out, polled{p, close})
		return nil
	}
	closeAll := func() {
		for _, p := range out {
			p.close()
		}
	}
	nothing := func() {}
	if c.NVML {
		src, closeNVML, err := nvmlSource(c.NVMLLibrary, logger, h.OpenNVML)
		if err != nil {
			return nil, fmt.Errorf("--nvml: %w", err)
		}
		if err := add(src, c.Poll, 10*time.Second, closeNVML); err != nil {
			return nil, err
		}
	}
	client := &http.Client{Timeout: c.Poll}
	for _, u := range c.Scrape {
		instance, _ := scrapeInstance(u) // Check accepted it
		if err := add(scrapeSource(u, instance, client), c.Poll, 10*time.Second, nothing); err != nil {
			closeAll()
			return nil, err
		}
	}
	if c.Cluster != "" {
		src, err := clusterSource(c.Cluster, c.Kubeconfig, h.ConnectCluster)
		if err == nil {
			err = add(src, c.ClusterPoll, time.Minute, nothing)
		}
		if err != nil {
			closeAll()
			return nil, err
		}
	}
	return out, nil
}
