// The scrape from prepared bytes: /metrics writes the Collector's families
// as encoded when a source changed. See doc.go for the overview.

package exporter

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// maxFormats bounds the formats a prepared state keeps encoded, and
// those encoded when a source changes. Scrapers negotiate one format each
// (Prometheus: OpenMetrics 1.0.0 when offered, else text 0.0.4; promtool
// and curl: text), so one to three are in use; a fifth is encoded at each
// scrape that asks for it, not kept.
const maxFormats = 4

// maxIdleScrapes is how many scrapes in other formats a format is still
// encoded at each change after its last scrape: a format a scraper uses
// at its interval stays (one Prometheus and a few others scraping as
// often), one asked for once (a curl) stops costing an encoding per
// change after 16 scrapes.
const maxIdleScrapes = 16

// formatUse is a format scraped lately: idle scrapes in other formats
// since its last one.
type formatUse struct {
	f    expfmt.Format
	idle int
}

// scraped records a scrape in format f.
func (c *Collector) scraped(f expfmt.Format) {
	c.fmtMu.Lock()
	defer c.fmtMu.Unlock()
	found := false
	c.formats = slices.DeleteFunc(c.formats, func(u formatUse) bool { return u.idle >= maxIdleScrapes && u.f != f })
	for i := range c.formats {
		if c.formats[i].f == f {
			c.formats[i].idle, found = 0, true
		} else {
			c.formats[i].idle++
		}
	}
	if !found && len(c.formats) < maxFormats {
		c.formats = append(c.formats, formatUse{f: f})
	}
}

// scrapedFormats returns the formats to encode when a source changes.
func (c *Collector) scrapedFormats() []expfmt.Format {
	c.fmtMu.Lock()
	defer c.fmtMu.Unlock()
	out := make([]expfmt.Format, len(c.formats))
	for i, u := range c.formats {
		out[i] = u.f
	}
	return out
}

// encoded is a prepared state's families in one exposition format: family
// i is buf[ends[i-1]:ends[i]] (buf[:ends[0]] for the first).
type encoded struct {
	buf  []byte
	ends []int
}

// encodeFamilies encodes fams in format f as expfmt's encoder does, one
// family after the other (each encoder writes a family on its own; the
// only other output is OpenMetrics' final "# EOF", written by the scrape).
func encodeFamilies(fams []*dto.MetricFamily, f expfmt.Format) (*encoded, error) {
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, f)
	e := &encoded{ends: make([]int, len(fams))}
	for i, mf := range fams {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
		e.ends[i] = b.Len()
	}
	e.buf = b.Bytes()
	return e, nil
}

// encoding returns p's families in format f: as encoded when a source
// changed, or encoded now (and kept, up to maxFormats formats).
func (p *prepared) encoding(f expfmt.Format) (*encoded, error) {
	p.mu.Lock()
	e := p.encoded[f]
	p.mu.Unlock()
	if e != nil {
		return e, nil
	}
	e, err := encodeFamilies(p.fams, f)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.encoded[f] == nil && len(p.encoded) < maxFormats {
		if p.encoded == nil {
			p.encoded = make(map[expfmt.Format]*encoded, maxFormats)
		}
		p.encoded[f] = e
	}
	return e, nil
}

// prepareFormats encodes p's families in formats (the formats scraped
// lately), so that the next scrape in each finds them ready.
func (p *prepared) prepareFormats(formats []expfmt.Format) {
	for _, f := range formats {
		_, _ = p.encoding(f) // an error is the scrape's to log (it encodes again)
	}
}

// preparedHandler serves /metrics for a Collector.Gatherer: what promhttp
// would serve, with the Collector's families written as encoded when a
// source changed, and only the registry's (the runtime and process
// collectors, the snapshot directory's counters) encoded at the scrape.
//
// It re-implements none of promhttp's negotiation: each request is first
// served by promhttp's own handler over no families (negotiate), whose
// headers (Content-Type, Content-Encoding, Vary) are the response's; the
// body is then written in that format and, for Content-Encoding gzip,
// compressed as promhttp does (gzip.NewWriter's default level). What it
// does not serve itself goes to promhttp's handler over the Gatherer
// (full): a name[] filter, an encoding other than gzip (zstd, were it
// linked in), a format that fails to encode. It keeps promhttp's other
// behaviours as configured by metricsHandler: at most MaxRequestsInFlight
// at once (503 beyond), a gathering error logged and served around
// (500 when nothing was gathered), an error writing the body logged (once,
// where promhttp logs each family). The daemon registers no
// promhttp_metric_handler_* metrics (HandlerOpts.Registry is nil), so
// there are none to keep.
type preparedHandler struct {
	g         merged
	negotiate http.Handler // promhttp over no families
	full      http.Handler // promhttp over g
	inFlight  chan struct{}
	errorLog  promhttp.Logger
	bodies    bodies

	negMu   sync.Mutex
	negs    []negotiated // promhttp's answers to the headers seen, up to maxNegotiated
	negNext int          // the kept pair replaced next once negs is full (the oldest)
}

// maxNegotiated bounds the negotiations kept: one or two per kind of
// scraper (Prometheus sends the same Accept and Accept-Encoding at every
// scrape); past it, the oldest kept pair gives way to a new one.
const maxNegotiated = 8

// maxNegotiatedKey bounds the bytes of header values a kept negotiation
// is looked up by (Prometheus sends ~250 of Accept): headers larger than
// that are negotiated at each request, not held for good.
const maxNegotiatedKey = 1 << 10

// negotiated is what promhttp answered (negotiate) to a request with
// these Accept and Accept-Encoding header values.
type negotiated struct {
	accept, encoding []string
	rec              headerRecorder
}

// negotiation returns promhttp's answer to req's Accept and
// Accept-Encoding headers, the only parts of a request its negotiation
// reads (Content-Type from expfmt.NegotiateAccept, Content-Encoding from
// httputil.NegotiateContentEncoding, the Vary header set whatever they
// hold; the name[] filter, the other input of promhttp's handler, is
// served by full): as answered to the same headers before, else asked now
// and kept. The kept headers' values are clipped, so that appending to one
// in a response copies it.
func (h *preparedHandler) negotiation(req *http.Request) headerRecorder {
	accept, encoding := req.Header.Values("Accept"), req.Header.Values("Accept-Encoding")
	h.negMu.Lock()
	if rec, ok := h.keptNegotiation(accept, encoding); ok {
		h.negMu.Unlock()
		return rec
	}
	h.negMu.Unlock()
	var rec headerRecorder
	h.negotiate.ServeHTTP(&rec, req)
	for k, v := range rec.header {
		rec.header[k] = slices.Clip(v)
	}
	h.negMu.Lock()
	defer h.negMu.Unlock()
	// Scrapes with these headers that came at once have each negotiated:
	// the first to get here keeps its answer, the others use it.
	if kept, ok := h.keptNegotiation(accept, encoding); ok {
		return kept
	}
	if keyBytes(accept)+keyBytes(encoding) > maxNegotiatedKey {
		return rec
	}
	n := negotiated{accept: slices.Clone(accept), encoding: slices.Clone(encoding), rec: rec}
	if len(h.negs) < maxNegotiated {
		h.negs = append(h.negs, n)
		return rec
	}
	// Full: the oldest kept pair gives way, so that scrapers seen once
	// (a curl with headers of its own) cannot keep a steady one's pair out
	// for good; a steady scraper's pair is back after one miss.
	h.negs[h.negNext] = n
	h.negNext = (h.negNext + 1) % maxNegotiated
	return rec
}

// keptNegotiation returns the negotiation kept for these header values
// (under negMu).
func (h *preparedHandler) keptNegotiation(accept, encoding []string) (headerRecorder, bool) {
	for _, n := range h.negs {
		if slices.Equal(n.accept, accept) && slices.Equal(n.encoding, encoding) {
			return n.rec, true
		}
	}
	return headerRecorder{}, false
}

// keyBytes is the length of header values vs.
func keyBytes(vs []string) int {
	n := 0
	for _, v := range vs {
		n += len(v)
	}
	return n
}

func newPreparedHandler(g merged, opts promhttp.HandlerOpts) *preparedHandler {
	h := &preparedHandler{g: g, inFlight: make(chan struct{}, opts.MaxRequestsInFlight), errorLog: opts.ErrorLog}
	if h.errorLog == nil {
		h.errorLog = discardLogger{}
	}
	opts.MaxRequestsInFlight = 0 // counted here, once
	h.full = promhttp.HandlerFor(g, opts)
	h.negotiate = promhttp.HandlerFor(prometheus.Gatherers{}, opts)
	return h
}

type discardLogger struct{}

func (discardLogger) Println(...any) {}

var gzipPool = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func (h *preparedHandler) ServeHTTP(rsp http.ResponseWriter, req *http.Request) {
	if cap(h.inFlight) > 0 {
		select {
		case h.inFlight <- struct{}{}:
			defer func() { <-h.inFlight }()
		default:
			http.Error(rsp, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", cap(h.inFlight)),
				http.StatusServiceUnavailable)
			return
		}
	}
	if req.URL != nil && req.URL.RawQuery != "" && req.URL.Query().Has("name[]") {
		h.full.ServeHTTP(rsp, req)
		return
	}
	neg := h.negotiation(req)
	format := expfmt.Format(neg.header.Get("Content-Type"))
	gz := false
	switch neg.header.Get("Content-Encoding") {
	case "":
	case "gzip":
		gz = true
	default:
		h.full.ServeHTTP(rsp, req)
		return
	}
	if neg.status != 0 && neg.status != http.StatusOK {
		h.full.ServeHTTP(rsp, req)
		return
	}

	// The runtime families (GathererWithRuntime) are written from their
	// templates in the text formats, else encoded with the registry's.
	var tmpl []textTemplate
	var rv *runtimeValues
	var fams []*dto.MetricFamily
	var err error
	if h.g.rt != nil {
		tmpl = h.g.rt.templates(format)
	}
	if tmpl != nil {
		fams, err = h.g.reg.Gather()
		rv = h.g.rt.read()
		defer h.g.rt.release(rv)
	} else {
		fams, err = h.g.gatherReg()
	}
	p := h.g.c.families(true)
	if err != nil {
		h.errorLog.Println("error gathering metrics:", err)
		if len(fams) == 0 && len(p.fams) == 0 && rv == nil {
			rsp.Header().Del("Content-Encoding")
			http.Error(rsp, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	h.g.c.scraped(format)
	mine, err := p.encoding(format)
	if err != nil {
		h.errorLog.Println("error encoding prepared families, serving them through promhttp:", err)
		h.full.ServeHTTP(rsp, req)
		return
	}
	for k, v := range neg.header {
		rsp.Header()[k] = v
	}
	// The body is assembled in a buffer kept between scrapes and sent in
	// one write with its Content-Length (or compressed from it), not
	// written family by family through net/http's 2 KB buffer and chunked
	// encoding: a dozen write(2)s of 4 KB around the Collector's bytes,
	// each waking the scraper for a read of its own (docs/benchmarks.md,
	// "Issue 27, sixth round").
	// A body, or a gzip writer, that rsp failed to take is not used again:
	// net/http's HTTP/2 server returns from a Write on a reset stream or a
	// gone connection while a frame of it may still be queued or being
	// copied, and it would send the next scrape's bytes.
	body := h.bodies.get()
	keep := true
	defer func() {
		if keep {
			h.bodies.put(body)
		}
	}()
	w := body
	enc := expfmt.NewEncoder(w, format)
	// The Collector's families between two of the registry's are written
	// in one piece (mine.buf[from:to]): one write, not one per family.
	var werr error
	from, to := 0, 0
	flush := func() {
		if from < to && werr == nil {
			_, werr = w.Write(mine.buf[from:to])
		}
		from = to
	}
	each := func(i int, isMine bool) {
		if isMine {
			to = mine.ends[i]
			return
		}
		flush()
		if werr == nil {
			werr = enc.Encode(fams[i])
		}
	}
	if rv == nil {
		mergeByName(fams, p.fams, each)
	} else {
		// The runtime families in name order among the others, each
		// written from its template (runtime_families.go).
		rt, k := h.g.rt, 0
		mergeByName(fams, p.fams, func(i int, isMine bool) {
			var name string
			if isMine {
				name = p.fams[i].GetName()
			} else {
				name = fams[i].GetName()
			}
			for ; k < len(rt.shapes) && rt.shapes[k].GetName() < name; k++ {
				h.writeRuntime(w, rv, tmpl, k, flush, &werr)
			}
			each(i, isMine)
		})
		for ; k < len(rt.shapes); k++ {
			h.writeRuntime(w, rv, tmpl, k, flush, &werr)
		}
	}
	flush()
	if closer, ok := enc.(expfmt.Closer); ok && werr == nil {
		werr = closer.Close() // OpenMetrics' "# EOF"
	}
	// What was assembled, up to an encoding error if any (as it was
	// written before: promhttp's body up to the failing family), is sent.
	if gz {
		zw := gzipPool.Get().(*gzip.Writer)
		zw.Reset(rsp)
		_, err := zw.Write(body.Bytes())
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			gzipPool.Put(zw)
		}
		if werr == nil {
			werr = err
		}
	} else {
		rsp.Header().Set("Content-Length", strconv.Itoa(body.Len()))
		if _, err := rsp.Write(body.Bytes()); err != nil {
			keep = false
			if werr == nil {
				werr = err
			}
		}
	}
	if werr != nil {
		h.errorLog.Println("error encoding and sending metric family:", werr)
	}
}

// writeRuntime writes runtime family k of reading rv, if present, from
// its template, after what flush writes of the Collector's families.
func (h *preparedHandler) writeRuntime(w *bytes.Buffer, rv *runtimeValues, tmpl []textTemplate, k int, flush func(), werr *error) {
	if !rv.present[k] || *werr != nil {
		return
	}
	flush()
	rt := h.g.rt
	_, *werr = w.Write(tmpl[k].appendText(w.AvailableBuffer(), rv.vals[rt.offs[k]:rt.offs[k+1]]))
}

// maxKeptBodies bounds the bodies kept between scrapes: one per scrape in
// flight, up to two (one Prometheus, or two scraping at the same moment);
// a third at once assembles in a buffer of its own.
const maxKeptBodies = 2

// keptBodySlack bounds a kept body's unused room: a buffer of more than
// keptBodySlack times what its scrape used, and over minDroppedBody, is
// dropped, so that one large exposition (a burst of instances, since
// gone) does not hold its size in every kept body for good.
const (
	keptBodySlack  = 4
	minDroppedBody = 1 << 20
)

// bodies is a free list of the buffers /metrics assembles its body in,
// kept across collections (a sync.Pool is emptied by them, and the polls
// between two scrapes bring one or two): each grows once to the
// exposition's size (~170 KB for 8 GPUs × 16 instances).
type bodies struct {
	mu   sync.Mutex
	free []*bytes.Buffer
}

func (b *bodies) get() *bytes.Buffer {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(b.free); n > 0 {
		buf := b.free[n-1]
		b.free = b.free[:n-1]
		return buf
	}
	return new(bytes.Buffer)
}

func (b *bodies) put(buf *bytes.Buffer) {
	if c := buf.Cap(); c > minDroppedBody && c > keptBodySlack*buf.Len() {
		return
	}
	buf.Reset()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.free) < maxKeptBodies {
		b.free = append(b.free, buf)
	}
}

// headerRecorder is the ResponseWriter of the negotiation: it keeps the
// headers and the status and drops the body.
type headerRecorder struct {
	header http.Header
	status int
}

func (r *headerRecorder) Header() http.Header {
	if r.header == nil {
		r.header = make(http.Header, 4)
	}
	return r.header
}

func (r *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *headerRecorder) WriteHeader(status int)      { r.status = status }
