// The daemon's runtime families (RuntimeCollectors: the Go collector's and
// the process collector's) served without a registry: values read at each
// scrape into buffers kept between scrapes, written into text encoded once.
// See doc.go for the overview.

package exporter

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// runtimeFamilies serves what RuntimeCollectors registered in a registry
// would: the same families (names, help, types, labels, in name order)
// with values read from the same runtime and kernel figures at every
// scrape. What it saves at a scrape (docs/benchmarks.md, "Issue 27, fifth
// round"): the registry's gathering (its two channels of 1,000 metrics,
// a goroutine per collector, a const metric and a dto.Metric per value),
// client_golang's Go collector's garbage (debug.ReadGCStats' buffers, a
// map of quantiles, ~30 KB a scrape) and, in the text formats, the
// encoding of the families: their HELP, TYPE, names and labels are
// encoded once per format by expfmt itself (template) and only the
// values are written at the scrape, as expfmt writes them (appendFloat).
//
// The Go families are learnt from client_golang's Go collector when made
// (one gather): their names, help texts, types and labels are its own;
// their values are computed as it computes them (goReader). When that
// collector exports a family this file has no value for (another
// client_golang or Go version), newRuntimeFamilies fails and the caller
// registers RuntimeCollectors instead.
type runtimeFamilies struct {
	shapes []*dto.MetricFamily // sorted by name, values zero; never modified
	offs   []int               // family i's values are vals[offs[i]:offs[i+1]]
	goFill []func(g *goReader, dst []float64)
	byDesc map[*prometheus.Desc]int // the process families' index
	descs  []*prometheus.Desc       // what RuntimeCollectors describes

	mu   sync.Mutex // one reading at a time: the readers' buffers
	gr   *goReader
	proc processReader
	emit func(d *prometheus.Desc, t prometheus.ValueType, v float64) // emitProc
	cur  *runtimeValues                                              // the reading emit fills
	// readFn, when set (tests), replaces the reading: it fills v.
	readFn func(v *runtimeValues)

	tmplMu sync.Mutex
	tmpls  map[expfmt.Format][]textTemplate // per family; text formats only

	// free holds readings released for the next (under mu): not a
	// sync.Pool, which every collection empties, and the daemon collects
	// between most scrapes.
	free []*runtimeValues
}

// maxFreeReadings bounds runtimeFamilies.free: as many as scrapes served
// at once (ServerConfig.MaxRequestsInFlight's default).
const maxFreeReadings = 8

// processReader reads the process's figures (processCollector.each).
type processReader interface {
	each(emit func(d *prometheus.Desc, t prometheus.ValueType, v float64))
}

// runtimeValues is one reading: family i is present (exported at all)
// and its values in slot order (slots).
type runtimeValues struct {
	present []bool
	vals    []float64
}

var errNoRuntimeFamilies = errors.New("exporter: the runtime families cannot be served without a registry here")

// newRuntimeFamilies returns the runtime families, or an error when they
// cannot be served without client_golang's collectors (no process reader
// on this system, or a Go family without a value here).
func newRuntimeFamilies() (*runtimeFamilies, error) {
	proc := newProcessReader()
	if proc == nil {
		return nil, errNoRuntimeFamilies
	}
	goc := collectors.NewGoCollector()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(goc); err != nil {
		return nil, err
	}
	goFams, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	r := &runtimeFamilies{byDesc: map[*prometheus.Desc]int{}, gr: newGoReader(), proc: proc, tmpls: map[expfmt.Format][]textTemplate{}}
	fill := map[string]func(*goReader, []float64){}
	for _, mf := range goFams {
		f, ok := goValues[mf.GetName()]
		if !ok || !simpleShape(mf) || !r.gr.has(mf.GetName()) {
			return nil, fmt.Errorf("%w: no value for the Go collector's %s", errNoRuntimeFamilies, mf.GetName())
		}
		if mf.GetName() == "go_gc_duration_seconds" && !gcQuantiles(mf) {
			return nil, fmt.Errorf("%w: go_gc_duration_seconds' quantiles", errNoRuntimeFamilies)
		}
		fill[mf.GetName()] = f
		r.shapes = append(r.shapes, zeroed(mf))
	}
	for _, d := range procDescs {
		pf := procFams[d]
		mf := &dto.MetricFamily{Name: new(pf.name), Help: new(pf.help), Metric: []*dto.Metric{{}}}
		if pf.typ == prometheus.CounterValue {
			mf.Type, mf.Metric[0].Counter = dto.MetricType_COUNTER.Enum(), &dto.Counter{Value: new(0.0)}
		} else {
			mf.Type, mf.Metric[0].Gauge = dto.MetricType_GAUGE.Enum(), &dto.Gauge{Value: new(0.0)}
		}
		r.shapes = append(r.shapes, mf)
	}
	slices.SortFunc(r.shapes, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	r.offs = make([]int, len(r.shapes)+1)
	r.goFill = make([]func(*goReader, []float64), len(r.shapes))
	for i, mf := range r.shapes {
		r.offs[i+1] = r.offs[i] + slots(mf)
		r.goFill[i] = fill[mf.GetName()]
		for _, d := range procDescs {
			if procFams[d].name == mf.GetName() {
				r.byDesc[d] = i
			}
		}
	}
	ch := make(chan *prometheus.Desc, 64)
	go func() { goc.Describe(ch); close(ch) }()
	for d := range ch {
		r.descs = append(r.descs, d)
	}
	r.descs = append(r.descs, procDescs...)
	r.emit = r.emitProc
	return r, nil
}

// simpleShape tells whether mf is a family runtimeFamilies can hold:
// gauges, counters, untyped and summaries, no timestamps.
func simpleShape(mf *dto.MetricFamily) bool {
	for _, m := range mf.Metric {
		if m.Histogram != nil || m.TimestampMs != nil {
			return false
		}
	}
	return len(mf.Metric) > 0
}

// gcQuantiles tells whether go_gc_duration_seconds' quantiles are the
// five of client_golang's base collector (0, 0.25, 0.5, 0.75, 1), which
// goReader fills from debug.GCStats.PauseQuantiles.
func gcQuantiles(mf *dto.MetricFamily) bool {
	if len(mf.Metric) != 1 || mf.Metric[0].Summary == nil || len(mf.Metric[0].Summary.Quantile) != 5 {
		return false
	}
	for i, q := range mf.Metric[0].Summary.Quantile {
		if q.GetQuantile() != float64(i)/4 {
			return false
		}
	}
	return true
}

// zeroed returns a copy of mf with every value 0.
func zeroed(mf *dto.MetricFamily) *dto.MetricFamily {
	c := proto.Clone(mf).(*dto.MetricFamily)
	setSlots(c, make([]float64, slots(c)))
	return c
}

// slots is the number of values of mf, in the order the text encoder
// writes them: per series its value, or a summary's quantiles, sum and
// count.
func slots(mf *dto.MetricFamily) int {
	n := 0
	for _, m := range mf.Metric {
		if m.Summary != nil {
			n += len(m.Summary.Quantile) + 2
		} else {
			n++
		}
	}
	return n
}

// setSlots sets mf's values to vals (slots order).
func setSlots(mf *dto.MetricFamily, vals []float64) {
	k := 0
	for _, m := range mf.Metric {
		switch {
		case m.Summary != nil:
			for _, q := range m.Summary.Quantile {
				q.Value = new(vals[k])
				k++
			}
			m.Summary.SampleSum = new(vals[k])
			m.Summary.SampleCount = new(uint64(vals[k+1]))
			k += 2
		case m.Counter != nil:
			m.Counter.Value = new(vals[k])
			k++
		case m.Gauge != nil:
			m.Gauge.Value = new(vals[k])
			k++
		case m.Untyped != nil:
			m.Untyped.Value = new(vals[k])
			k++
		}
	}
}

// read reads the runtime's and the process's figures now.
func (r *runtimeFamilies) read() *runtimeValues {
	r.mu.Lock()
	defer r.mu.Unlock()
	var v *runtimeValues
	if n := len(r.free); n > 0 {
		v, r.free = r.free[n-1], r.free[:n-1]
	} else {
		v = &runtimeValues{present: make([]bool, len(r.shapes)), vals: make([]float64, r.offs[len(r.shapes)])}
	}
	clear(v.present)
	if r.readFn != nil {
		r.readFn(v)
		return v
	}
	r.gr.read()
	for i, f := range r.goFill {
		if f != nil {
			f(r.gr, v.vals[r.offs[i]:r.offs[i+1]])
			v.present[i] = true
		}
	}
	r.cur = v
	r.proc.each(r.emit)
	r.cur = nil
	return v
}

// emitProc sets a process figure in the reading r.cur (made once as
// r.emit: a closure made at each reading would be allocated).
func (r *runtimeFamilies) emitProc(d *prometheus.Desc, _ prometheus.ValueType, x float64) {
	if i, ok := r.byDesc[d]; ok {
		r.cur.vals[r.offs[i]] = x
		r.cur.present[i] = true
	}
}

// release gives back reading v, which its reader no longer uses.
func (r *runtimeFamilies) release(v *runtimeValues) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.free) < maxFreeReadings {
		r.free = append(r.free, v)
	}
}

// families returns the families of reading v, as a registry holding
// RuntimeCollectors gathers them (new objects, the caller's).
func (r *runtimeFamilies) families(v *runtimeValues) []*dto.MetricFamily {
	var out []*dto.MetricFamily
	for i, mf := range r.shapes {
		if v.present[i] {
			c := proto.Clone(mf).(*dto.MetricFamily)
			setSlots(c, v.vals[r.offs[i]:r.offs[i+1]])
			out = append(out, c)
		}
	}
	return out
}

// textTemplate is one family encoded in one text format with its values
// left out: value k goes between parts[k] and parts[k+1].
type textTemplate struct {
	parts [][]byte
}

// templateSentinel is the value the templates are encoded with, cut out
// where it was written. It is an integer below 2^63, so that a summary's
// count (a uint64) is written as its float64 is.
const templateSentinel = 1.2345678901234567e18

var templateSentinelText = []byte(strconv.FormatFloat(templateSentinel, 'g', -1, 64))

// templates returns the families' templates in format f, made at the
// first scrape in f; nil when f is not a text format (those are encoded
// by expfmt from families) or a family does not encode to one.
func (r *runtimeFamilies) templates(f expfmt.Format) []textTemplate {
	if f.FormatType() != expfmt.TypeTextPlain {
		return nil
	}
	r.tmplMu.Lock()
	defer r.tmplMu.Unlock()
	if t, ok := r.tmpls[f]; ok {
		return t
	}
	t := make([]textTemplate, len(r.shapes))
	for i, mf := range r.shapes {
		var err error
		if t[i], err = makeTemplate(mf, f); err != nil {
			t = nil
			break
		}
	}
	if len(r.tmpls) < maxFormats {
		r.tmpls[f] = t
	}
	return t
}

// makeTemplate encodes mf in f with every value templateSentinel and cuts
// the text where the sentinels were written.
func makeTemplate(mf *dto.MetricFamily, f expfmt.Format) (textTemplate, error) {
	c := proto.Clone(mf).(*dto.MetricFamily)
	n := slots(c)
	vals := make([]float64, n)
	for k := range vals {
		vals[k] = templateSentinel
	}
	setSlots(c, vals)
	var b bytes.Buffer
	if err := expfmt.NewEncoder(&b, f).Encode(c); err != nil {
		return textTemplate{}, err
	}
	parts := bytes.Split(b.Bytes(), templateSentinelText)
	if len(parts) != n+1 {
		return textTemplate{}, fmt.Errorf("exporter: %s in %s: %d values written for %d", mf.GetName(), f, len(parts)-1, n)
	}
	return textTemplate{parts: parts}, nil
}

// appendText appends family i of reading v in the text format of t.
func (t textTemplate) appendText(b []byte, vals []float64) []byte {
	b = append(b, t.parts[0]...)
	for k, x := range vals {
		b = appendFloat(b, x)
		b = append(b, t.parts[k+1]...)
	}
	return b
}

// appendFloat appends f as expfmt's text encoder writes it (writeFloat).
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, "-1"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// runtimeDescriber describes the runtime families and collects none: it
// holds their names in the registry they are served beside (describer).
type runtimeDescriber struct{ r *runtimeFamilies }

func (d runtimeDescriber) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range d.r.descs {
		ch <- x
	}
}

func (runtimeDescriber) Collect(chan<- prometheus.Metric) {}

// goReader reads what client_golang's Go collector exports (default
// options), into buffers kept between readings: the runtime/metrics
// samples of its memstats-like families and of its default runtime
// metrics, and a debug.GCStats whose pause buffers ReadGCStats reuses.
type goReader struct {
	samples    []metrics.Sample
	idx        map[string]int
	gc         debug.GCStats
	goroutines int
	threads    int
	ms         runtime.MemStats
}

// The runtime/metrics names client_golang's Go collector reads (its
// rmNamesForMemStatsMetrics and default runtime metrics).
var goRMNames = []string{
	"/gc/heap/tiny/allocs:objects", "/gc/heap/allocs:objects", "/gc/heap/frees:objects",
	"/gc/heap/allocs:bytes", "/gc/heap/objects:objects", "/gc/heap/goal:bytes",
	"/memory/classes/total:bytes", "/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/released:bytes", "/memory/classes/heap/free:bytes", "/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes", "/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mspan/free:bytes", "/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/mcache/free:bytes", "/memory/classes/profiling/buckets:bytes",
	"/memory/classes/metadata/other:bytes", "/memory/classes/other:bytes",
	"/gc/gogc:percent", "/gc/gomemlimit:bytes", "/sched/gomaxprocs:threads",
}

// goRMFamilies are the default runtime metrics' families.
var goRMFamilies = map[string]string{
	"go_gc_gogc_percent":          "/gc/gogc:percent",
	"go_gc_gomemlimit_bytes":      "/gc/gomemlimit:bytes",
	"go_sched_gomaxprocs_threads": "/sched/gomaxprocs:threads",
}

func newGoReader() *goReader {
	g := &goReader{idx: map[string]int{}}
	known := map[string]bool{}
	for _, d := range metrics.All() {
		known[d.Name] = true
	}
	for _, n := range goRMNames {
		if known[n] { // as client_golang looks them up: the missing read as 0
			g.idx[n] = len(g.samples)
			g.samples = append(g.samples, metrics.Sample{Name: n})
		}
	}
	g.gc.PauseQuantiles = make([]time.Duration, 5)
	return g
}

// has tells whether family name's value can be read here (a default
// runtime metric that this Go does not have cannot).
func (g *goReader) has(name string) bool {
	if rm, ok := goRMFamilies[name]; ok {
		_, ok = g.idx[rm]
		return ok
	}
	return true
}

// read reads the figures, in client_golang's order: the base collector's
// (goroutines, threads, GC stats), then runtime/metrics.
func (g *goReader) read() {
	g.goroutines = runtime.NumGoroutine()
	g.threads, _ = runtime.ThreadCreateProfile(nil)
	debug.ReadGCStats(&g.gc)
	metrics.Read(g.samples)
	g.memStats()
}

// rm is runtime metric name's value read as client_golang reads it
// (unwrapScalarRMValue), 0 when this Go does not have it.
func (g *goReader) rm(name string) float64 {
	i, ok := g.idx[name]
	if !ok {
		return 0
	}
	switch v := g.samples[i].Value; v.Kind() {
	case metrics.KindUint64:
		return float64(v.Uint64())
	case metrics.KindFloat64:
		return v.Float64()
	}
	return 0
}

func (g *goReader) u(name string) uint64 {
	if i, ok := g.idx[name]; ok && g.samples[i].Value.Kind() == metrics.KindUint64 {
		return g.samples[i].Value.Uint64()
	}
	return 0
}

// memStats fills g.ms as client_golang's memStatsFromRM does.
func (g *goReader) memStats() {
	ms := &g.ms
	tiny := g.u("/gc/heap/tiny/allocs:objects")
	ms.Mallocs = g.u("/gc/heap/allocs:objects") + tiny
	ms.Frees = g.u("/gc/heap/frees:objects") + tiny
	ms.TotalAlloc = g.u("/gc/heap/allocs:bytes")
	ms.Sys = g.u("/memory/classes/total:bytes")
	ms.HeapAlloc = g.u("/memory/classes/heap/objects:bytes")
	ms.Alloc = ms.HeapAlloc
	ms.HeapInuse = ms.HeapAlloc + g.u("/memory/classes/heap/unused:bytes")
	ms.HeapReleased = g.u("/memory/classes/heap/released:bytes")
	ms.HeapIdle = ms.HeapReleased + g.u("/memory/classes/heap/free:bytes")
	ms.HeapSys = ms.HeapInuse + ms.HeapIdle
	ms.HeapObjects = g.u("/gc/heap/objects:objects")
	ms.StackInuse = g.u("/memory/classes/heap/stacks:bytes")
	ms.StackSys = ms.StackInuse + g.u("/memory/classes/os-stacks:bytes")
	ms.MSpanInuse = g.u("/memory/classes/metadata/mspan/inuse:bytes")
	ms.MSpanSys = ms.MSpanInuse + g.u("/memory/classes/metadata/mspan/free:bytes")
	ms.MCacheInuse = g.u("/memory/classes/metadata/mcache/inuse:bytes")
	ms.MCacheSys = ms.MCacheInuse + g.u("/memory/classes/metadata/mcache/free:bytes")
	ms.BuckHashSys = g.u("/memory/classes/profiling/buckets:bytes")
	ms.GCSys = g.u("/memory/classes/metadata/other:bytes")
	ms.OtherSys = g.u("/memory/classes/other:bytes")
	ms.NextGC = g.u("/gc/heap/goal:bytes")
}

// memstat returns a go_memstats_* family's value function.
func memstat(f func(ms *runtime.MemStats) uint64) func(*goReader, []float64) {
	return func(g *goReader, dst []float64) { dst[0] = float64(f(&g.ms)) }
}

// goValues are the Go collector's families' values, by name, as
// client_golang computes them (go_collector.go, go_collector_latest.go).
var goValues = map[string]func(g *goReader, dst []float64){
	"go_goroutines": func(g *goReader, dst []float64) { dst[0] = float64(g.goroutines) },
	"go_threads":    func(g *goReader, dst []float64) { dst[0] = float64(g.threads) },
	"go_gc_duration_seconds": func(g *goReader, dst []float64) {
		for i, q := range g.gc.PauseQuantiles {
			dst[i] = q.Seconds()
		}
		dst[5], dst[6] = g.gc.PauseTotal.Seconds(), float64(uint64(g.gc.NumGC))
	},
	"go_memstats_last_gc_time_seconds": func(g *goReader, dst []float64) {
		dst[0] = float64(g.gc.LastGC.UnixNano()) / 1e9
	},
	"go_info":                         func(_ *goReader, dst []float64) { dst[0] = 1 },
	"go_gc_gogc_percent":              func(g *goReader, dst []float64) { dst[0] = g.rm("/gc/gogc:percent") },
	"go_gc_gomemlimit_bytes":          func(g *goReader, dst []float64) { dst[0] = g.rm("/gc/gomemlimit:bytes") },
	"go_sched_gomaxprocs_threads":     func(g *goReader, dst []float64) { dst[0] = g.rm("/sched/gomaxprocs:threads") },
	"go_memstats_alloc_bytes":         memstat(func(ms *runtime.MemStats) uint64 { return ms.Alloc }),
	"go_memstats_alloc_bytes_total":   memstat(func(ms *runtime.MemStats) uint64 { return ms.TotalAlloc }),
	"go_memstats_sys_bytes":           memstat(func(ms *runtime.MemStats) uint64 { return ms.Sys }),
	"go_memstats_mallocs_total":       memstat(func(ms *runtime.MemStats) uint64 { return ms.Mallocs }),
	"go_memstats_frees_total":         memstat(func(ms *runtime.MemStats) uint64 { return ms.Frees }),
	"go_memstats_heap_alloc_bytes":    memstat(func(ms *runtime.MemStats) uint64 { return ms.HeapAlloc }),
	"go_memstats_heap_sys_bytes":      memstat(func(ms *runtime.MemStats) uint64 { return ms.HeapSys }),
	"go_memstats_heap_idle_bytes":     memstat(func(ms *runtime.MemStats) uint64 { return ms.HeapIdle }),
	"go_memstats_heap_inuse_bytes":    memstat(func(ms *runtime.MemStats) uint64 { return ms.HeapInuse }),
	"go_memstats_heap_released_bytes": memstat(func(ms *runtime.MemStats) uint64 { return ms.HeapReleased }),
	"go_memstats_heap_objects":        memstat(func(ms *runtime.MemStats) uint64 { return ms.HeapObjects }),
	"go_memstats_stack_inuse_bytes":   memstat(func(ms *runtime.MemStats) uint64 { return ms.StackInuse }),
	"go_memstats_stack_sys_bytes":     memstat(func(ms *runtime.MemStats) uint64 { return ms.StackSys }),
	"go_memstats_mspan_inuse_bytes":   memstat(func(ms *runtime.MemStats) uint64 { return ms.MSpanInuse }),
	"go_memstats_mspan_sys_bytes":     memstat(func(ms *runtime.MemStats) uint64 { return ms.MSpanSys }),
	"go_memstats_mcache_inuse_bytes":  memstat(func(ms *runtime.MemStats) uint64 { return ms.MCacheInuse }),
	"go_memstats_mcache_sys_bytes":    memstat(func(ms *runtime.MemStats) uint64 { return ms.MCacheSys }),
	"go_memstats_buck_hash_sys_bytes": memstat(func(ms *runtime.MemStats) uint64 { return ms.BuckHashSys }),
	"go_memstats_gc_sys_bytes":        memstat(func(ms *runtime.MemStats) uint64 { return ms.GCSys }),
	"go_memstats_other_sys_bytes":     memstat(func(ms *runtime.MemStats) uint64 { return ms.OtherSys }),
	"go_memstats_next_gc_bytes":       memstat(func(ms *runtime.MemStats) uint64 { return ms.NextGC }),
}
