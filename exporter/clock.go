package exporter

import (
	"context"
	"sync"
	"time"
)

// Clock is the time the daemon reads: timestamps, capture file names and
// the rescan and poll intervals. Tests inject a ManualClock, so rescans and
// names are deterministic.
type Clock interface {
	Now() time.Time
	// NewTicker returns a channel that receives every d, and its stop.
	NewTicker(d time.Duration) (<-chan time.Time, func())
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTicker wraps time.NewTicker.
func (SystemClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// ManualClock is a Clock that moves only when told: Advance moves Now and
// fires every ticker whose period has elapsed (at most one tick per ticker
// per Advance, like a ticker that drops ticks for slow receivers).
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*manualTicker
	created chan struct{}
}

type manualTicker struct {
	c       chan time.Time
	period  time.Duration
	next    time.Time
	stopped bool
}

// NewManualClock returns a ManualClock at t.
func NewManualClock(t time.Time) *ManualClock {
	return &ManualClock{now: t, created: make(chan struct{}, 64)}
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTicker registers a ticker of period d.
func (c *ManualClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	t := &manualTicker{c: make(chan time.Time, 1), period: d, next: c.now.Add(d)}
	c.tickers = append(c.tickers, t)
	c.mu.Unlock()
	select {
	case c.created <- struct{}{}:
	default:
	}
	return t.c, func() {
		c.mu.Lock()
		t.stopped = true
		c.mu.Unlock()
	}
}

// WaitTickers blocks until n tickers were created in total, or ctx ends.
func (c *ManualClock) WaitTickers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		have := len(c.tickers)
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-c.created:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Advance moves the clock by d and fires due tickers.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.tickers {
		if t.stopped || t.period <= 0 || c.now.Before(t.next) {
			continue
		}
		for !c.now.Before(t.next) {
			t.next = t.next.Add(t.period)
		}
		select {
		case t.c <- c.now:
		default:
		}
	}
}
