// Families prepared when a source changes: the Collector as a Gatherer.
// See doc.go for the overview.

package exporter

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// famInfo is one metric family the Collector can emit: what the registry
// reads from a Desc to make the family (Desc has no getters).
type famInfo struct {
	idx        int // index in famList
	name, help string
}

// descFams and famList are every Desc made by newDesc, in the order made.
var (
	descFams = map[*prometheus.Desc]famInfo{}
	famList  []famInfo
)

func recordDesc(d *prometheus.Desc, name, help string) {
	fi := famInfo{idx: len(famList), name: name, help: help}
	descFams[d] = fi
	famList = append(famList, fi)
}

// famMetric is one series written once into the form the exposition
// encoders read, with its family.
type famMetric struct {
	fam int // famList index
	m   *dto.Metric
}

// writeMetrics writes metrics, made from descs of newDesc, as famMetrics.
func writeMetrics(metrics []prometheus.Metric) []famMetric {
	out := make([]famMetric, len(metrics))
	for i, m := range metrics {
		fi, ok := descFams[m.Desc()]
		if !ok {
			panic(fmt.Sprintf("exporter: metric of an unknown Desc %v", m.Desc()))
		}
		d := new(dto.Metric)
		if err := m.Write(d); err != nil {
			panic(fmt.Sprintf("exporter: write %v: %v", m.Desc(), err))
		}
		out[i] = famMetric{fam: fi.idx, m: d}
	}
	return out
}

// prepared is the Collector's families for one state of its sources, and
// their exposition in the formats scrapers asked for (encoded.go).
type prepared struct {
	key  []uint64 // per source: 0 down, version+1 up
	fams []*dto.MetricFamily
	// in is what the pass read of each source (sourceResult.in), errs why
	// each source was down (nil: up): when every source reads the same
	// again, the pass would decide the same (Collector.unchanged).
	in   []uint64
	errs []error

	mu sync.Mutex
	// encoded holds fams encoded per format (at most maxFormats), filled
	// when a source changes (Collector.formats) or by the first scrape
	// asking for another format.
	encoded map[expfmt.Format]*encoded
}

// Gatherer returns what /metrics should serve for reg and the Collector
// together: reg's families (the runtime collectors, the snapshot
// directory's own counters) merged with the Collector's, which are
// prepared when a source changes rather than at scrape time. The Collector
// must not be registered with reg (make it with a nil Registerer):
// Gatherer registers with reg a collector that only describes the
// Collector's metrics, so a clash of names or a second registration fails
// here, as registering the Collector would, and the scrape cannot repeat a
// family.
//
// What a scrape serves is what a registry holding the Collector would
// gather (same families, HELP, types, series, order and up/down
// decisions, every scrape re-checking each source's state), but when
// every source is a VersionedSource whose version has not changed since
// the families were last assembled, those families are served as they
// are: no metric is built, written, checked or sorted at scrape time.
// Sources that can tell when they change (PolledSource after each poll,
// SnapshotDir after each rescan) have the Collector assemble the new
// families then, and encode them in the formats scraped lately, on a
// goroutine of its own (one for a burst of changes), so that the scrape
// after a poll finds them ready. A source that is not versioned (a live allocator, a
// ContextSource under Options.SourceTimeout) is collected at every scrape,
// as Collect does.
func (c *Collector) Gatherer(reg *prometheus.Registry) (prometheus.Gatherer, error) {
	if reg == nil {
		return nil, fmt.Errorf("exporter: Gatherer needs a registry")
	}
	if err := reg.Register(describer{}); err != nil {
		return nil, fmt.Errorf("exporter: register collector: %w", err)
	}
	c.gathering.Store(true)
	if c.allVersioned {
		for _, s := range c.sources {
			if n, ok := s.(notifier); ok {
				n.onChange(c.changed)
			}
		}
		c.changed() // what the sources hold already (a first rescan)
	}
	return merged{reg: reg, c: c}, nil
}

// GathererWithRuntime is Gatherer with the families of RuntimeCollectors
// served beside reg's and the Collector's, as if they were registered
// with reg (do not register them): the daemon's wiring. Where it can
// (Linux, and a client_golang Go collector whose every family it knows:
// runtime_families.go), their values are read at every scrape into
// buffers kept between scrapes and, in the text formats, written into
// their exposition encoded once, without a registry's gathering; else
// RuntimeCollectors are registered with reg.
func (c *Collector) GathererWithRuntime(reg *prometheus.Registry) (prometheus.Gatherer, error) {
	if reg == nil {
		return nil, fmt.Errorf("exporter: Gatherer needs a registry")
	}
	rt, err := newRuntimeFamilies()
	if err != nil {
		for _, col := range RuntimeCollectors() {
			if err := reg.Register(col); err != nil {
				return nil, fmt.Errorf("exporter: register runtime collectors: %w", err)
			}
		}
		return c.Gatherer(reg)
	}
	if err := reg.Register(runtimeDescriber{rt}); err != nil {
		return nil, fmt.Errorf("exporter: register runtime collectors: %w", err)
	}
	g, err := c.Gatherer(reg)
	if err != nil {
		reg.Unregister(runtimeDescriber{rt})
		return nil, err
	}
	m := g.(merged)
	m.rt = rt
	return m, nil
}

// describer describes the Collector's metrics and collects none: it holds
// their names in a registry that the Collector is gathered beside.
type describer struct{}

func (describer) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

func (describer) Collect(chan<- prometheus.Metric) {}

// notifier is a VersionedSource that calls its hooks after each change of
// its version or state (a poll, a rescan).
type notifier interface {
	onChange(func())
}

// changed marks the families out of date after a source changed and,
// unless a preparation is running, starts one (prepare) on its own
// goroutine: the source's goroutine does not wait for it, and a burst of
// changes (the polls of many sources at the same instant) is assembled
// and encoded a few times, not once per source (BenchmarkPollPrepare;
// docs/benchmarks.md, "Issue 27, third round").
func (c *Collector) changed() {
	c.dirty.Store(true)
	if c.preparing.CompareAndSwap(false, true) {
		c.prepWG.Add(1)
		go c.prepare()
	}
}

// prepare assembles the families, looping while changes are marked, and
// encodes the last state in the formats scraped lately.
func (c *Collector) prepare() {
	defer c.prepWG.Done()
	for {
		for c.dirty.Swap(false) {
			p := c.families(false)
			if !c.dirty.Load() { // else a newer state is assembled next: encode that
				p.prepareFormats(c.scrapedFormats())
			}
		}
		c.preparing.Store(false)
		// A change marked between the last Swap and the Store saw
		// preparing set and left its state to this loop.
		if !c.dirty.Load() || !c.preparing.CompareAndSwap(false, true) {
			return
		}
	}
}

// settle waits until no preparation runs (tests and benchmarks, once the
// changes they made are done).
func (c *Collector) settle() { c.prepWG.Wait() }

// merged is Collector.Gatherer's Gatherer.
type merged struct {
	reg prometheus.Gatherer
	c   *Collector
	rt  *runtimeFamilies // GathererWithRuntime's, else nil
}

// gatherReg gathers the registry and, with GathererWithRuntime, the
// runtime families (as dto, merged by name).
func (g merged) gatherReg() ([]*dto.MetricFamily, error) {
	fams, err := g.reg.Gather()
	if g.rt == nil {
		return fams, err
	}
	v := g.rt.read()
	rt := g.rt.families(v)
	g.rt.release(v)
	return mergeFamilies(fams, rt), err
}

// Gather merges the registry's families and the Collector's (mergeByName).
func (g merged) Gather() ([]*dto.MetricFamily, error) {
	fams, err := g.gatherReg()
	return mergeFamilies(fams, g.c.families(true).fams), err
}

// mergeFamilies returns a and b, both sorted by name, in name order.
func mergeFamilies(a, b []*dto.MetricFamily) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(a)+len(b))
	mergeByName(a, b, func(i int, inB bool) {
		if inB {
			out = append(out, b[i])
		} else {
			out = append(out, a[i])
		}
	})
	return out
}

// mergeByName calls each with the index of every family of fams and mine,
// both sorted by name, in name order (their names differ: describer).
func mergeByName(fams, mine []*dto.MetricFamily, each func(i int, isMine bool)) {
	i, j := 0, 0
	for i < len(fams) || j < len(mine) {
		if j == len(mine) || i < len(fams) && fams[i].GetName() < mine[j].GetName() {
			each(i, false)
			i++
		} else {
			each(j, true)
			j++
		}
	}
}

// families returns the Collector's families for the sources' current
// state: the prepared ones when every source is versioned and none changed
// since they were assembled, else newly assembled (and kept when every
// source is versioned). The result is shared and must not be modified.
// log is pass's.
func (c *Collector) families(log bool) *prepared {
	if p := c.unchanged(log); p != nil {
		return p
	}
	res := c.pass(log)
	key := make([]uint64, len(res))
	in := make([]uint64, len(res))
	errs := make([]error, len(res))
	keep := true
	for i, r := range res {
		in[i], errs[i] = r.in, r.err
		switch {
		case r.up == 0:
		case r.ent.versioned:
			key[i] = r.ent.version + 1
		default:
			keep = false
		}
	}
	c.mu.Lock()
	p := c.prep
	c.mu.Unlock()
	if keep && p != nil && slices.Equal(p.key, key) {
		return p
	}
	np := &prepared{key: key, fams: assemble(res), in: in, errs: errs}
	if keep {
		c.mu.Lock()
		c.prep = np
		c.mu.Unlock()
	}
	return np
}

// unchanged returns the families last prepared when every source is a
// VersionedSource that reads as it did when they were assembled (the same
// version, or failing both times): a pass would decide the same sources
// up, with the same series, so none is asked for its samples and no label
// set is checked again. With log it logs as pass does: a source's own
// error as it reads now, else the reason it was down then. Else nil.
func (c *Collector) unchanged(log bool) *prepared {
	if !c.allVersioned {
		return nil
	}
	c.mu.Lock()
	p := c.prep
	c.mu.Unlock()
	if p == nil || len(p.in) != len(c.sources) {
		return nil
	}
	var own []error // the sources' own errors now, allocated at the first
	for i, s := range c.sources {
		v, err := versionOf(s.(VersionedSource))
		in := v + 1
		if err != nil {
			in = 0
			if own == nil {
				own = make([]error, len(c.sources))
			}
			own[i] = err
		}
		if in != p.in[i] {
			return nil
		}
	}
	if log {
		for i, s := range c.sources {
			err := p.errs[i]
			if own != nil && own[i] != nil {
				err = own[i]
			}
			c.logState(s.Name(), err)
		}
	}
	return p
}

// assemble makes the families of one pass as a registry gathering the
// Collector would: the series of each family sorted by label values,
// families without series left out, families in name order.
func assemble(res []sourceResult) []*dto.MetricFamily {
	byFam := make([][]*dto.Metric, len(famList))
	upFam := descFams[sourceUpDesc].idx
	for _, r := range res {
		if r.up == 1 {
			for _, fm := range r.ent.dtos {
				byFam[fm.fam] = append(byFam[fm.fam], fm.m)
			}
		}
		up := prometheus.MustNewConstMetric(sourceUpDesc, prometheus.GaugeValue, r.up, r.name)
		byFam[upFam] = append(byFam[upFam], writeMetrics([]prometheus.Metric{up})[0].m)
	}
	var out []*dto.MetricFamily
	for i, ms := range byFam {
		if len(ms) == 0 {
			continue
		}
		slices.SortFunc(ms, compareMetrics)
		fi := famList[i]
		out = append(out, &dto.MetricFamily{Name: new(fi.name), Help: new(fi.help), Type: metricType(ms[0]), Metric: ms})
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// compareMetrics orders the series of one family by their label values,
// as client_golang's registry does (labels sorted by name within each).
func compareMetrics(a, b *dto.Metric) int {
	if len(a.Label) != len(b.Label) {
		return len(a.Label) - len(b.Label)
	}
	for n, lp := range a.Label {
		if c := strings.Compare(lp.GetValue(), b.Label[n].GetValue()); c != 0 {
			return c
		}
	}
	return 0
}

// metricType is the family type of a written const metric.
func metricType(m *dto.Metric) *dto.MetricType {
	switch {
	case m.Counter != nil:
		return dto.MetricType_COUNTER.Enum()
	case m.Untyped != nil:
		return dto.MetricType_UNTYPED.Enum()
	default:
		return dto.MetricType_GAUGE.Enum()
	}
}
