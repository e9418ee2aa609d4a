//go:build unix

package exporter

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The daemon's rates (cmd/gpufrag/internal/cli/exporter.go's defaults) and
// Prometheus' usual scrape interval.
const (
	benchRescan = 10 * time.Second // --rescan
	benchPoll   = 15 * time.Second // --poll-interval
	benchScrape = 15 * time.Second // Prometheus scrape_interval, per replica
	// benchPhase keeps the scrapes off the instants of the rescans and
	// polls (multiples of 5 s), as independent clocks are.
	benchPhase = 370 * time.Millisecond
)

// BenchmarkScrapeInterval measures /metrics at a realistic scrape
// interval: `replicas` Prometheus servers each scrape every 15 s (phases
// spread evenly over the interval) while, on the same virtual clock, the
// snapshot directory (four snapshots) is rescanned every 10 s and 128
// polled sources (8 GPUs × 16 instances of fragmented caching allocators,
// 13 series each) are polled every 15 s, all at the same instants, as the
// daemon's runners started together are. The daemon's Go and process
// collectors' families are served beside (GathererWithRuntime), under
// the daemon's collector goal (DaemonGC; GOGC=100 in the environment
// measures Go's default).
//
// It decided the daemon's caching (docs/benchmarks.md, "Benchmarks:
// package exporter"). Any cache of the scrape path hits only when nothing
// changed since the previous scrape, which with one replica never happens
// (a rescan falls between any two scrapes 15 s apart), and the scrape
// after a change, which sets the p99, pays the full cost either way. The
// Collector's per-version cache is kept (with two or four replicas it
// saves 40-50% of a scrape's CPU); a cache of the encoded families and a
// throttle of the runtime collectors were removed (they saved nothing with
// one or two replicas and about 1 ms a scrape with four).
//
// Only the scrapes are timed (the rescans and polls between them run with
// the timer stopped). Reported per scrape: cpu-ms (the process's user and
// system CPU over the scrape: client, server and the garbage collection it
// causes; a collection is forced before each scrape, so that the garbage
// of the polls between scrapes is not counted in them), p50-ms and p99-ms
// (wall), and changed, the share of scrapes that found some source changed
// since the previous scrape. Run with
//
//	go test ./exporter -run '^$' -bench ScrapeInterval -benchtime 400x -benchmem
func BenchmarkScrapeInterval(b *testing.B) {
	for _, replicas := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) { benchScrapeInterval(b, replicas) })
	}
}

func benchScrapeInterval(b *testing.B, replicas int) {
	defer DaemonGC()()
	clock := NewManualClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()

	dir := b.TempDir()
	for i, name := range []string{"replay.pickle", "modern_p4.pickle", "mid.pickle", "modern_p5.pickle"} {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("vllm-%d__m__dump.pickle", i)), snapFixture(b, name), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	snaps, err := NewSnapshotDir(SnapshotDirConfig{Dir: dir, Registerer: reg, Clock: clock, Rescan: benchRescan})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := snaps.Rescan(ctx); err != nil {
		b.Fatal(err)
	}
	var polled []*PolledSource
	srcs := []Source{snaps}
	for g := range 8 {
		for i := range 16 {
			name := fmt.Sprintf("engine-%d-%d", g, i)
			live := NewAllocatorSource(name,
				Labels{GPU: fmt.Sprint(g), Instance: fmt.Sprint(i), Pool: "caching"}, fragmentedCaching(b), nil)
			p, err := NewPolledSource(FuncContextSource{SourceName: name, Fn: func(context.Context) ([]Sample, error) {
				return live.Collect()
			}}, benchPoll, 0, clock)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Poll(ctx); err != nil {
				b.Fatal(err)
			}
			polled = append(polled, p)
			srcs = append(srcs, p)
		}
	}
	g := daemonGathererRuntime(b, reg, Options{SourceTimeout: 2 * time.Second, MaxSeries: 20000}, srcs...)
	stop, url := benchServer(b, ServerConfig{Gatherer: g})
	defer stop()
	client := &http.Client{}

	start := clock.Now()
	nextRescan, nextPoll := start.Add(benchRescan), start.Add(benchPoll)
	// due runs the rescans and polls due up to t, in time order, and tells
	// whether there were any.
	due := func(t time.Time) bool {
		ran := false
		for {
			next := nextRescan
			if nextPoll.Before(next) {
				next = nextPoll
			}
			if next.After(t) {
				return ran
			}
			clock.Advance(next.Sub(clock.Now()))
			ran = true
			if next.Equal(nextRescan) {
				if err := snaps.Rescan(ctx); err != nil {
					b.Fatal(err)
				}
				nextRescan = nextRescan.Add(benchRescan)
			}
			if next.Equal(nextPoll) {
				for _, p := range polled {
					if err := p.Poll(ctx); err != nil {
						b.Fatal(err)
					}
				}
				nextPoll = nextPoll.Add(benchPoll)
			}
		}
	}
	var lat []time.Duration
	var cpu time.Duration
	changed := 0
	scrapes := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		k, r := scrapes/replicas, scrapes%replicas
		at := start.Add(time.Duration(k)*benchScrape + time.Duration(r)*benchScrape/time.Duration(replicas) + benchPhase)
		if due(at) {
			changed++
		}
		// What the polls and rescans prepare runs before the scrape, as
		// it does in the daemon (the scrapes fall 370 ms or more after them).
		g.(merged).c.settle()
		clock.Advance(at.Sub(clock.Now()))
		scrapes++
		// The garbage of the polls and rescans is collected here, untimed:
		// the scrape's CPU is its own (its allocations show in B/op).
		runtime.GC()
		b.StartTimer()

		cpu0, t0 := processCPU(b), time.Now()
		resp, err := client.Get(url + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		lat = append(lat, time.Since(t0))
		cpu += processCPU(b) - cpu0
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(scrapes), "cpu-ms")
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(changed)/float64(scrapes), "changed")
}

// processCPU is the user plus system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPollRound measures one round of polls of the 8 × 16 polled
// sources, one after the other, in the daemon's wiring after a first
// text-format scrape, with what the polls prepare for the scrapes, waited
// for: the scrape path's CPU between scrapes, once per poll interval
// (15 s), under the daemon's collector goal (DaemonGC). Reported: cpu-ms,
// the process's CPU over the round (the preparations run on a goroutine
// of their own). Run with
//
//	go test ./exporter -run '^$' -bench PollRound -benchtime 50x
func BenchmarkPollRound(b *testing.B) {
	defer DaemonGC()()
	srcs := polledFleet(b, 8, 16)
	g := daemonGatherer(b, prometheus.NewRegistry(), Options{SourceTimeout: 2 * time.Second}, srcs...)
	h := Handler(ServerConfig{Gatherer: g}, nil)
	h.ServeHTTP(discardResponse{http.Header{}}, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	ctx := context.Background()
	var cpu time.Duration
	rounds := 0
	for b.Loop() {
		cpu0 := processCPU(b)
		for _, s := range srcs {
			if err := s.(*PolledSource).Poll(ctx); err != nil {
				b.Fatal(err)
			}
		}
		settleGatherer(g)
		cpu += processCPU(b) - cpu0
		rounds++
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(rounds), "cpu-ms")
}
