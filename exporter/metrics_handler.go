package exporter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// cachedMetricsHandler serves /metrics with the body, Content-Type and Vary
// header that promhttp.HandlerFor(prometheus.Gatherers{gatherer, c}, opts)
// would produce (ContinueOnError; identity or gzip), but without gathering
// and encoding the Collector on every scrape: while every source of c is a
// VersionedSource and their states (versions, failures) are unchanged, the
// Collector's families are copied from bytes encoded once per state and
// format. Only gatherer (go_, process_, the snapshot directory's counters)
// is gathered and encoded on each scrape, and the two are merged in family
// name order, as Gatherers sorts them. Anything else (a source that is not
// versioned, a gather error, a family name in both, an Accept-Encoding that
// plainEncoding does not settle) is handed to promhttp.
type cachedMetricsHandler struct {
	gatherer    prometheus.Gatherer
	c           *Collector
	fallback    http.Handler // promhttp over both, without the in-flight cap
	errorLog    promhttp.Logger
	accepted    []expfmt.Format
	inFlight    chan struct{}
	maxInFlight int
	gzip        bool // compression offered (identity and gzip)
	gzipPool    sync.Pool

	mu     sync.Mutex
	snap   *metricsSnapshot
	builds int // snapshots built (tests)
}

// metricsSnapshot is the Collector's families for one state of its sources,
// with their encodings per format (built on first use).
type metricsSnapshot struct {
	states []sourceState
	fams   []*dto.MetricFamily

	mu  sync.Mutex
	enc map[expfmt.Format]*encodedFamilies
}

// encodedFamilies is the encoding of a snapshot's families, one after the
// other in data; family i is data[end[i-1]:end[i]].
type encodedFamilies struct {
	data  []byte
	names []string
	end   []int
}

// replayCollector sends a fixed list of the Collector's metrics, so that a
// Registry turns them into families exactly as it does for the Collector.
type replayCollector []prometheus.Metric

func (r replayCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

func (r replayCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range r {
		ch <- m
	}
}

func newCachedMetricsHandler(gatherer prometheus.Gatherer, c *Collector, fallback http.Handler,
	opts promhttp.HandlerOpts) *cachedMetricsHandler {
	h := &cachedMetricsHandler{
		gatherer: gatherer, c: c, fallback: fallback, errorLog: opts.ErrorLog,
		accepted: expfmt.DefaultAcceptedFormats(), maxInFlight: opts.MaxRequestsInFlight,
		gzip: !opts.DisableCompression,
	}
	h.gzipPool.New = func() any { return gzip.NewWriter(nil) }
	if opts.EnableOpenMetrics {
		h.accepted = expfmt.DefaultOpenMetricsAcceptedFormats()
	}
	if opts.MaxRequestsInFlight > 0 {
		h.inFlight = make(chan struct{}, opts.MaxRequestsInFlight)
	}
	return h
}

// snapshot returns the Collector's families for the sources' current state,
// building them when that state changed since the last snapshot; nil when
// they cannot be served from a snapshot.
func (h *cachedMetricsHandler) snapshot() *metricsSnapshot {
	st, ok := h.c.states()
	if !ok {
		return nil
	}
	h.mu.Lock()
	s := h.snap
	h.mu.Unlock()
	if s != nil && slices.Equal(s.states, st) {
		return s
	}
	// The states recorded are those read by the collection itself, so the
	// families always match them (even when a source changed meanwhile).
	var metrics replayCollector
	st, ok = h.c.collect(func(m prometheus.Metric) { metrics = append(metrics, m) })
	if !ok {
		return nil
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics); err != nil {
		return nil
	}
	fams, err := reg.Gather()
	if err != nil {
		return nil // promhttp reports it
	}
	s = &metricsSnapshot{states: st, fams: fams, enc: make(map[expfmt.Format]*encodedFamilies)}
	h.mu.Lock()
	h.snap = s
	h.builds++
	h.mu.Unlock()
	return s
}

// encoded returns the snapshot's families encoded in format, each as the
// encoder writes it on its own (expfmt encoders keep no state between
// families; OpenMetrics' "# EOF" comes from Close, which the handler calls).
func (s *metricsSnapshot) encoded(format expfmt.Format) (*encodedFamilies, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.enc[format]; e != nil {
		return e, nil
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, format)
	e := &encodedFamilies{names: make([]string, len(s.fams)), end: make([]int, len(s.fams))}
	for i, mf := range s.fams {
		if err := enc.Encode(mf); err != nil {
			return nil, fmt.Errorf("exporter: encode %s as %s: %w", mf.GetName(), format, err)
		}
		e.names[i], e.end[i] = mf.GetName(), buf.Len()
	}
	e.data = buf.Bytes()
	s.enc[format] = e
	return e, nil
}

func (h *cachedMetricsHandler) ServeHTTP(rsp http.ResponseWriter, req *http.Request) {
	if h.inFlight != nil {
		select {
		case h.inFlight <- struct{}{}:
			defer func() { <-h.inFlight }()
		default:
			http.Error(rsp, fmt.Sprintf(
				"Limit of concurrent requests reached (%d), try again later.", h.maxInFlight,
			), http.StatusServiceUnavailable)
			return
		}
	}
	useGzip := false
	if h.gzip {
		var ok bool
		if useGzip, ok = plainEncoding(req.Header.Values("Accept-Encoding")); !ok {
			h.fallback.ServeHTTP(rsp, req)
			return
		}
	}
	snap := h.snapshot()
	if snap == nil {
		h.fallback.ServeHTTP(rsp, req)
		return
	}
	mfs, err := h.gatherer.Gather()
	if err != nil {
		h.fallback.ServeHTTP(rsp, req) // gathers again and reports the error as promhttp does
		return
	}
	format := expfmt.NegotiateAccept(req.Header, h.accepted...)
	cached, err := snap.encoded(format)
	if err != nil {
		h.fallback.ServeHTTP(rsp, req)
		return
	}
	for i, j := 0, 0; i < len(mfs) && j < len(cached.names); {
		switch c := strings.Compare(mfs[i].GetName(), cached.names[j]); {
		case c == 0:
			h.fallback.ServeHTTP(rsp, req) // a family in both: let promhttp merge or report it
			return
		case c < 0:
			i++
		default:
			j++
		}
	}

	rsp.Header().Add("Vary", "Accept")
	if h.gzip {
		rsp.Header().Add("Vary", "Accept-Encoding")
	}
	rsp.Header().Set("Content-Type", string(format))
	var w io.Writer = rsp
	if useGzip {
		rsp.Header().Set("Content-Encoding", "gzip")
		gz := h.gzipPool.Get().(*gzip.Writer)
		gz.Reset(rsp)
		defer func() { _ = gz.Close(); h.gzipPool.Put(gz) }()
		w = gz
	}
	var filter map[string]struct{}
	if req.URL != nil {
		if names := req.URL.Query()["name[]"]; len(names) > 0 {
			filter = make(map[string]struct{}, len(names))
			for _, n := range names {
				filter[n] = struct{}{}
			}
		}
	}
	keep := func(name string) bool {
		if filter == nil {
			return true
		}
		_, ok := filter[name]
		return ok
	}
	logErr := func(err error) {
		if err != nil && h.errorLog != nil {
			h.errorLog.Println("error encoding and sending metric family:", err)
		}
	}
	enc := expfmt.NewEncoder(w, format)
	i, j := 0, 0
	for i < len(mfs) || j < len(cached.names) {
		if j == len(cached.names) || (i < len(mfs) && mfs[i].GetName() < cached.names[j]) {
			if keep(mfs[i].GetName()) {
				logErr(enc.Encode(mfs[i]))
			}
			i++
			continue
		}
		// A run of cached families up to the next gathered one, in one write.
		k := j
		for k < len(cached.names) && (i == len(mfs) || cached.names[k] < mfs[i].GetName()) && keep(cached.names[k]) {
			k++
		}
		if k > j {
			start := 0
			if j > 0 {
				start = cached.end[j-1]
			}
			_, err := w.Write(cached.data[start:cached.end[k-1]])
			logErr(err)
			j = k
		} else {
			j++ // filtered out
		}
	}
	if closer, ok := enc.(expfmt.Closer); ok {
		logErr(closer.Close())
	}
}

// plainEncoding settles the content coding that promhttp, offering
// identity and gzip, negotiates for the Accept-Encoding header values vs,
// when they are a plain list of codings without weights or wildcards (what
// Prometheus and Go's HTTP client send): identity when listed (it is
// offered first), else gzip when listed, else identity. ok is false for
// anything else (weights, "*", zstd, empty list elements, leading space,
// other tokens),
// which promhttp negotiates.
func plainEncoding(vs []string) (useGzip, ok bool) {
	identity := false
	for _, v := range vs {
		if strings.Trim(v, " \t") == "" {
			continue
		}
		if v[0] == ' ' || v[0] == '\t' {
			return false, false // promhttp's parser stops at leading space
		}
		for tok := range strings.SplitSeq(v, ",") {
			switch strings.Trim(tok, " \t") {
			case "identity":
				identity = true
			case "gzip":
				useGzip = true
			case "deflate", "br", "compress":
			default:
				return false, false
			}
		}
	}
	return useGzip && !identity, true
}
