package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// handlerFleet is three polled sources whose samples and failures the test
// sets, on a manual clock: source "a" (memory and KV), "b" (memory, can
// fail), "c" (a GPU device, whose UUID and name need escaping in text).
type handlerFleet struct {
	clock *ManualClock
	srcs  map[string]*PolledSource
	mu    sync.Mutex
	value map[string]float64
	fail  map[string]bool
	dup   bool // b exports a's label set
}

const fleetInterval = time.Minute

func newHandlerFleet(t *testing.T) *handlerFleet {
	t.Helper()
	f := &handlerFleet{
		clock: NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		srcs:  make(map[string]*PolledSource),
		value: map[string]float64{"a": 1, "b": 2, "c": 3},
		fail:  make(map[string]bool),
	}
	for _, name := range []string{"a", "b", "c"} {
		p, err := NewPolledSource(FuncContextSource{SourceName: name, Fn: func(context.Context) ([]Sample, error) {
			return f.samples(name)
		}}, fleetInterval, 0, f.clock)
		if err != nil {
			t.Fatal(err)
		}
		f.srcs[name] = p
	}
	return f
}

func (f *handlerFleet) samples(name string) ([]Sample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail[name] {
		return nil, errors.New("unreachable")
	}
	v := f.value[name]
	switch name {
	case "a":
		return []Sample{{
			Labels: Labels{GPU: "0", Instance: "vllm-0", Model: `m"1\`, Pool: "caching"},
			Memory: &Memory{OOMs: int64(v)},
			KV:     &KV{Blocks: 100, BlockSize: 16, Free: int(v), Usage: v / 99},
		}}, nil
	case "b":
		l := Labels{GPU: "1", Instance: "vllm-1", Pool: "caching"}
		if f.dup {
			l = Labels{GPU: "0", Instance: "vllm-0", Model: `m"1\`, Pool: "caching"}
		}
		return []Sample{{Labels: l, Memory: &Memory{OOMs: int64(v)}}}, nil
	default:
		return []Sample{{GPU: &GPUDevice{Index: 2, UUID: "GPU-ü\n", Name: "H200 \"SXM\"",
			TotalBytes: 141 << 30, UsedBytes: uint64(v) << 30, FreeBytes: (141 - uint64(v)) << 30,
			Processes: []GPUProcess{{PID: 42, UsedBytes: uint64(v) << 20}}}}}, nil
	}
}

func (f *handlerFleet) set(name string, value float64, fail bool) {
	f.mu.Lock()
	f.value[name], f.fail[name] = value, fail
	f.mu.Unlock()
}

func (f *handlerFleet) poll(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		_ = f.srcs[n].Poll(context.Background()) // a failure is the point of some steps
	}
}

func (f *handlerFleet) sources() []Source {
	return []Source{f.srcs["a"], f.srcs["b"], f.srcs["c"]}
}

// handlerPair returns the handler under test (the Collector given
// separately, with extra families in the Gatherer) and promhttp over one
// registry holding the same Collector and extra families.
func handlerPair(t *testing.T, f *handlerFleet, openMetrics, gz bool) (*cachedMetricsHandler, http.Handler) {
	t.Helper()
	c, err := NewWithOptions(nil, Options{MaxSeries: 100}, f.sources()...)
	if err != nil {
		t.Fatal(err)
	}
	extra := []prometheus.Collector{
		// Names before, between and after the Collector's families.
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "aaa_first", Help: "first"}),
		prometheus.NewCounter(prometheus.CounterOpts{Name: "gpufrag_snapshot_files", Help: "between"}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "zzz_last", Help: "last"}, func() float64 { return 7 }),
	}
	runtime, ref := prometheus.NewRegistry(), prometheus.NewRegistry()
	runtime.MustRegister(extra...)
	ref.MustRegister(extra...)
	ref.MustRegister(c)
	cfg := ServerConfig{Gatherer: runtime, Collector: c, OpenMetrics: openMetrics, Gzip: gz}
	cfg.defaults()
	h, ok := metricsHandler(cfg).(*cachedMetricsHandler)
	if !ok {
		t.Fatalf("metricsHandler: %T, want the cached handler", metricsHandler(cfg))
	}
	return h, promhttp.HandlerFor(ref, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError, DisableCompression: !gz, EnableOpenMetrics: openMetrics,
	})
}

var acceptHeaders = []string{
	"",
	"text/plain;version=0.0.4",
	"text/plain;version=1.0.0;escaping=allow-utf-8",
	"text/plain;version=1.0.0;escaping=values",
	"text/plain;version=1.0.0;escaping=dots",
	"application/openmetrics-text;version=1.0.0;q=0.9,text/plain;q=0.5",
	"application/openmetrics-text;version=0.0.1;escaping=underscores",
	"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8",
	"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
	"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=values",
	"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text",
}

// acceptEncodings are Accept-Encoding headers: the first five are settled
// by the cached handler, the others go to promhttp.
var acceptEncodings = [][]string{
	nil, {"gzip"}, {"gzip, deflate, br"}, {"identity, gzip"}, {"br", "gzip"},
	{"gzip;q=0.5, identity;q=0.1"}, {"*"}, {"gzip,,identity"}, {"zstd"}, {"GZIP"},
}

func scrapeHandler(h http.Handler, accept, query string, encoding ...string) (int, http.Header, []byte) {
	req := httptest.NewRequest(http.MethodGet, "/metrics"+query, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for _, e := range encoding {
		req.Header.Add("Accept-Encoding", e)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Header(), rec.Body.Bytes()
}

// compareHandlers scrapes both handlers with every Accept header and fails
// on any difference in status, Content-Type, Vary or body. A cached handler
// must build at most one snapshot for all those scrapes (the state does not
// change meanwhile).
func compareHandlers(t *testing.T, step string, got, want http.Handler, queries ...string) {
	t.Helper()
	if h, ok := got.(*cachedMetricsHandler); ok {
		before := h.builds
		defer func() {
			if n := h.builds - before; n > 1 {
				t.Errorf("%s: %d snapshots built for one state", step, n)
			}
		}()
	}
	if len(queries) == 0 {
		queries = []string{""}
	}
	encodings := [][]string{nil}
	if h, ok := got.(*cachedMetricsHandler); ok && h.gzip {
		encodings = acceptEncodings
	}
	for _, q := range queries {
		for _, accept := range acceptHeaders {
			for _, ae := range encodings {
				gc, gh, gb := scrapeHandler(got, accept, q, ae...)
				wc, wh, wb := scrapeHandler(want, accept, q, ae...)
				if gc != wc || gh.Get("Content-Type") != wh.Get("Content-Type") ||
					gh.Get("Content-Encoding") != wh.Get("Content-Encoding") ||
					strings.Join(gh.Values("Vary"), ",") != strings.Join(wh.Values("Vary"), ",") {
					t.Errorf("%s, Accept %q%s, Accept-Encoding %q: status %d %q %q %q, promhttp %d %q %q %q", step, accept, q, ae,
						gc, gh.Get("Content-Type"), gh.Get("Content-Encoding"), gh.Values("Vary"),
						wc, wh.Get("Content-Type"), wh.Get("Content-Encoding"), wh.Values("Vary"))
				}
				if !bytes.Equal(gb, wb) {
					t.Errorf("%s, Accept %q%s, Accept-Encoding %q: body differs from promhttp's\n--- got\n%q\n--- promhttp\n%q", step, accept, q, ae, gb, wb)
				}
			}
		}
	}
}

func TestCachedMetricsHandlerMatchesPromhttp(t *testing.T) {
	for _, tc := range []struct{ om, gz bool }{{false, false}, {true, false}, {false, true}} {
		t.Run(fmt.Sprintf("openmetrics=%t,gzip=%t", tc.om, tc.gz), func(t *testing.T) {
			f := newHandlerFleet(t)
			h, ref := handlerPair(t, f, tc.om, tc.gz)
			compareHandlers(t, "never polled", h, ref)
			f.poll(t, "a", "b", "c")
			compareHandlers(t, "polled", h, ref, "", "?name[]=gpufrag_source_up&name[]=zzz_last&name[]=gpufrag_kv_blocks")
			builds := h.builds
			compareHandlers(t, "unchanged", h, ref)
			if h.builds != builds {
				t.Errorf("unchanged state: %d snapshots built, want none", h.builds-builds)
			}
			f.set("a", 5, false)
			f.poll(t, "a")
			compareHandlers(t, "a changed", h, ref)
			f.set("b", 6, true)
			f.poll(t, "b")
			compareHandlers(t, "b down", h, ref)
			if body := scrapeBody(t, h); !strings.Contains(body, `gpufrag_source_up{source="b"} 0`) {
				t.Errorf("b down: body lacks gpufrag_source_up 0:\n%s", body)
			}
			f.set("b", 7, false)
			f.poll(t, "b")
			compareHandlers(t, "b up again", h, ref)
			f.clock.Advance(3*fleetInterval + time.Second)
			compareHandlers(t, "all stale", h, ref)
			if body := scrapeBody(t, h); strings.Contains(body, `gpufrag_source_up{source="a"} 1`) {
				t.Errorf("stale: a still up:\n%s", body)
			}
			f.poll(t, "c")
			compareHandlers(t, "c fresh, a and b stale", h, ref)
			f.poll(t, "a", "b")
			f.mu.Lock()
			f.dup = true
			f.mu.Unlock()
			f.poll(t, "b")
			compareHandlers(t, "b repeats a's labels", h, ref)
		})
	}
}

func scrapeBody(t *testing.T, h http.Handler) string {
	t.Helper()
	code, _, body := scrapeHandler(h, "", "")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	return string(body)
}

// Scrapes running while sources change each get promhttp's body for some
// combination of the sources' states (a collection reads the sources one
// after the other, so with or without the cache it can see a before and b
// after a poll), never a torn or mixed encoding, and once the polls stop
// the body is the final state's.
func TestCachedMetricsHandlerConcurrent(t *testing.T) {
	const steps = 40
	step := func(f *handlerFleet, k int) {
		if k%2 == 0 {
			f.set("a", float64(k), false)
			f.poll(t, "a")
			return
		}
		f.set("b", float64(k), k%4 == 1)
		f.poll(t, "b")
	}
	type bState struct {
		v    float64
		fail bool
	}
	aStates, bStates := []float64{1}, []bState{{2, false}}
	for k := range steps {
		if k%2 == 0 {
			aStates = append(aStates, float64(k))
		} else {
			bStates = append(bStates, bState{float64(k), k%4 == 1})
		}
	}
	f := newHandlerFleet(t)
	_, ref := handlerPair(t, f, false, false)
	f.poll(t, "c")
	want := make(map[string]bool)
	var final string
	for _, av := range aStates {
		for _, bs := range bStates {
			f.set("a", av, false)
			f.set("b", bs.v, bs.fail)
			f.poll(t, "a", "b")
			final = scrapeBody(t, ref)
			want[final] = true
		}
	}

	f = newHandlerFleet(t)
	h, _ := handlerPair(t, f, false, false)
	f.poll(t, "a", "b", "c")
	var wg sync.WaitGroup
	done := make(chan struct{})
	var mu sync.Mutex
	var bad []string
	scrapes := 0
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				code, _, body := scrapeHandler(h, "", "")
				mu.Lock()
				scrapes++
				if code != http.StatusOK || !want[string(body)] {
					bad = append(bad, fmt.Sprintf("status %d:\n%s", code, body))
				}
				mu.Unlock()
			}
		})
	}
	for k := range steps {
		step(f, k)
		time.Sleep(time.Millisecond)
	}
	close(done)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d of %d scrapes returned a body of no state; first:\n%s", len(bad), scrapes, bad[0])
	}
	if got := scrapeBody(t, h); got != final {
		t.Fatalf("final body is not the final state's:\n%s\n--- want\n%s", got, final)
	}
}

// The in-flight cap answers 503 with promhttp's message.
func TestCachedMetricsHandlerInFlight(t *testing.T) {
	f := newHandlerFleet(t)
	f.poll(t, "a", "b", "c")
	c, err := NewWithOptions(nil, Options{}, f.sources()...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ServerConfig{Gatherer: prometheus.NewRegistry(), Collector: c, MaxRequestsInFlight: 1}
	cfg.defaults()
	h := metricsHandler(cfg).(*cachedMetricsHandler)
	h.inFlight <- struct{}{}
	code, _, body := scrapeHandler(h, "", "")
	if code != http.StatusServiceUnavailable || string(body) != "Limit of concurrent requests reached (1), try again later.\n" {
		t.Errorf("full: %d %q", code, body)
	}
	<-h.inFlight
	if code, _, _ := scrapeHandler(h, "", ""); code != http.StatusOK {
		t.Errorf("after release: %d", code)
	}
}

// A source that is not versioned and a Collector already in the Gatherer
// take plain promhttp, with the same bodies.
func TestMetricsHandlerFallbacks(t *testing.T) {
	f := newHandlerFleet(t)
	f.poll(t, "a", "b", "c")
	live := FuncSource{SourceName: "live", Fn: func() ([]Sample, error) {
		return []Sample{{Labels: Labels{GPU: "9"}, Memory: &Memory{}}}, nil
	}}
	c, err := NewWithOptions(nil, Options{}, append(f.sources(), live)...)
	if err != nil {
		t.Fatal(err)
	}
	ref := prometheus.NewRegistry()
	ref.MustRegister(c)
	cfg := ServerConfig{Gatherer: prometheus.NewRegistry(), Collector: c}
	cfg.defaults()
	h := metricsHandler(cfg).(*cachedMetricsHandler)
	compareHandlers(t, "unversioned source", h, promhttp.HandlerFor(ref, promhttp.HandlerOpts{DisableCompression: true}))
	if h.builds != 0 {
		t.Errorf("unversioned source: %d snapshots built", h.builds)
	}

	reg := prometheus.NewRegistry()
	c2, err := NewWithOptions(reg, Options{}, f.sources()...)
	if err != nil {
		t.Fatal(err)
	}
	cfg = ServerConfig{Gatherer: reg, Collector: c2}
	cfg.defaults()
	if _, ok := metricsHandler(cfg).(*cachedMetricsHandler); ok {
		t.Error("collector registered with the Gatherer: cached handler")
	}
	compareHandlers(t, "registered with the Gatherer", metricsHandler(cfg), promhttp.HandlerFor(reg, promhttp.HandlerOpts{DisableCompression: true}))
}

// Through Serve, with the Go collector in the Gatherer, the
// gpufrag families arrive between them and the body parses.
func TestServeCollectorField(t *testing.T) {
	f := newHandlerFleet(t)
	f.poll(t, "a", "b", "c")
	c, err := NewWithOptions(nil, Options{}, f.sources()...)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGoCollector())
	stop, url := benchServer(t, ServerConfig{Gatherer: reg, Collector: c})
	defer stop()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	gf, gpu := strings.Index(s, "# HELP go_goroutines"), strings.Index(s, `gpufrag_source_up{source="a"} 1`)
	if resp.StatusCode != 200 || gf < 0 || gpu < 0 || gpu < gf {
		t.Fatalf("status %d, go_goroutines at %d, gpufrag_source_up at %d:\n%s", resp.StatusCode, gf, gpu, s)
	}
}

func TestPlainEncoding(t *testing.T) {
	for _, tc := range []struct {
		vs          []string
		useGzip, ok bool
	}{
		{nil, false, true},
		{[]string{""}, false, true},
		{[]string{"gzip"}, true, true},
		{[]string{"gzip, deflate, br"}, true, true},
		{[]string{"br", "gzip"}, true, true},
		{[]string{"identity, gzip"}, false, true},
		{[]string{"deflate"}, false, true},
		{[]string{"gzip;q=0.5"}, false, false},
		{[]string{"*"}, false, false},
		{[]string{"zstd, gzip"}, false, false},
		{[]string{"gzip,,identity"}, false, false},
		{[]string{"GZIP"}, false, false},
	} {
		g, ok := plainEncoding(tc.vs)
		if g != tc.useGzip || ok != tc.ok {
			t.Errorf("plainEncoding(%q) = %t, %t; want %t, %t", tc.vs, g, ok, tc.useGzip, tc.ok)
		}
	}
}

// FuzzPlainEncoding checks plainEncoding against promhttp's own
// negotiation: whenever it settles a header, promhttp picks the same coding.
func FuzzPlainEncoding(f *testing.F) {
	for _, s := range []string{"gzip", "identity, gzip", "gzip, deflate, br", "br", "gzip;q=0", "*", "gzip,,identity", ""} {
		f.Add(s)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"}))
	ref := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	f.Fuzz(func(t *testing.T, v string) {
		useGzip, ok := plainEncoding([]string{v})
		if !ok {
			return
		}
		_, h, _ := scrapeHandler(ref, "", "", v)
		if got := h.Get("Content-Encoding") == "gzip"; got != useGzip {
			t.Errorf("Accept-Encoding %q: plainEncoding gzip=%t, promhttp Content-Encoding %q", v, useGzip, h.Get("Content-Encoding"))
		}
	})
}
