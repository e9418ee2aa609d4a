package exporter

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// runtimeOf returns the runtime families GathererWithRuntime serves
// through g, failing where they should be served without a registry.
func runtimeOf(t *testing.T, g prometheus.Gatherer) *runtimeFamilies {
	t.Helper()
	m, ok := g.(merged)
	if !ok || m.rt == nil {
		if runtime.GOOS == "linux" {
			t.Fatalf("GathererWithRuntime on linux serves the runtime families through a registry (%T)", g)
		}
		t.Skip("the runtime families are registered with the registry here")
	}
	return m.rt
}

// TestRuntimeFamiliesAsClientGolang: the runtime families are those of
// a registry holding RuntimeCollectors (client_golang's Go collector and
// NewProcessCollector): the same names, help texts, types, labels and
// summary quantiles in the same order, and the same values where they
// cannot move between the two readings (the GC is held off meanwhile);
// the others between two readings of client_golang's, or close to them.
func TestRuntimeFamiliesAsClientGolang(t *testing.T) {
	c, err := New(nil, kindsSources()...)
	if err != nil {
		t.Fatal(err)
	}
	rt := runtimeOf(t, withRuntime(t, c, prometheus.NewRegistry()))
	ref := prometheus.NewRegistry()
	ref.MustRegister(RuntimeCollectors()...)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()

	before, err := ref.Gather()
	if err != nil {
		t.Fatal(err)
	}
	v := rt.read()
	mine := rt.families(v)
	rt.release(v)
	after, err := ref.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mine) != len(before) {
		t.Fatalf("%d families, client_golang's %d", len(mine), len(before))
	}
	stable := map[string]bool{
		"go_info": true, "go_gc_gogc_percent": true, "go_gc_gomemlimit_bytes": true,
		"go_sched_gomaxprocs_threads": true, "go_gc_duration_seconds": true,
		"go_memstats_last_gc_time_seconds": true, "process_max_fds": true,
		"process_virtual_memory_max_bytes": true, "process_start_time_seconds": true,
	}
	for i, mf := range mine {
		b, a := before[i], after[i]
		if mf.GetName() != b.GetName() || mf.GetHelp() != b.GetHelp() || mf.GetType() != b.GetType() || mf.GetUnit() != b.GetUnit() || len(mf.Metric) != len(b.Metric) {
			t.Fatalf("family %d: %s %q %v (%d series), client_golang's %s %q %v (%d)", i,
				mf.GetName(), mf.GetHelp(), mf.GetType(), len(mf.Metric), b.GetName(), b.GetHelp(), b.GetType(), len(b.Metric))
		}
		for j, m := range mf.Metric {
			if got, want := labelString(m), labelString(b.Metric[j]); got != want {
				t.Errorf("%s series %d: labels %s, client_golang's %s", mf.GetName(), j, got, want)
			}
		}
		got, lo, hi := flat(mf), flat(b), flat(a)
		if len(got) != len(lo) {
			t.Fatalf("%s: %d values, client_golang's %d", mf.GetName(), len(got), len(lo))
		}
		for k, x := range got {
			switch {
			case stable[mf.GetName()]:
				if x != lo[k] || x != hi[k] {
					t.Errorf("%s value %d: %v, client_golang's %v then %v", mf.GetName(), k, x, lo[k], hi[k])
				}
			case strings.HasSuffix(mf.GetName(), "_total") && mf.GetType() == dto.MetricType_COUNTER:
				if x < lo[k] || x > hi[k] {
					t.Errorf("%s value %d: %v, not between client_golang's %v and %v", mf.GetName(), k, x, lo[k], hi[k])
				}
			default: // gauges that move with each reading (the scavenger returns MBs between two)
				in := math.Max(math.Min(lo[k], hi[k]), math.Min(x, math.Max(lo[k], hi[k]))) // x brought into [lo, hi]
				if d := math.Abs(x - in); d > 1<<20 && d > 0.25*math.Abs(in) {
					t.Errorf("%s value %d: %v, client_golang's %v then %v", mf.GetName(), k, x, lo[k], hi[k])
				}
			}
		}
	}
}

func withRuntime(t *testing.T, c *Collector, reg *prometheus.Registry) prometheus.Gatherer {
	t.Helper()
	g, err := c.GathererWithRuntime(reg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func labelString(m *dto.Metric) string {
	var b strings.Builder
	for _, lp := range m.Label {
		b.WriteString(lp.GetName() + "=" + lp.GetValue() + ",")
	}
	if m.Summary != nil {
		for _, q := range m.Summary.Quantile {
			b.WriteString("q" + expfmtFloat(q.GetQuantile()) + ",")
		}
	}
	return b.String()
}

func expfmtFloat(f float64) string { return string(appendFloat(nil, f)) }

// flat is mf's values in slot order.
func flat(mf *dto.MetricFamily) []float64 {
	var out []float64
	for _, m := range mf.Metric {
		switch {
		case m.Summary != nil:
			for _, q := range m.Summary.Quantile {
				out = append(out, q.GetValue())
			}
			out = append(out, m.Summary.GetSampleSum(), float64(m.Summary.GetSampleCount()))
		case m.Counter != nil:
			out = append(out, m.Counter.GetValue())
		case m.Gauge != nil:
			out = append(out, m.Gauge.GetValue())
		case m.Untyped != nil:
			out = append(out, m.Untyped.GetValue())
		}
	}
	return out
}

// TestRuntimeFamiliesSameExposition: the daemon's handler over
// GathererWithRuntime answers byte for byte as promhttp over a registry
// holding the Collector, the fresh collectors and the runtime families
// of the same reading (readings drawn at random: values expfmt writes
// specially, integers past 2^53, the process families present or not),
// in every format and encoding of sameHandlers, from the templates in the
// text formats.
func TestRuntimeFamiliesSameExposition(t *testing.T) {
	srcs := polledFleet(t, 1, 2)
	for _, gz := range []bool{false, true} {
		for _, om := range []bool{false, true} {
			fresh := freshCollectors()
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(fresh...)
			if _, err := New(reg, srcs...); err != nil {
				t.Fatal(err)
			}
			c, err := New(nil, srcs...)
			if err != nil {
				t.Fatal(err)
			}
			greg := prometheus.NewPedanticRegistry()
			greg.MustRegister(fresh...)
			g := withRuntime(t, c, greg)
			c.settle()
			rt := runtimeOf(t, g)
			cur := &runtimeValues{present: make([]bool, len(rt.shapes)), vals: make([]float64, rt.offs[len(rt.shapes)])}
			rt.readFn = func(v *runtimeValues) {
				copy(v.present, cur.present)
				copy(v.vals, cur.vals)
			}
			// The registry's families and the runtime's sorted by name,
			// as a registry holding both gathers them (prometheus.Gatherers
			// would drop the families' units).
			want := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
				fams, err := reg.Gather()
				fams = append(fams, rt.families(cur)...)
				slices.SortFunc(fams, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
				return fams, err
			})
			cfg := ServerConfig{Gzip: gz, OpenMetrics: om}
			cfg.defaults()
			refCfg := cfg
			refCfg.Gatherer, cfg.Gatherer = want, g
			wantH, gotH := metricsHandler(refCfg), metricsHandler(cfg)
			r := rand.New(rand.NewPCG(uint64(len(t.Name())), 7))
			for step := range 6 {
				drawRuntime(r, rt, cur, step == 0)
				for _, a := range testAccepts {
					for _, e := range testEncodings {
						body := sameResponse(t, wantH, gotH, a, e)
						if a == "text/plain" && !strings.Contains(body, "# TYPE go_gc_duration_seconds summary") {
							t.Fatalf("no runtime family served:\n%s", body)
						}
					}
				}
			}
		}
	}
}

// drawRuntime draws a reading: every family present at the first, else
// each process family present or not; values among those expfmt writes
// specially, integers past 2^53 and random ones (a summary's count an
// integer).
func drawRuntime(r *rand.Rand, rt *runtimeFamilies, v *runtimeValues, all bool) {
	special := []float64{0, math.Copysign(0, -1), 1, -1, 0.25, 1e-9, 123456789, 1 << 60, 1.5e300, math.NaN(), math.Inf(1), math.Inf(-1), 9.223372036854776e+18}
	for i, mf := range rt.shapes {
		v.present[i] = all || !strings.HasPrefix(mf.GetName(), "process_") || r.IntN(3) > 0
		vals := v.vals[rt.offs[i]:rt.offs[i+1]]
		for k := range vals {
			if r.IntN(2) == 0 {
				vals[k] = special[r.IntN(len(special))]
			} else {
				vals[k] = r.NormFloat64() * math.Pow(10, float64(r.IntN(30)-10))
			}
		}
		k := 0
		for _, m := range mf.Metric {
			if m.Summary != nil {
				k += len(m.Summary.Quantile) + 2
				vals[k-1] = float64(r.Uint64N(1 << 62))
			} else {
				k++
			}
		}
	}
}

// TestRuntimeReadNoGarbage: a reading of the runtime families allocates
// (nearly) nothing, and writing them from their templates nothing
// (client_golang's Go collector allocates ~30 KB a collection,
// debug.ReadGCStats' buffers and a map of quantiles among them).
func TestRuntimeReadNoGarbage(t *testing.T) {
	c, err := New(nil, kindsSources()...)
	if err != nil {
		t.Fatal(err)
	}
	rt := runtimeOf(t, withRuntime(t, c, prometheus.NewRegistry()))
	rt.release(rt.read())
	// The process reader's open(2) and stat(2) copy their paths (syscall's
	// BytePtrFromString): three small allocations, nothing else.
	if n := testing.AllocsPerRun(50, func() { rt.release(rt.read()) }); n > 3 {
		t.Errorf("%v allocations a reading", n)
	}
	// Nor after a collection (the readings are kept outside sync.Pool).
	if n := testing.AllocsPerRun(10, func() { runtime.GC(); rt.release(rt.read()) }); n > 3 {
		t.Errorf("%v allocations a reading after a collection", n)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range 100 {
		rt.release(rt.read())
	}
	runtime.ReadMemStats(&m1)
	if b := (m1.TotalAlloc - m0.TotalAlloc) / 100; b > 256 {
		t.Errorf("%d bytes allocated a reading", b)
	}
	tmpl := rt.templates(expfmt.NewFormat(expfmt.TypeTextPlain))
	if tmpl == nil {
		t.Fatal("no text templates")
	}
	v := rt.read()
	defer rt.release(v)
	var b []byte
	if n := testing.AllocsPerRun(50, func() {
		b = b[:0]
		for k := range rt.shapes {
			b = tmpl[k].appendText(b, v.vals[rt.offs[k]:rt.offs[k+1]])
		}
	}); n != 0 {
		t.Errorf("%v allocations writing the families", n)
	}
}

// TestGathererWithRuntimeClash: a registry already holding a runtime
// family's name refuses GathererWithRuntime, as registering
// RuntimeCollectors would.
func TestGathererWithRuntimeClash(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "go_goroutines", Help: "Mine."}))
	c, err := New(nil, kindsSources()...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GathererWithRuntime(reg); err == nil {
		t.Fatal("GathererWithRuntime over a registry holding go_goroutines: no error")
	}
	// A clash with the Collector's names leaves the runtime's free.
	reg = prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpufrag_source_up", Help: "Mine."}))
	if _, err := c.GathererWithRuntime(reg); err == nil {
		t.Fatal("GathererWithRuntime over a registry holding gpufrag_source_up: no error")
	}
	// (With client_golang's help text: a registry keeps a name's help and
	// labels once seen, even after Unregister.)
	if err := reg.Register(prometheus.NewGauge(prometheus.GaugeOpts{Name: "go_goroutines", Help: "Number of goroutines that currently exist."})); err != nil {
		t.Errorf("after a failed GathererWithRuntime, go_goroutines is still held: %v", err)
	}
}

// TestRuntimeFamiliesConcurrentScrapes: scrapes at once through the
// daemon's handler (the kept bodies, negotiations, readings and the
// process collector's kept descriptors shared among them) serve complete
// expositions: every family of a gather, each parsed, the process
// families read through the kept descriptors. Run it under -race.
func TestRuntimeFamiliesConcurrentScrapes(t *testing.T) {
	c, err := New(nil, kindsSources()...)
	if err != nil {
		t.Fatal(err)
	}
	g := withRuntime(t, c, prometheus.NewRegistry())
	if runtimeOf(t, g) == nil {
		t.Skip("no runtime families without a registry here")
	}
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, mf := range fams {
		want = append(want, mf.GetName())
	}
	h := Handler(ServerConfig{Gatherer: g}, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 25 {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				parser := expfmt.NewTextParser(model.UTF8Validation)
				got, err := parser.TextToMetricFamilies(rec.Body)
				if err != nil {
					errs <- err
					return
				}
				names := slices.Sorted(maps.Keys(got))
				if !slices.Equal(names, want) {
					errs <- fmt.Errorf("families %v, want %v", names, want)
					return
				}
				if fds := got["process_open_fds"].GetMetric()[0].GetGauge().GetValue(); fds < 3 {
					errs <- fmt.Errorf("process_open_fds %v", fds)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
