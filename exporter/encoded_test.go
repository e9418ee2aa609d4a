package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpufrag/gpufrag/frag"
)

// The Accept and Accept-Encoding headers the handlers are compared on:
// what Prometheus (3.x defaults), promtool, curl and Go's client send, a
// protobuf scraper, the escaping schemes, and odd ones.
var (
	testAccepts = []string{
		"",
		"*/*",
		"text/plain",
		"text/plain;version=0.0.4",
		"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1",
		"application/openmetrics-text;version=0.0.1",
		"application/openmetrics-text;version=1.0.0;escaping=underscores",
		"text/plain;version=1.0.0;escaping=values",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text",
		"application/json",
	}
	testEncodings = []string{"", "gzip", "identity", "gzip, identity", "gzip;q=0", "*;q=0", "br", "zstd,gzip;q=0.5"}
)

// freshCollectors are families a registry gathers at each scrape, named
// to fall before, between and after the Collector's.
func freshCollectors() []prometheus.Collector {
	first := prometheus.NewGauge(prometheus.GaugeOpts{Name: "aaa_first", Help: "First."})
	first.Set(1)
	analyzed := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpufrag_snapshots_analyzed_total", Help: "Between \\ the \"Collector's\"\nfamilies."}, []string{"dir"})
	analyzed.WithLabelValues(`a"b\c`).Add(3)
	last := prometheus.NewGauge(prometheus.GaugeOpts{Name: "zzz_last", Help: "Last."})
	last.Set(2.5)
	return []prometheus.Collector{first, analyzed, last}
}

// handlerPair returns promhttp's handler over a registry holding a
// Collector over srcs beside fresh (what the daemon served before), and the
// daemon's handler over another Collector over the same sources, served
// through Collector.Gatherer beside the same fresh collectors.
func handlerPair(t *testing.T, cfg ServerConfig, opts Options, fresh []prometheus.Collector, srcs ...Source) (want, got http.Handler) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(fresh...)
	if _, err := NewWithOptions(reg, opts, srcs...); err != nil {
		t.Fatal(err)
	}
	c, err := NewWithOptions(nil, opts, srcs...)
	if err != nil {
		t.Fatal(err)
	}
	greg := prometheus.NewPedanticRegistry()
	greg.MustRegister(fresh...)
	g, err := c.Gatherer(greg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.defaults()
	refCfg := cfg
	refCfg.Gatherer = reg
	cfg.Gatherer = g
	want, got = metricsHandler(refCfg), metricsHandler(cfg)
	if _, ok := got.(*preparedHandler); !ok {
		t.Fatalf("a Collector.Gatherer is served by %T", got)
	}
	return want, got
}

// sameResponse serves the request with accept and encoding on both
// handlers and compares status, headers and body byte for byte; an
// OpenMetrics body must end in one "# EOF". It returns the body,
// decompressed.
func sameResponse(t *testing.T, want, got http.Handler, accept, encoding string) string {
	t.Helper()
	serve := func(h http.Handler) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	w, g := serve(want), serve(got)
	for _, k := range []string{"Content-Type", "Content-Encoding", "Vary"} {
		if wv, gv := strings.Join(w.Header().Values(k), ", "), strings.Join(g.Header().Values(k), ", "); wv != gv {
			t.Fatalf("Accept %q, Accept-Encoding %q: %s %q, promhttp %q", accept, encoding, k, gv, wv)
		}
	}
	if w.Code != g.Code || w.Body.String() != g.Body.String() {
		t.Fatalf("Accept %q, Accept-Encoding %q: status %d, body\n%s\npromhttp: status %d, body\n%s",
			accept, encoding, g.Code, g.Body.String(), w.Code, w.Body.String())
	}
	body := g.Body.String()
	if g.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(g.Body)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		body = string(b)
	}
	if strings.HasPrefix(g.Header().Get("Content-Type"), "application/openmetrics-text") {
		if strings.Count(body, "# EOF") != 1 || !strings.HasSuffix(body, "# EOF\n") {
			t.Fatalf("Accept %q: OpenMetrics body without exactly one final # EOF:\n%s", accept, body)
		}
	}
	return body
}

// sameHandlers compares the daemon's handler with promhttp's over a
// registry holding the Collector (handlerPair), with and without gzip and
// OpenMetrics, for every Accept and Accept-Encoding of testAccepts and
// testEncodings, twice (the second time from what was prepared).
func sameHandlers(t *testing.T, opts Options, srcs ...Source) {
	t.Helper()
	for _, gz := range []bool{false, true} {
		for _, om := range []bool{false, true} {
			want, got := handlerPair(t, ServerConfig{Gzip: gz, OpenMetrics: om}, opts, freshCollectors(), srcs...)
			for range 2 {
				for _, a := range testAccepts {
					for _, e := range testEncodings {
						sameResponse(t, want, got, a, e)
					}
				}
			}
		}
	}
}

// TestPreparedHandlerRandomStates: for random states of random sources
// (samples of every kind with labels that need escaping, failures,
// duplicates across sources, polls that go stale, versions bumped without
// a hook), /metrics answers as promhttp over a registry holding the
// Collector, scrape after scrape. The seed is logged on failure.
func TestPreparedHandlerRandomStates(t *testing.T) {
	seen := map[string]int{}
	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 27))
			clock := NewManualClock(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
			n := 1 + r.IntN(5)
			states := make([]randomState, n)
			var srcs []Source
			var polled []*PolledSource
			for i := range n {
				st := &states[i]
				p, err := NewPolledSource(FuncContextSource{SourceName: fmt.Sprint("src-", i), Fn: func(context.Context) ([]Sample, error) {
					st.mu.Lock()
					defer st.mu.Unlock()
					return st.samples, st.err
				}}, time.Minute, 0, clock)
				if err != nil {
					t.Fatal(err)
				}
				polled = append(polled, p)
				srcs = append(srcs, p)
			}
			var quiet atomic.Uint64
			srcs = append(srcs, versionedFunc{name: "quiet", version: &quiet})
			opts := Options{SourceTimeout: time.Second}
			if r.IntN(3) == 0 {
				opts.MaxSeries = 10 + r.IntN(40)
			}
			cfg := ServerConfig{Gzip: r.IntN(2) == 0, OpenMetrics: r.IntN(2) == 0}
			want, got := handlerPair(t, cfg, opts, freshCollectors(), srcs...)
			for step := range 25 {
				for i, p := range polled {
					switch r.IntN(6) {
					case 0, 1:
						states[i].set(randomSamples(r, i), nil)
						_ = p.Poll(context.Background())
					case 2:
						states[i].set(nil, errors.New("poll failed"))
						_ = p.Poll(context.Background())
					case 3:
						_ = p.Poll(context.Background()) // same samples, new version
					}
				}
				switch r.IntN(4) {
				case 0:
					quiet.Add(1)
				case 1:
					clock.Advance(time.Duration(r.IntN(5)) * time.Minute) // some polls go stale
				}
				accept, encoding := testAccepts[r.IntN(len(testAccepts))], testEncodings[r.IntN(len(testEncodings))]
				t.Logf("seed %d step %d: Accept %q, Accept-Encoding %q, %+v, %+v", seed, step, accept, encoding, cfg, opts)
				body := sameResponse(t, want, got, accept, encoding)
				for _, m := range srcUp.FindAllStringSubmatch(body, -1) {
					seen[m[1]]++
				}
			}
		})
	}
	// The states drawn are not all of one kind: some scrapes served a
	// random source up, some down.
	t.Logf("random sources up %d times, down %d times", seen["1"], seen["0"])
	if seen["1"] == 0 || seen["0"] == 0 {
		t.Errorf("random sources up in %d scrapes, down in %d: draw both", seen["1"], seen["0"])
	}
}

// srcUp matches a random source's gpufrag_source_up in the text formats.
var srcUp = regexp.MustCompile(`gpufrag_source_up\{source="src-\d+"\} ([01])\n`)

// randomState is one random source's next poll result.
type randomState struct {
	mu      sync.Mutex
	samples []Sample
	err     error
}

func (s *randomState) set(samples []Sample, err error) {
	s.mu.Lock()
	s.samples, s.err = samples, err
	s.mu.Unlock()
}

// randomSamples returns up to 6 samples of random kinds over a few label
// values (so that sources clash now and then), some needing escaping.
func randomSamples(r *rand.Rand, src int) []Sample {
	values := []string{"0", "1", `q"uote`, `back\slash`, "é", ""}
	pick := func() string { return values[r.IntN(len(values))] }
	var out []Sample
	for range r.IntN(7) {
		s := Sample{Labels: Labels{GPU: pick(), Instance: fmt.Sprint("i", src, r.IntN(2)), Model: pick(), Pool: pick()}}
		switch r.IntN(4) {
		case 0:
			s.Memory = &Memory{Metrics: frag.Metrics{Reserved: r.Int64N(1 << 40), Allocated: r.Int64N(1 << 30), Health: r.Float64(), FragRate: r.Float64(), DistinctSizes: r.IntN(9)},
				OOMs: r.Int64N(5), CapacityUnknown: r.IntN(2) == 0}
		case 1:
			s.KV = &KV{Blocks: r.IntN(1000), BlockSize: 16, Free: r.IntN(500), Usage: r.Float64()}
		case 2:
			idx := r.IntN(3)
			s.Labels = Labels{GPU: fmt.Sprint(idx)}
			s.GPU = &GPUDevice{Index: idx, UUID: pick(), Name: pick(), TotalBytes: 80 << 30, UsedBytes: r.Uint64N(80 << 30),
				Processes: []GPUProcess{{PID: uint32(r.IntN(4)), UsedBytes: r.Uint64N(1 << 30)}}}
		case 3:
			s.Memory = &Memory{Metrics: frag.Metrics{Reserved: -1}} // a negative figure: checkSamples refuses it, or not
		}
		out = append(out, s)
	}
	return out
}

// errCollector is a registry collector whose collection fails.
type errCollector struct{ d *prometheus.Desc }

func (c errCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.d }
func (c errCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(c.d, errors.New("collection failed"))
}

// TestPreparedHandlerGatherError: a registry collector that fails is
// logged and served around (200 with the rest) as promhttp does, and
// answered 500 when nothing at all was gathered.
func TestPreparedHandlerGatherError(t *testing.T) {
	broken := errCollector{prometheus.NewDesc("broken", "Fails.", nil, nil)}
	for _, tc := range []struct {
		name   string
		fresh  []prometheus.Collector
		srcs   []Source
		status int
	}{
		{"served around", append(freshCollectors(), broken), []Source{versionedFunc{name: "v", version: new(atomic.Uint64)}}, http.StatusOK},
		{"nothing gathered", []prometheus.Collector{broken}, nil, http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, gz := range []bool{false, true} {
				want, got := handlerPair(t, ServerConfig{Gzip: gz, OpenMetrics: true}, Options{}, tc.fresh, tc.srcs...)
				for _, a := range testAccepts[:5] {
					sameResponse(t, want, got, a, "gzip")
				}
				rec := httptest.NewRecorder()
				got.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.Code != tc.status {
					t.Errorf("gzip %t: status %d, want %d", gz, rec.Code, tc.status)
				}
			}
		})
	}
}

// TestPreparedHandlerInFlight: past MaxRequestsInFlight scrapes at once,
// /metrics answers 503 with promhttp's message, and serves again after.
func TestPreparedHandlerInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var block atomic.Bool
	slow := FuncSource{SourceName: "slow", Fn: func() ([]Sample, error) {
		if block.Load() {
			entered <- struct{}{}
			<-release
		}
		return []Sample{{Labels: Labels{GPU: "0"}, KV: &KV{Blocks: 1}}}, nil
	}}
	want, got := handlerPair(t, ServerConfig{MaxRequestsInFlight: 1}, Options{}, nil, slow)
	for name, h := range map[string]http.Handler{"promhttp": want, "prepared": got} {
		block.Store(true)
		first := make(chan int)
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			first <- rec.Code
		}()
		<-entered
		block.Store(false)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != "Limit of concurrent requests reached (1), try again later.\n" {
			t.Errorf("%s: second scrape at once: %d %q", name, rec.Code, rec.Body.String())
		}
		release <- struct{}{}
		if code := <-first; code != http.StatusOK {
			t.Errorf("%s: first scrape: %d", name, code)
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			t.Errorf("%s: scrape after: %d", name, rec.Code)
		}
	}
}

// TestPreparedFormats: a poll encodes the new state in the formats
// scraped lately, before any scrape; a format not scraped for
// maxIdleScrapes scrapes in others is no longer encoded at a change.
func TestPreparedFormats(t *testing.T) {
	var n atomic.Int64
	a, err := NewPolledSource(counterSource("a", &n), time.Minute, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := New(nil, a)
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.Gatherer(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := Handler(ServerConfig{Gatherer: g, OpenMetrics: true}, nil)
	scrape := func(accept string) string {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Header().Get("Content-Type")
	}
	encodedFormats := func() []string {
		p := prepOf(c)
		p.mu.Lock()
		defer p.mu.Unlock()
		var out []string
		for f := range p.encoded {
			out = append(out, string(f))
		}
		slices.Sort(out)
		return out
	}
	text := scrape("text/plain")
	om := scrape("application/openmetrics-text;version=1.0.0")
	if err := a.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := encodedFormats(), []string{om, text}; !slices.Equal(got, want) {
		t.Fatalf("after a poll, encoded in %q, want %q", got, want)
	}
	for range maxIdleScrapes + 1 {
		scrape("application/openmetrics-text;version=1.0.0")
	}
	if err := a.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := encodedFormats(), []string{om}; !slices.Equal(got, want) {
		t.Fatalf("after %d scrapes in OpenMetrics and a poll, encoded in %q, want %q", maxIdleScrapes+1, got, want)
	}
}

// TestPreparedHandlerNameFilter: /metrics?name[]=… (promhttp's filter)
// serves the families named, as promhttp does.
func TestPreparedHandlerNameFilter(t *testing.T) {
	want, got := handlerPair(t, ServerConfig{}, Options{SourceTimeout: time.Second}, freshCollectors(), polledFleet(t, 1, 2)...)
	for _, q := range []string{"?name[]=gpufrag_reserved_bytes", "?name[]=zzz_last&name[]=gpufrag_source_up", "?other=1"} {
		var bodies [2]string
		for i, h := range []http.Handler{want, got} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics"+q, nil))
			bodies[i] = rec.Body.String()
		}
		if bodies[0] != bodies[1] || bodies[0] == "" {
			t.Errorf("%s: served\n%s\npromhttp\n%s", q, bodies[1], bodies[0])
		}
	}
}

// TestPreparedHandlerOneBody: over TCP, the daemon's /metrics sends the
// body promhttp sends, uncompressed with its Content-Length (not chunked),
// compressed (gzip) as promhttp does; a second scrape, in the body buffer
// the first left, is the same.
func TestPreparedHandlerOneBody(t *testing.T) {
	for _, gz := range []bool{false, true} {
		want, got := handlerPair(t, ServerConfig{Gzip: gz}, Options{}, freshCollectors(), polledFleet(t, 2, 4)...)
		get := func(h http.Handler) (*http.Response, []byte) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			return resp, b
		}
		wresp, wbody := get(want)
		for scrape := range 2 {
			resp, body := get(got)
			if !bytes.Equal(body, wbody) || resp.Header.Get("Content-Encoding") != wresp.Header.Get("Content-Encoding") {
				t.Fatalf("gzip %t, scrape %d: %d bytes (Content-Encoding %q), promhttp's %d (%q)", gz, scrape,
					len(body), resp.Header.Get("Content-Encoding"), len(wbody), wresp.Header.Get("Content-Encoding"))
			}
			// (net/http gives a body of under 2 KB, as this one gzipped, its
			// length itself.)
			if chunked := slices.Contains(resp.TransferEncoding, "chunked"); !gz && chunked || !chunked && resp.ContentLength != int64(len(body)) {
				t.Errorf("gzip %t, scrape %d: Transfer-Encoding %q, Content-Length %d for %d bytes",
					gz, scrape, resp.TransferEncoding, resp.ContentLength, len(body))
			}
		}
	}
}

// TestBodiesBounded: a body buffer that one large scrape grew is not kept
// for the scrapes after it once they use a small part of it: the kept
// bodies hold about what the scrapes now need, not the largest exposition
// ever served.
func TestBodiesBounded(t *testing.T) {
	var b bodies
	big := make([]byte, 8<<20) // over minDroppedBody and 4× the small scrapes; small, as this process's peak RSS is TestSoak's bound
	var held []*bytes.Buffer
	for range maxKeptBodies {
		buf := b.get()
		buf.Write(big)
		held = append(held, buf)
	}
	for _, buf := range held {
		b.put(buf)
	}
	small := make([]byte, 170<<10) // the daemon's usual exposition
	for range 2 * maxKeptBodies {
		held = held[:0]
		for range maxKeptBodies {
			buf := b.get()
			buf.Write(small)
			held = append(held, buf)
		}
		for _, buf := range held {
			b.put(buf)
		}
	}
	kept := 0
	for _, buf := range b.free {
		kept += buf.Cap()
	}
	if kept > maxKeptBodies*4*len(small) {
		t.Errorf("after small scrapes, the kept bodies hold %d bytes (%d buffers), for scrapes of %d", kept, len(b.free), len(small))
	}
}

// TestNegotiationKeptOnce: scrapes with the same Accept and
// Accept-Encoding that arrive together, before their negotiation is kept,
// keep it once: copies of one pair would fill the maxNegotiated slots, and
// every other scraper's pair would then be negotiated at each scrape.
func TestNegotiationKeptOnce(t *testing.T) {
	const n = maxNegotiated
	var arrived sync.WaitGroup
	arrived.Add(n)
	inner := promhttp.HandlerFor(prometheus.Gatherers{}, promhttp.HandlerOpts{EnableOpenMetrics: true})
	h := &preparedHandler{negotiate: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		arrived.Wait() // every request has missed the kept negotiations
		inner.ServeHTTP(w, r)
	})}
	var done sync.WaitGroup
	for range n {
		done.Go(func() {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
			req.Header.Set("Accept-Encoding", "gzip")
			if rec := h.negotiation(req); rec.header.Get("Content-Type") == "" {
				t.Error("no Content-Type negotiated")
			}
		})
	}
	done.Wait()
	if len(h.negs) != 1 {
		t.Errorf("%d negotiations kept for one header pair", len(h.negs))
	}
}

// TestNegotiationKeysBounded: the header values a kept negotiation is
// looked up by are a scraper's usual few hundred bytes; a request with
// large ones (up to the server's MaxHeaderBytes, 1 MB under net/http's
// default for a caller's own server) is negotiated, not kept, so that the
// kept negotiations do not hold megabytes of headers for good.
func TestNegotiationKeysBounded(t *testing.T) {
	h := &preparedHandler{negotiate: promhttp.HandlerFor(prometheus.Gatherers{}, promhttp.HandlerOpts{})}
	for i := range maxNegotiated {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", fmt.Sprintf("text/plain;version=0.0.4;x=%d;pad=%s", i, strings.Repeat("a", 512<<10)))
		if rec := h.negotiation(req); !strings.HasPrefix(rec.header.Get("Content-Type"), "text/plain") {
			t.Fatalf("Content-Type %q", rec.header.Get("Content-Type"))
		}
	}
	held := 0
	for _, n := range h.negs {
		for _, v := range slices.Concat(n.accept, n.encoding) {
			held += len(v)
		}
	}
	if held > maxNegotiated<<10 {
		t.Errorf("the kept negotiations hold %d bytes of header values", held)
	}
	// A usual scraper's pair is still kept.
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2")
	req.Header.Set("Accept-Encoding", "gzip")
	h.negotiation(req)
	if _, ok := h.keptNegotiation(req.Header.Values("Accept"), req.Header.Values("Accept-Encoding")); !ok {
		t.Error("Prometheus' headers not kept")
	}
}

// retainingWriter is a ResponseWriter whose Write keeps p without copying
// it and fails, as net/http's HTTP/2 server does when the stream is reset
// or the connection gone while a frame of p is still queued or being
// written (http2serverConn.writeDataFromHandler returns at once).
type retainingWriter struct {
	header http.Header
	ok     int // writes taken (copied) before the failing one
	kept   []byte
	failed bool
}

func (w *retainingWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}
func (w *retainingWriter) WriteHeader(int) {}
func (w *retainingWriter) Write(p []byte) (int, error) {
	if w.ok > 0 && !w.failed {
		w.ok--
		return len(p), nil
	}
	if !w.failed {
		w.kept, w.failed = p, true
	}
	return 0, errors.New("stream closed")
}

// TestPreparedHandlerFailedWriteNotReused: a body whose write failed is not
// assembled into again, nor the gzip writer whose output failed used
// again: the writer may still be reading the bytes (HTTP/2), and the next
// scrape's would go out in the failed one's frames. (For gzip, the pool
// may hand the second scrape a new writer: then it passes either way.)
func TestPreparedHandlerFailedWriteNotReused(t *testing.T) {
	for _, gz := range []bool{false, true} {
		_, h := handlerPair(t, ServerConfig{OpenMetrics: true, Gzip: gz}, Options{}, freshCollectors(), polledFleet(t, 1, 2)...)
		first := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		gone := retainingWriter{}
		if gz {
			first.Header.Set("Accept-Encoding", "gzip")
			gone.ok = 1 // the gzip header, from the writer's own array
		}
		h.ServeHTTP(&gone, first)
		if len(gone.kept) == 0 {
			t.Fatalf("gzip %t: nothing written", gz)
		}
		sent := slices.Clone(gone.kept)
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if !strings.Contains(rec.Header().Get("Content-Type"), "openmetrics") {
			t.Fatalf("gzip %t: second scrape: Content-Type %q", gz, rec.Header().Get("Content-Type"))
		}
		if !bytes.Equal(gone.kept, sent) {
			t.Errorf("gzip %t: the failed write's bytes changed under it: the next scrape wrote in them", gz)
		}
	}
}

// TestNegotiationReplacesOldest: once every slot holds a pair of headers
// seen once, a steady scraper's pair is still kept after its first
// request (the oldest pair gives way), and the slots stay bounded.
func TestNegotiationReplacesOldest(t *testing.T) {
	h := &preparedHandler{negotiate: promhttp.HandlerFor(prometheus.Gatherers{}, promhttp.HandlerOpts{})}
	get := func(accept string) {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", accept)
		h.negotiation(req)
	}
	for i := range 2 * maxNegotiated {
		get(fmt.Sprintf("text/plain;version=0.0.4;x=%d", i))
	}
	const prom = "application/openmetrics-text;version=1.0.0;q=0.6,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
	get(prom)
	if _, ok := h.keptNegotiation([]string{prom}, nil); !ok {
		t.Error("a steady scraper's headers are not kept once the slots are full")
	}
	if len(h.negs) != maxNegotiated {
		t.Errorf("%d negotiations kept, want %d", len(h.negs), maxNegotiated)
	}
	// The most recent one-off pairs are still there; the oldest are gone.
	if _, ok := h.keptNegotiation([]string{fmt.Sprintf("text/plain;version=0.0.4;x=%d", 2*maxNegotiated-1)}, nil); !ok {
		t.Error("the newest one-off pair was replaced before older ones")
	}
	if _, ok := h.keptNegotiation([]string{"text/plain;version=0.0.4;x=0"}, nil); ok {
		t.Error("the oldest pair is still kept")
	}
}
