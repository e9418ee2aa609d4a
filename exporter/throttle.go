package exporter

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Throttle wraps c so that it is collected at most once per interval:
// scrapes in between re-send the metrics of the last collection (the
// metrics client_golang's own collectors produce are immutable values, so
// re-sending them is safe). It is meant for collectors whose reading costs
// more than the rest of a scrape and whose figures need no sub-interval
// freshness: the process collector reads several /proc files, the whole
// network statistics file included, which was about 40% of a daemon scrape
// (BenchmarkHTTPScrapeDaemon). clock nil means SystemClock.
func Throttle(c prometheus.Collector, interval time.Duration, clock Clock) prometheus.Collector {
	if clock == nil {
		clock = SystemClock{}
	}
	return &throttled{c: c, interval: interval, clock: clock}
}

type throttled struct {
	c        prometheus.Collector
	interval time.Duration
	clock    Clock

	mu      sync.Mutex
	last    time.Time
	metrics []prometheus.Metric
	done    bool // collected at least once
}

// Describe forwards to the wrapped collector.
func (t *throttled) Describe(ch chan<- *prometheus.Desc) { t.c.Describe(ch) }

// Collect sends the last collection's metrics, collecting again first when
// interval has passed since it.
func (t *throttled) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now := t.clock.Now(); !t.done || now.Sub(t.last) >= t.interval {
		in := make(chan prometheus.Metric, 64)
		go func() {
			t.c.Collect(in)
			close(in)
		}()
		t.metrics = t.metrics[:0]
		for m := range in {
			t.metrics = append(t.metrics, m)
		}
		t.last, t.done = now, true
	}
	for _, m := range t.metrics {
		ch <- m
	}
}
