package exporter

import (
	"context"
	"log/slog"
	"strings"
	"time"
)

// StuckReporter is background work that can tell when it hangs: Stuck
// returns an error wrapping ErrStuck while it has made no progress for
// longer than its deadline, nil otherwise. SnapshotDir and PolledSource are
// StuckReporters; their Collect fails while they are stuck, so
// gpufrag_source_up says 0, and Serve's /healthz answers 503 "degraded"
// with the reason.
type StuckReporter interface {
	Stuck() error
}

// DefaultWatchdogInterval is how often Serve checks its runners for
// ErrStuck (ServerConfig.WatchdogInterval's default): a tenth of the
// snapshot directory's DefaultStuckAfter, so a stall is logged within 10%
// of its deadline.
const DefaultWatchdogInterval = 12 * time.Second

// stuckReasons returns the Stuck errors of the runners that have one.
func stuckReasons(runners []Runner) []string {
	var out []string
	for _, r := range runners {
		if s, ok := r.(StuckReporter); ok {
			if err := s.Stuck(); err != nil {
				out = append(out, err.Error())
			}
		}
	}
	return out
}

// watchdog checks the runners every interval until ctx ends and logs each
// change: an error line when one gets stuck, an info line when it recovers.
func watchdog(ctx context.Context, runners []Runner, interval time.Duration, log *slog.Logger) {
	var watched []StuckReporter
	for _, r := range runners {
		if s, ok := r.(StuckReporter); ok {
			watched = append(watched, s)
		}
	}
	if len(watched) == 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	stuck := make([]string, len(watched))
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i, s := range watched {
			msg := ""
			if err := s.Stuck(); err != nil {
				msg = err.Error()
			}
			switch {
			case msg != "" && stuck[i] == "":
				log.Error("background source stuck: reported down and /healthz degraded until it moves on", "err", msg)
			case msg == "" && stuck[i] != "":
				log.Info("background source moving again", "was", stuck[i])
			}
			stuck[i] = msg
		}
	}
}

// degradedBody is /healthz's body while some runner is stuck.
func degradedBody(reasons []string) string {
	return "degraded: " + strings.Join(reasons, "\ndegraded: ") + "\n"
}
