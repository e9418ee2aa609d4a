package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ServerConfig configures Serve. Zero durations take the defaults below.
type ServerConfig struct {
	// Gatherer is what /metrics exposes (a *prometheus.Registry built by the
	// caller, or Collector.Gatherer's over one; never the global default
	// registry).
	Gatherer prometheus.Gatherer
	// OpenMetrics offers the OpenMetrics text format to scrapers that ask
	// for it (promhttp.HandlerOpts.EnableOpenMetrics).
	OpenMetrics bool
	// Runners run in the background while the server serves (rescans,
	// polled sources) and are stopped before Serve returns. Those that are
	// StuckReporters are watched: /healthz answers 503 "degraded: REASON"
	// while one is stuck, and each change is logged.
	Runners []Runner
	// WatchdogInterval is how often Serve checks the runners for a stall
	// to log (default DefaultWatchdogInterval); /healthz checks on each
	// request.
	WatchdogInterval time.Duration
	// Snapshots, when set, serves /snapshots/ (a *Capturer).
	Snapshots http.Handler
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger

	ReadHeaderTimeout time.Duration // default 5s
	ReadTimeout       time.Duration // default 10s
	WriteTimeout      time.Duration // default 30s
	IdleTimeout       time.Duration // default 60s
	MaxHeaderBytes    int           // default 16 KiB
	ShutdownTimeout   time.Duration // default 10s
	// MaxRequestsInFlight caps concurrent /metrics requests (default 8);
	// more are answered 503.
	MaxRequestsInFlight int
	// Gzip compresses /metrics when the scraper accepts it. Off by default:
	// on loopback or inside a cluster the bytes saved are cheap and gzip
	// was about a third of a scrape's CPU (BenchmarkHTTPScrape).
	Gzip bool
}

func (c *ServerConfig) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ReadHeaderTimeout, 5*time.Second)
	def(&c.ReadTimeout, 10*time.Second)
	def(&c.WriteTimeout, 30*time.Second)
	def(&c.IdleTimeout, 60*time.Second)
	def(&c.ShutdownTimeout, 10*time.Second)
	def(&c.WatchdogInterval, DefaultWatchdogInterval)
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = 16 << 10
	}
	if c.MaxRequestsInFlight <= 0 {
		c.MaxRequestsInFlight = 8
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Handler returns the daemon's HTTP routes: /metrics, /healthz (200 "ok"
// while healthy() is true and no runner of cfg.Runners is stuck; 503
// "shutting down", or 503 "degraded: REASON" naming each stuck runner) and,
// when cfg.Snapshots is set, /snapshots/.
func Handler(cfg ServerConfig, healthy func() bool) http.Handler {
	cfg.defaults()
	mux := http.NewServeMux()
	mux.Handle("/metrics", metricsHandler(cfg))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if healthy != nil && !healthy() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "shutting down\n")
			return
		}
		if reasons := stuckReasons(cfg.Runners); len(reasons) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, degradedBody(reasons))
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	if cfg.Snapshots != nil {
		mux.Handle("/snapshots/", http.StripPrefix("/snapshots/", cfg.Snapshots))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<html><head><title>gpufrag exporter</title></head><body>`+
			`<h1>gpufrag exporter</h1><p><a href="/metrics">/metrics</a> <a href="/healthz">/healthz</a>`+
			` <a href="/snapshots/">/snapshots/</a></p></body></html>`+"\n")
	})
	return mux
}

// metricsHandler returns /metrics' handler for cfg (defaults applied):
// for a Collector.Gatherer, preparedHandler, which writes the Collector's
// families as encoded when a source changed and encodes only the
// registry's at the scrape (docs/benchmarks.md, "Issue 27, third round");
// for any other Gatherer, promhttp's handler, gathering and encoding
// everything on each scrape.
func metricsHandler(cfg ServerConfig) http.Handler {
	g := cfg.Gatherer
	if g == nil {
		g = prometheus.NewRegistry()
	}
	opts := promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelError),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: cfg.MaxRequestsInFlight,
		DisableCompression:  !cfg.Gzip,
		EnableOpenMetrics:   cfg.OpenMetrics,
	}
	if m, ok := g.(merged); ok {
		return newPreparedHandler(m, opts)
	}
	return promhttp.HandlerFor(g, opts)
}

// Serve serves cfg on ln until ctx ends, running cfg.Runners meanwhile,
// then shuts down gracefully: /healthz turns 503, in-flight requests get
// up to cfg.ShutdownTimeout, the runners are stopped and waited for. It
// returns nil after a shutdown caused by ctx, or the server's error.
func Serve(ctx context.Context, ln net.Listener, cfg ServerConfig) error {
	if cfg.Gatherer == nil {
		return errors.New("exporter: ServerConfig.Gatherer is nil")
	}
	cfg.defaults()
	var serving atomic.Bool
	serving.Store(true)
	srv := &http.Server{
		Handler:           Handler(cfg, serving.Load),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	runCtx, stopRunners := context.WithCancel(ctx)
	defer stopRunners()
	var wg sync.WaitGroup
	wg.Go(func() { watchdog(runCtx, cfg.Runners, cfg.WatchdogInterval, cfg.Logger) })
	for _, r := range cfg.Runners {
		wg.Go(func() {
			if err := r.Run(runCtx); err != nil {
				cfg.Logger.Error("background runner stopped", "err", err.Error())
			}
		})
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	cfg.Logger.Info("serving", "addr", ln.Addr().String())

	var err error
	select {
	case err = <-errc: // the listener failed
		serving.Store(false)
		stopRunners()
		wg.Wait()
		return fmt.Errorf("exporter: serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	serving.Store(false)
	cfg.Logger.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		err = fmt.Errorf("exporter: shutdown: %w", serr)
		_ = srv.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = fmt.Errorf("exporter: serve: %w", serr)
	}
	stopRunners()
	wg.Wait()
	cfg.Logger.Info("stopped")
	return err
}
