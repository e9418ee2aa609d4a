package cli

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/exporter"
	"github.com/gpufrag/gpufrag/exporter/daemon"
	"github.com/gpufrag/gpufrag/exporter/nvml"
	"github.com/gpufrag/gpufrag/mem"
)

func newExporterCmd(_, stderr io.Writer) *cobra.Command {
	f := daemon.Config{
		Listen: "127.0.0.1:9400", Rescan: 10 * time.Second, StuckAfter: exporter.DefaultStuckAfter, SourceTimeout: 2 * time.Second,
		LogFormat: "text", LogLevel: "info",
		MaxFiles: 256, MaxFileBytes: mem.Bytes(256 * mem.MiB), MaxInstances: 256, MaxSeries: 20000,
		CaptureMaxFiles: 20, CaptureMaxBytes: mem.Bytes(2 * mem.GiB),
	}
	cmd := &cobra.Command{
		Use:   "exporter",
		Short: "Serve fragmentation metrics to Prometheus from a directory of memory snapshots",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runExporter(ctx, cmd, f, stderr, exporterReady)
		},
	}
	withHelp(cmd, "exporter")
	fl := cmd.Flags()
	fl.StringVar(&f.Listen, "listen", f.Listen, "`ADDR`ESS to serve on (host:port; :0 picks a free port)")
	fl.StringVar(&f.Snapshots, "snapshots", "", "`DIR`ectory of PyTorch memory snapshot pickles to watch")
	fl.DurationVar(&f.Rescan, "rescan", f.Rescan, "how often to rescan --snapshots (at least 1s)")
	fl.DurationVar(&f.StuckAfter, "stuck-after", f.StuckAfter, "how long a rescan or poll may make no progress before its source is reported down and /healthz degraded (at least 1s)")
	fl.DurationVar(&f.SourceTimeout, "source-timeout", f.SourceTimeout, "deadline of one source's collection during a scrape (at least 10ms)")
	fl.StringVar(&f.LogFormat, "log-format", f.LogFormat, "log format: text or json (logs go to stderr)")
	fl.StringVar(&f.LogLevel, "log-level", f.LogLevel, "log level: debug, info, warn or error")
	fl.IntVar(&f.MaxFiles, "max-files", f.MaxFiles, "most snapshot files watched (in name order; stale files are not watched)")
	fl.DurationVar(&f.MaxFileAge, "max-file-age", 0, "retire as stale a snapshot file without a probe lock that has not been modified for this `DURATION` (0: off; a probe's files are stale once its lock is free)")
	fl.Var(&f.MaxFileBytes, "max-file-bytes", "largest snapshot `SIZE` read (larger files are skipped)")
	fl.Var(&f.Capacity, "capacity", "device memory of the GPUs whose --snapshots are watched, a `SIZE` such as 80GiB, as analyze's --capacity (a decimal size is rounded down to whole bytes); "+
		"without it gpufrag_device_free_bytes and gpufrag_max_allocatable_bytes are not exported for snapshots (a snapshot does not record it)")
	fl.Lookup("capacity").DefValue = "0" // pflag then prints no "(default 0B)": the usage says it
	fl.IntVar(&f.MaxInstances, "max-instances", f.MaxInstances, "most distinct instance label values exported from snapshots")
	fl.IntVar(&f.MaxSeries, "max-series", f.MaxSeries, "most gpufrag series per scrape (sources past it are reported down)")
	fl.StringVar(&f.CaptureDir, "capture-dir", "", "`DIR`ectory to keep snapshots taken at an out-of-memory error in (default: off)")
	fl.IntVar(&f.CaptureMaxFiles, "capture-max-files", f.CaptureMaxFiles, "most captured snapshots kept")
	fl.Var(&f.CaptureMaxBytes, "capture-max-bytes", "most bytes of captured snapshots kept, a `SIZE` (the newest is always kept)")
	fl.BoolVar(&f.NVML, "nvml", false, "read GPU memory through NVML (needs the NVIDIA driver)")
	fl.StringVar(&f.NVMLLibrary, "nvml-library", "", "`PATH` of libnvidia-ml.so.1 (default: the dynamic loader's search)")
	fl.StringArrayVar(&f.Scrape, "scrape", nil, "`URL` of a vLLM or SGLang /metrics endpoint to re-export (repeatable)")
	fl.DurationVar(&f.Poll, "poll-interval", 15*time.Second, "how often NVML and --scrape endpoints are read (at least 1s)")
	fl.StringVar(&f.Cluster, "cluster", "", "export the Kubernetes cluster's GPU occupancy under this cluster `NAME`")
	fl.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig `FILE` for --cluster (default: in-cluster, $KUBECONFIG, ~/.kube/config)")
	fl.BoolVar(&f.Gzip, "gzip", false, "gzip /metrics for scrapers that accept it (costs CPU per scrape; off: the bytes are cheap on loopback or in a cluster)")
	fl.DurationVar(&f.ClusterPoll, "cluster-poll-interval", time.Minute, "how often --cluster lists nodes and pods (at least 1s)")
	needsFlag(cmd, "snapshots", "it watches the snapshot directory", "rescan", "max-files", "max-file-age", "max-file-bytes")
	needsFlag(cmd, "snapshots", "captures are copies of snapshot files", "capture-dir")
	needsFlag(cmd, "snapshots", "it is the device memory of the snapshots' GPUs", "capacity")
	needsFlag(cmd, "capture-dir", "it bounds the captures", "capture-max-files", "capture-max-bytes")
	needsFlag(cmd, "nvml", "it loads NVML", "nvml-library")
	needsFlag(cmd, "nvml", "it paces NVML and the --scrape endpoints", "poll-interval")
	needsFlag(cmd, "scrape", "it paces NVML and the --scrape endpoints", "poll-interval")
	needsFlag(cmd, "cluster", "it reaches the cluster --cluster names", "kubeconfig", "cluster-poll-interval")
	return cmd
}

// exporterListening, when set, receives the listening address before the
// snapshot directory's first scan (tests).
var exporterListening func(net.Addr)

// exporterReady, when set, receives the daemon's listening address (tests
// of the signal path, which cannot pass one through Main).
var exporterReady func(net.Addr)

// nvmlOpen, when set, opens NVML instead of nvml.Open (tests).
var nvmlOpen func(libraryPath string) (nvml.Reader, error)

// runExporter checks f (a bad value is a usage error) and serves until ctx
// ends (daemon.Run), logging and ignoring SIGHUP; ready, when set, receives
// the listening address.
func runExporter(ctx context.Context, cmd *cobra.Command, f daemon.Config, stderr io.Writer, ready func(net.Addr)) error {
	if err := checkCapacity(cmd, f.Capacity); err != nil {
		return err
	}
	logger, err := f.Logger(stderr)
	if err == nil {
		err = f.Check()
	}
	if err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	// SIGHUP would end the process (Go's default) with no word in the log:
	// there is nothing to reload, so it is logged and ignored.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				logger.Info("SIGHUP ignored: there is no configuration to reload (restart to change flags; SIGINT or SIGTERM stop)")
			case <-ctx.Done():
				return
			}
		}
	}()
	err = daemon.Run(ctx, f, logger, daemon.Hooks{OpenNVML: nvmlOpen, ConnectCluster: liveConnect, Listening: exporterListening, Ready: ready})
	if errors.Is(err, nvml.ErrNotBuilt) {
		return usageErrorf(cmd, "%v", err)
	}
	return err
}
