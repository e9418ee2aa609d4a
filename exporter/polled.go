package exporter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Runner is background work the daemon runs for as long as it serves:
// snapshot-directory rescans and polled sources. Run returns when ctx ends.
type Runner interface {
	Run(ctx context.Context) error
}

// PolledSource collects a slow source (an engine's /metrics over HTTP,
// NVML, the Kubernetes API) in the background every interval and serves
// the last result from memory, so a scrape never waits for it. Run polls
// at start and then on every tick of its clock; Poll polls once (tests).
// Collect fails while no poll has completed, when the last poll failed,
// when the last success is older than three intervals (a poller that
// stopped), and while a poll has been running for longer than its timeout
// plus one interval (a source that ignores its context: Stuck reports it),
// so gpufrag_source_up tells the truth.
type PolledSource struct {
	src      ContextSource
	interval time.Duration
	timeout  time.Duration
	clock    Clock

	mu      sync.Mutex
	samples []Sample
	err     error
	last    time.Time // of the last success
	polled  bool
	version uint64 // bumped by every successful poll
	// Polls in flight, and when the oldest of them started (Stuck).
	inFlight  int
	pollStart time.Time
	hooks     []func() // called after each poll (Collector.Gatherer)
}

// NewPolledSource returns a PolledSource over src, polled every interval
// with timeout per poll (0: interval). clock nil means SystemClock.
func NewPolledSource(src ContextSource, interval, timeout time.Duration, clock Clock) (*PolledSource, error) {
	if src == nil || interval <= 0 || timeout < 0 {
		return nil, fmt.Errorf("exporter: polled source needs a source and a positive interval (got %v)", interval)
	}
	if timeout == 0 {
		timeout = interval
	}
	if clock == nil {
		clock = SystemClock{}
	}
	return &PolledSource{src: src, interval: interval, timeout: timeout, clock: clock}, nil
}

// Name returns the wrapped source's name.
func (p *PolledSource) Name() string { return p.src.Name() }

var errNotPolled = errors.New("exporter: not collected yet")

// Collect returns the samples of the last successful poll.
func (p *PolledSource) Collect() ([]Sample, error) {
	s, _, err := p.CollectVersioned()
	return s, err
}

// CollectVersioned is Collect with the poll's version (VersionedSource).
func (p *PolledSource) CollectVersioned() ([]Sample, uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.stateLocked(); err != nil {
		return nil, 0, err
	}
	return slices.Clone(p.samples), p.version, nil
}

// stateVersion is CollectVersioned without the samples (stateVersioner).
func (p *PolledSource) stateVersion() (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.stateLocked(); err != nil {
		return 0, err
	}
	return p.version, nil
}

// stateLocked is why the last poll's samples cannot be served, or nil.
func (p *PolledSource) stateLocked() error {
	if err := p.stuckLocked(); err != nil {
		return err
	}
	switch {
	case !p.polled:
		return errNotPolled
	case p.err != nil:
		return p.err
	case p.clock.Now().Sub(p.last) > 3*p.interval:
		return fmt.Errorf("exporter: source %q: last success at %s is stale", p.Name(), p.last.UTC().Format(time.RFC3339))
	}
	return nil
}

// Stuck returns an error wrapping ErrStuck while a poll has been running
// for longer than the poll timeout plus one interval: the source ignores
// its context's deadline (a driver or network call that hangs).
func (p *PolledSource) Stuck() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stuckLocked()
}

func (p *PolledSource) stuckLocked() error {
	if p.inFlight == 0 {
		return nil
	}
	limit := p.timeout + p.interval
	if d := p.clock.Now().Sub(p.pollStart); d > limit {
		return fmt.Errorf("%w: source %q: a poll has been running for %v (since %s), past its timeout %v plus one interval",
			ErrStuck, p.Name(), d.Round(time.Second), p.pollStart.UTC().Format(time.RFC3339), p.timeout)
	}
	return nil
}

// Poll collects the source once, bounded by the poll timeout, and stores
// the result.
func (p *PolledSource) Poll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	p.mu.Lock()
	if p.inFlight == 0 {
		p.pollStart = p.clock.Now()
	}
	p.inFlight++
	p.mu.Unlock()
	samples, err := safeCollect(p.Name(), func() ([]Sample, error) { return p.src.CollectContext(ctx) })
	p.mu.Lock()
	p.inFlight--
	p.polled = true
	p.err = err
	if err == nil {
		p.samples, p.last = samples, p.clock.Now()
		p.version++
	}
	hooks := p.hooks
	p.mu.Unlock()
	for _, f := range hooks {
		f()
	}
	return err
}

// onChange adds a hook called after each poll, successful or not
// (notifier).
func (p *PolledSource) onChange(f func()) {
	p.mu.Lock()
	p.hooks = append(p.hooks, f)
	p.mu.Unlock()
}

// Run polls at once and then every interval until ctx ends.
func (p *PolledSource) Run(ctx context.Context) error {
	tick, stop := p.clock.NewTicker(p.interval)
	defer stop()
	for {
		_ = p.Poll(ctx) // the error is reported through Collect
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		}
	}
}
