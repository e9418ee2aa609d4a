package exporter

import (
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/frag"
	"github.com/gpufrag/gpufrag/kv/blockpool"
	"github.com/gpufrag/gpufrag/mem"
)

var update = flag.Bool("update", false, "rewrite testdata/*.prom golden files")

// fragmentedCaching returns a caching allocator on a 1 GiB device (256 MiB
// other use) left with scattered holes, and one OOM.
func fragmentedCaching(t testing.TB) alloc.Allocator {
	t.Helper()
	dev, err := mem.NewDevice(1*mem.GiB, 256*mem.MiB)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := caching.ParseConfig("")
	if err != nil {
		t.Fatal(err)
	}
	a, err := caching.New(dev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Ten 6 MiB blocks carved from one segment, every other one freed: the
	// holes cannot merge.
	var hs []alloc.Handle
	for range 10 {
		b, err := a.Alloc(6*mem.MiB, 0)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, b.Handle)
	}
	for i := 0; i < len(hs); i += 2 {
		if err := a.Free(hs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Alloc(3*mem.MiB+1000, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Alloc(4*mem.GiB, 0); !errors.Is(err, alloc.ErrOutOfMemory) {
		t.Fatalf("want OOM, got %v", err)
	}
	return a
}

// usedPool returns a 17-block pool (16 usable) of 16-token blocks with 6
// blocks held, 2 of them prefix-cached, and 2 cached blocks evictable.
func usedPool(t testing.TB) *blockpool.Pool {
	t.Helper()
	p, err := blockpool.New(17, 16, blockpool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	held, err := p.Allocate(nil, 6)
	if err != nil {
		t.Fatal(err)
	}
	done, err := p.Allocate(nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range append(held[:2:2], done...) {
		if err := p.SetFill(id, 16); err != nil {
			t.Fatal(err)
		}
		if err := p.CacheFullBlock(id, blockpool.BlockHash(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Free(done); err != nil {
		t.Fatal(err)
	}
	return p
}

func failing(name string) Source {
	return FuncSource{SourceName: name, Fn: func() ([]Sample, error) {
		return nil, errors.New("nvml: driver not loaded")
	}}
}

func goldenPath(name string) string { return filepath.Join("testdata", name+".prom") }

// compareGolden checks the registry's exposition against testdata/name.prom
// (rewritten with -update).
func compareGolden(t *testing.T, g prometheus.Gatherer, name string) {
	t.Helper()
	path := goldenPath(name)
	if *update {
		fams, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		if err := writeText(&sb, fams); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := testutil.GatherAndCompare(g, f); err != nil {
		t.Fatal(err)
	}
}

func TestGolden(t *testing.T) {
	var mu sync.Mutex
	a := fragmentedCaching(t)
	p := usedPool(t)
	reg := prometheus.NewPedanticRegistry()
	c, err := New(reg,
		NewAllocatorSource("engine", Labels{GPU: "0", Instance: "vllm-0", Model: "llama-3-8b", Pool: "caching"}, a, &mu),
		NewBlockPoolSource("kv", Labels{GPU: "0", Instance: "vllm-0", Model: "llama-3-8b", Pool: "kv"}, p, &mu),
	)
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, reg, "engine")

	// The same text through CollectAndCompare (its own pedantic registry).
	f, err := os.Open(goldenPath("engine"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := testutil.CollectAndCompare(c, f); err != nil {
		t.Fatal(err)
	}

	// The exported values are frag's and blockpool's, not recomputed here.
	m := frag.Compute(a.Layout())
	if got := testutil.ToFloat64(onlyMetric(t, c, "gpufrag_fragmentation_ratio")); got != m.FragRate {
		t.Errorf("fragmentation_ratio = %v, frag.Compute says %v", got, m.FragRate)
	}
	if m.FragRate <= 0 {
		t.Errorf("fixture is not fragmented: %+v", m)
	}
	if got := testutil.ToFloat64(onlyMetric(t, c, "gpufrag_kv_cache_usage_ratio")); got != p.Usage() {
		t.Errorf("kv_cache_usage_ratio = %v, pool says %v", got, p.Usage())
	}
	if got := testutil.ToFloat64(onlyMetric(t, c, "gpufrag_ooms_total")); got != float64(a.Stats().OOMs) || got != 1 {
		t.Errorf("ooms_total = %v, stats say %d", got, a.Stats().OOMs)
	}
}

// onlyMetric returns a collector that forwards only c's metrics of one name.
func onlyMetric(t *testing.T, c prometheus.Collector, name string) prometheus.Collector {
	t.Helper()
	return filterCollector{c, name}
}

type filterCollector struct {
	c    prometheus.Collector
	name string
}

func (f filterCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(f, ch) }

func (f filterCollector) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() { f.c.Collect(all); close(all) }()
	for m := range all {
		if strings.Contains(m.Desc().String(), `fqName: "`+f.name+`"`) {
			ch <- m
		}
	}
}

func TestLint(t *testing.T) {
	c, err := New(nil,
		NewAllocatorSource("engine", Labels{GPU: "0", Pool: "caching"}, fragmentedCaching(t), nil),
		NewBlockPoolSource("kv", Labels{GPU: "0", Pool: "kv"}, usedPool(t), nil),
		failing("nvml"),
	)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestFailingSources: a source that errors, panics, or repeats a label set
// another source already exported reports source_up 0 and nothing else; the
// healthy source is exported in full and the scrape itself succeeds.
func TestFailingSources(t *testing.T) {
	good := NewAllocatorSource("engine", Labels{GPU: "0", Pool: "caching"}, fragmentedCaching(t), nil)
	panicky := FuncSource{SourceName: "panicky", Fn: func() ([]Sample, error) { panic("boom") }}
	dup := FuncSource{SourceName: "zz-dup", Fn: func() ([]Sample, error) {
		return []Sample{
			{Labels: Labels{GPU: "1"}, Memory: &Memory{}},
			{Labels: Labels{GPU: "0", Pool: "caching"}, Memory: &Memory{}}, // already exported by engine
		}, nil
	}}
	twice := FuncSource{SourceName: "twice", Fn: func() ([]Sample, error) {
		return []Sample{{Labels: Labels{GPU: "7"}, KV: &KV{}}, {Labels: Labels{GPU: "7"}, KV: &KV{}}}, nil
	}}
	// The same label set twice for memory, with a KV sample (allowed) between.
	twiceMem := FuncSource{SourceName: "twice-mem", Fn: func() ([]Sample, error) {
		return []Sample{
			{Labels: Labels{GPU: "8"}, Memory: &Memory{}},
			{Labels: Labels{GPU: "8"}, KV: &KV{}},
			{Labels: Labels{GPU: "8"}, Memory: &Memory{}},
		}, nil
	}}
	negative := FuncSource{SourceName: "negative", Fn: func() ([]Sample, error) {
		return []Sample{{Labels: Labels{GPU: "9"}, Memory: &Memory{OOMs: -1}}}, nil
	}}
	badUTF8 := FuncSource{SourceName: "utf8", Fn: func() ([]Sample, error) {
		return []Sample{{Labels: Labels{Model: "\xff"}, KV: &KV{}}}, nil
	}}
	reg := prometheus.NewPedanticRegistry()
	if _, err := New(reg, dup, failing("nvml"), good, panicky, twice, twiceMem, negative, badUTF8); err != nil {
		t.Fatal(err)
	}
	compareGolden(t, reg, "failing")
	if n, err := testutil.GatherAndCount(reg, "gpufrag_reserved_bytes"); err != nil || n != 1 {
		t.Errorf("reserved_bytes series = %d (%v), want 1 (the healthy source only)", n, err)
	}
}

// TestDeterministic: the order sources are given in and the order a source
// returns its samples in do not change the collected sequence.
func TestDeterministic(t *testing.T) {
	samples := []Sample{
		{Labels: Labels{GPU: "1", Instance: "b"}, KV: &KV{Blocks: 2}},
		{Labels: Labels{GPU: "0", Instance: "b"}, KV: &KV{Blocks: 3}},
		{Labels: Labels{GPU: "0", Instance: "a"}, KV: &KV{Blocks: 4}},
		{Labels: Labels{GPU: "0", Instance: "a", Model: "m"}, Memory: &Memory{OOMs: 2}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sequence := func(order []int) string {
		shuffled := append([]Sample(nil), samples...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		srcs := []Source{
			FuncSource{SourceName: "a", Fn: func() ([]Sample, error) { return shuffled, nil }},
			failing("b"),
			NewBlockPoolSource("c", Labels{GPU: "9"}, usedPool(t), nil),
		}
		var ordered []Source
		for _, i := range order {
			ordered = append(ordered, srcs[i])
		}
		c, err := New(nil, ordered...)
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan prometheus.Metric)
		go func() { c.Collect(ch); close(ch) }()
		var sb strings.Builder
		for m := range ch {
			sb.WriteString(metricLine(t, m))
			sb.WriteByte('\n')
		}
		return sb.String()
	}
	want := sequence([]int{0, 1, 2})
	for _, order := range [][]int{{2, 1, 0}, {1, 0, 2}, {0, 2, 1}, {0, 1, 2}} {
		if got := sequence(order); got != want {
			t.Fatalf("order %v:\n%s\nwant\n%s", order, got, want)
		}
	}
	// Source a's samples come out sorted by (gpu, instance, model, pool).
	idx := func(s string) int { return strings.Index(want, s) }
	if !(idx(`gpu="0",instance="a",model="",pool=""`) < idx(`gpu="0",instance="b"`) &&
		idx(`gpu="0",instance="b"`) < idx(`gpu="1",instance="b"`)) {
		t.Errorf("samples not sorted by labels:\n%s", want)
	}
}

func TestNewErrors(t *testing.T) {
	ok := failing("x")
	for name, srcs := range map[string][]Source{
		"nil source": {ok, nil},
		"empty name": {failing("")},
		"dup name":   {ok, failing("x")},
	} {
		if _, err := New(nil, srcs...); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	if _, err := New(reg, ok); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg, failing("y")); err == nil {
		t.Error("registering a second collector with the same descriptors succeeded")
	}
	// No sources: only a valid, empty collector.
	c, err := New(prometheus.NewPedanticRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("empty collector emitted %d metrics", n)
	}
}

// TestConcurrentScrapes runs scrapes while the engine keeps allocating under
// the lock it shares with its source (meaningful under -race).
func TestConcurrentScrapes(t *testing.T) {
	var mu sync.Mutex
	a := fragmentedCaching(t)
	reg := prometheus.NewPedanticRegistry()
	if _, err := New(reg, NewAllocatorSource("engine", Labels{GPU: "0"}, a, &mu)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 200 {
		mu.Lock()
		b, err := a.Alloc(int64(1+i%7)*mem.MiB, 0)
		if err == nil {
			err = a.Free(b.Handle)
		}
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
