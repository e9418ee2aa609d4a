package exporter

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// countingCollector reports how often it was collected.
type countingCollector struct{ n float64 }

var countingDesc = prometheus.NewDesc("gpufrag_test_collections", "Collections so far.", nil, nil)

func (c *countingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- countingDesc }
func (c *countingCollector) Collect(ch chan<- prometheus.Metric) {
	c.n++
	ch <- prometheus.MustNewConstMetric(countingDesc, prometheus.GaugeValue, c.n)
}

func TestThrottle(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	inner := &countingCollector{}
	c := Throttle(inner, time.Second, clock)
	want := func(v float64) {
		t.Helper()
		if got := testutil.ToFloat64(c); got != v {
			t.Errorf("collected value %v, want %v", got, v)
		}
	}
	want(1) // first scrape collects
	want(1) // within the interval: the same metrics again
	clock.Advance(999 * time.Millisecond)
	want(1)
	clock.Advance(time.Millisecond) // one interval after the first collection
	want(2)
	want(2)
	if inner.n != 2 {
		t.Errorf("inner collected %v times, want 2", inner.n)
	}
}
