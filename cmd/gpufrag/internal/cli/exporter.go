package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/exporter"
	"github.com/gpufrag/gpufrag/mem"
)

// exporterFlags are the flags of `gpufrag exporter`.
type exporterFlags struct {
	listen          string
	snapshots       string
	rescan          time.Duration
	stuckAfter      time.Duration
	sourceTimeout   time.Duration
	logFormat       string
	logLevel        string
	maxFiles        int
	maxFileBytes    mem.Bytes
	capacity        mem.Bytes
	maxInstances    int
	maxSeries       int
	captureDir      string
	captureMaxFiles int
	captureMaxBytes mem.Bytes
	nvml            bool
	nvmlLibrary     string
	scrape          []string
	poll            time.Duration
	cluster         string
	kubeconfig      string
	clusterPoll     time.Duration
	gzip            bool
}

func newExporterCmd(_, stderr io.Writer) *cobra.Command {
	f := exporterFlags{
		listen: "127.0.0.1:9400", rescan: 10 * time.Second, stuckAfter: exporter.DefaultStuckAfter, sourceTimeout: 2 * time.Second,
		logFormat: "text", logLevel: "info",
		maxFiles: 256, maxFileBytes: mem.Bytes(256 * mem.MiB), maxInstances: 256, maxSeries: 20000,
		captureMaxFiles: 20, captureMaxBytes: mem.Bytes(2 * mem.GiB),
	}
	cmd := &cobra.Command{
		Use:   "exporter",
		Short: "Serve fragmentation metrics to Prometheus from a directory of memory snapshots",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runExporter(ctx, cmd, f, stderr, exporterReady)
		},
	}
	withHelp(cmd, "exporter")
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", f.listen, "`ADDR`ESS to serve on (host:port; :0 picks a free port)")
	fl.StringVar(&f.snapshots, "snapshots", "", "`DIR`ectory of PyTorch memory snapshot pickles to watch")
	fl.DurationVar(&f.rescan, "rescan", f.rescan, "how often to rescan --snapshots (at least 1s)")
	fl.DurationVar(&f.stuckAfter, "stuck-after", f.stuckAfter, "how long a rescan or poll may make no progress before its source is reported down and /healthz degraded (at least 1s)")
	fl.DurationVar(&f.sourceTimeout, "source-timeout", f.sourceTimeout, "deadline of one source's collection during a scrape (at least 10ms)")
	fl.StringVar(&f.logFormat, "log-format", f.logFormat, "log format: text or json (logs go to stderr)")
	fl.StringVar(&f.logLevel, "log-level", f.logLevel, "log level: debug, info, warn or error")
	fl.IntVar(&f.maxFiles, "max-files", f.maxFiles, "most snapshot files watched (in name order)")
	fl.Var(&f.maxFileBytes, "max-file-bytes", "largest snapshot `SIZE` read (larger files are skipped)")
	fl.Var(&f.capacity, "capacity", "device memory of the GPUs whose --snapshots are watched, a `SIZE` such as 80GiB, as analyze's --capacity; "+
		"without it gpufrag_device_free_bytes and gpufrag_max_allocatable_bytes are not exported for snapshots (a snapshot does not record it)")
	fl.Lookup("capacity").DefValue = "0" // pflag then prints no "(default 0B)": the usage says it
	fl.IntVar(&f.maxInstances, "max-instances", f.maxInstances, "most distinct instance label values exported from snapshots")
	fl.IntVar(&f.maxSeries, "max-series", f.maxSeries, "most gpufrag series per scrape (sources past it are reported down)")
	fl.StringVar(&f.captureDir, "capture-dir", "", "`DIR`ectory to keep snapshots taken at an out-of-memory error in (default: off)")
	fl.IntVar(&f.captureMaxFiles, "capture-max-files", f.captureMaxFiles, "most captured snapshots kept")
	fl.Var(&f.captureMaxBytes, "capture-max-bytes", "most bytes of captured snapshots kept, a `SIZE` (the newest is always kept)")
	fl.BoolVar(&f.nvml, "nvml", false, "read GPU memory through NVML (needs the NVIDIA driver)")
	fl.StringVar(&f.nvmlLibrary, "nvml-library", "", "`PATH` of libnvidia-ml.so.1 (default: the dynamic loader's search)")
	fl.StringArrayVar(&f.scrape, "scrape", nil, "`URL` of a vLLM or SGLang /metrics endpoint to re-export (repeatable)")
	fl.DurationVar(&f.poll, "poll-interval", 15*time.Second, "how often NVML and --scrape endpoints are read (at least 1s)")
	fl.StringVar(&f.cluster, "cluster", "", "export the Kubernetes cluster's GPU occupancy under this cluster `NAME`")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` for --cluster (default: in-cluster, $KUBECONFIG, ~/.kube/config)")
	fl.BoolVar(&f.gzip, "gzip", false, "gzip /metrics for scrapers that accept it (costs CPU per scrape; off: the bytes are cheap on loopback or in a cluster)")
	fl.DurationVar(&f.clusterPoll, "cluster-poll-interval", time.Minute, "how often --cluster lists nodes and pods (at least 1s)")
	needsFlag(cmd, "snapshots", "it watches the snapshot directory", "rescan", "max-files", "max-file-bytes")
	needsFlag(cmd, "snapshots", "captures are copies of snapshot files", "capture-dir")
	needsFlag(cmd, "snapshots", "it is the device memory of the snapshots' GPUs", "capacity")
	needsFlag(cmd, "capture-dir", "it bounds the captures", "capture-max-files", "capture-max-bytes")
	needsFlag(cmd, "nvml", "it loads NVML", "nvml-library")
	needsFlag(cmd, "nvml", "it paces NVML and the --scrape endpoints", "poll-interval")
	needsFlag(cmd, "scrape", "it paces NVML and the --scrape endpoints", "poll-interval")
	needsFlag(cmd, "cluster", "it reaches the cluster --cluster names", "kubeconfig", "cluster-poll-interval")
	return cmd
}

// Floors of the exporter's durations. A rescan stats every file of the
// directory and a poll is a driver call or an HTTP round trip: below a
// second they only burn CPU (a 1ns ticker spins a core) while Prometheus
// scrapes every 15 s or so. A source timeout below 10 ms fails every HTTP
// or NVML source even on loopback.
const (
	minExporterInterval = time.Second
	minSourceTimeout    = 10 * time.Millisecond
)

func intervalReason(floor time.Duration) string {
	if floor == minSourceTimeout {
		return "a shorter deadline fails every source, even on loopback"
	}
	return "shorter only burns CPU: Prometheus scrapes every 15s or so"
}

// exporterListening, when set, receives the listening address before the
// snapshot directory's first scan (tests).
var exporterListening func(net.Addr)

// exporterReady, when set, receives the daemon's listening address (tests
// of the signal path, which cannot pass one through Main).
var exporterReady func(net.Addr)

// exporterLogger builds the slog logger of --log-format and --log-level.
func exporterLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// runExporter validates f, wires the sources and serves until ctx ends.
// ready, when set, receives the listening address (tests).
func runExporter(ctx context.Context, cmd *cobra.Command, f exporterFlags, stderr io.Writer, ready func(net.Addr)) error {
	logger, err := exporterLogger(stderr, f.logFormat, f.logLevel)
	if err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	for _, c := range []struct {
		name string
		bad  bool
	}{
		{"--max-files", f.maxFiles <= 0}, {"--max-file-bytes", f.maxFileBytes <= 0},
		{"--max-instances", f.maxInstances <= 0}, {"--max-series", f.maxSeries <= 0},
		{"--capture-max-files", f.captureMaxFiles <= 0}, {"--capture-max-bytes", f.captureMaxBytes <= 0},
	} {
		if c.bad {
			return usageErrorf(cmd, "%s must be positive", c.name)
		}
	}
	for _, c := range []struct {
		name     string
		v, floor time.Duration
	}{
		{"--rescan", f.rescan, minExporterInterval}, {"--stuck-after", f.stuckAfter, minExporterInterval},
		{"--poll-interval", f.poll, minExporterInterval}, {"--cluster-poll-interval", f.clusterPoll, minExporterInterval},
		{"--source-timeout", f.sourceTimeout, minSourceTimeout},
	} {
		if c.v < c.floor {
			return usageErrorf(cmd, "%s %v: must be at least %v (%s)", c.name, c.v, c.floor, intervalReason(c.floor))
		}
	}
	if f.snapshots != "" {
		if st, err := os.Stat(f.snapshots); err != nil || !st.IsDir() {
			return usageErrorf(cmd, "--snapshots %s: not a readable directory", f.snapshots)
		}
	}
	if f.capacity < 0 {
		return usageErrorf(cmd, "--capacity %s: must not be negative", f.capacity)
	}
	if f.capacity > 0 {
		if _, err := mem.NewDevice(int64(f.capacity), 0); err != nil {
			return usageErrorf(cmd, "--capacity %s: %v", f.capacity, err)
		}
	}
	if f.captureDir != "" {
		if err := exporter.DistinctDirs(f.snapshots, f.captureDir); err != nil {
			return usageErrorf(cmd, "--capture-dir %s and --snapshots %s: %v: captures would be read as snapshots and captured again; give a directory outside --snapshots",
				f.captureDir, f.snapshots, err)
		}
	}
	// A malformed address is a usage error (2); one that is well formed but
	// cannot be bound (in use, not ours) fails at Listen with 1.
	if _, port, err := net.SplitHostPort(f.listen); err != nil {
		return usageErrorf(cmd, "--listen %q: %v: want host:port, such as 127.0.0.1:9400 or :9400", f.listen, err)
	} else if _, err := net.LookupPort("tcp", port); err != nil {
		return usageErrorf(cmd, "--listen %q: port %q: want a number from 0 to 65535 (0 picks a free port)", f.listen, port)
	}
	scrapeInstances := make([]string, len(f.scrape))
	for i, u := range f.scrape {
		if scrapeInstances[i], err = checkScrapeURL(u); err != nil {
			return usageErrorf(cmd, "%v", err)
		}
	}
	if f.cluster != "" {
		if err := exporter.CheckLabel("cluster", f.cluster); err != nil {
			return usageErrorf(cmd, "--cluster: %v", err)
		}
	}
	if err := uniqueStrings(f.scrape); err != nil {
		return usageErrorf(cmd, "--scrape %s given twice", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	scfg := exporter.ServerConfig{Gatherer: reg, Logger: logger, Gzip: f.gzip}
	var sources []exporter.Source
	var capture *exporter.Capturer
	var firstScan *exporter.SnapshotDir
	if f.captureDir != "" {
		capture, err = exporter.NewCapturer(exporter.CaptureConfig{
			Dir: f.captureDir, MaxFiles: f.captureMaxFiles, MaxBytes: int64(f.captureMaxBytes),
			Logger: logger, Registerer: reg,
		})
		if err != nil {
			return err
		}
		scfg.Snapshots = capture
	}
	if f.snapshots != "" {
		dir, err := exporter.NewSnapshotDir(exporter.SnapshotDirConfig{
			Dir: f.snapshots, Rescan: f.rescan, MaxFiles: f.maxFiles, MaxFileBytes: int64(f.maxFileBytes),
			MaxInstances: f.maxInstances, StuckAfter: f.stuckAfter, Logger: logger, Registerer: reg, Capture: capture,
			Capacity: int64(f.capacity),
		})
		if err != nil {
			return err
		}
		firstScan = dir
		sources = append(sources, dir)
		scfg.Runners = append(scfg.Runners, dir)
	}
	var slow []exporter.ContextSource
	if f.nvml {
		src, closeNVML, err := nvmlSource(f.nvmlLibrary, logger)
		if err != nil {
			return usageErrorf(cmd, "--nvml: %v", err)
		}
		defer closeNVML()
		slow = append(slow, src)
	}
	client := &http.Client{Timeout: f.poll}
	for i, u := range f.scrape {
		slow = append(slow, scrapeSource(u, scrapeInstances[i], client))
	}
	polled, runners, err := polledSources(slow, f.poll, 10*time.Second)
	if err != nil {
		return err
	}
	sources = append(sources, polled...)
	scfg.Runners = append(scfg.Runners, runners...)
	if f.cluster != "" {
		src, err := clusterSource(f.cluster, f.kubeconfig)
		if err != nil {
			return err
		}
		p, err := exporter.NewPolledSource(src, f.clusterPoll, min(f.clusterPoll, time.Minute), nil)
		if err != nil {
			return err
		}
		sources, scfg.Runners = append(sources, p), append(scfg.Runners, p)
	}
	// The Collector's families are assembled when a source changes and
	// served beside the registry's (exporter.Collector.Gatherer).
	coll, err := exporter.NewWithOptions(nil, exporter.Options{
		SourceTimeout: f.sourceTimeout, MaxSeries: f.maxSeries, Logger: logger,
	}, sources...)
	if err != nil {
		return err
	}
	if scfg.Gatherer, err = coll.Gatherer(reg); err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	// The server answers (/metrics, /healthz) from the start, while the
	// snapshot directory's first scan runs (issue 25: a directory holding
	// a large snapshot kept the listener closed for up to 86 s). ready is
	// told once that scan is done, or stuck for --stuck-after (then it goes
	// on in the background, the source down and /healthz degraded
	// meanwhile), so that a test's first scrape has the directory's
	// figures.
	served := make(chan error, 1)
	go func() { served <- exporter.Serve(ctx, ln, scfg) }()
	if exporterListening != nil {
		exporterListening(ln.Addr())
	}
	if firstScan != nil {
		if err := firstScan.FirstScan(ctx); errors.Is(err, exporter.ErrStuck) {
			logger.Error("first snapshot rescan stuck; serving meanwhile", "err", err.Error())
		}
	}
	if ready != nil {
		ready(ln.Addr())
	}
	return <-served
}
