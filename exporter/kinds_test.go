package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

func gpuDevices(context.Context) ([]GPUDevice, error) {
	return []GPUDevice{
		{Index: 1, UUID: "GPU-bbbb", Name: "NVIDIA H100 80GB HBM3", TotalBytes: 80 << 30, UsedBytes: 70 << 30, FreeBytes: 10 << 30},
		{Index: 0, UUID: "GPU-aaaa", Name: "NVIDIA H100 80GB HBM3", TotalBytes: 80 << 30, UsedBytes: 1 << 30, FreeBytes: 79 << 30,
			Processes: []GPUProcess{{PID: 4242, UsedBytes: 1 << 30}, {PID: 17, UsedBytes: 0}}},
	}, nil
}

func kindsSources() []Source {
	return []Source{
		NewGPUSource("nvml", gpuDevices),
		NewEngineSource("vllm-0", Labels{GPU: "0", Instance: "vllm-0", Model: "llama-3-8b"}, func(context.Context) (EngineKV, error) {
			return EngineKV{Engine: "vllm", Usage: 0.25, Blocks: 1000, BlockSize: 16, Preemptions: 3,
				PrefixQueries: 5000, PrefixHits: 1200, HasBlocks: true, HasPreemptions: true, HasPrefix: true}, nil
		}),
		NewEngineSource("sglang-0", Labels{GPU: "1", Instance: "sglang-0", Model: "qwen"}, func(context.Context) (EngineKV, error) {
			return EngineKV{Engine: "sglang", Usage: 0.5}, nil // usage only
		}),
		NewClusterSource("k8s", "prod", func(context.Context) (ClusterState, error) {
			return ClusterState{Nodes: 10, GPUs: 80, AllocatedGPUs: 61.5, WholeFreeNodes: 1, StrandedNodes: 2, PendingPods: 4}, nil
		}),
	}
}

// TestGoldenKinds: GPU devices, engine KV figures and cluster state in the
// exposition format, and only the figures a source has.
func TestGoldenKinds(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c, err := New(reg, kindsSources()...)
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, reg, "kinds")
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	if n, _ := testutil.GatherAndCount(reg, "gpufrag_kv_blocks"); n != 1 {
		t.Errorf("kv_blocks series = %d, want 1 (sglang has no block figures)", n)
	}
	if n, _ := testutil.GatherAndCount(reg, "gpufrag_gpu_process_memory_used_bytes"); n != 2 {
		t.Errorf("process series = %d, want 2", n)
	}
}

func TestKindsInvalid(t *testing.T) {
	for name, s := range map[string]Sample{
		"negative gpu":   {GPU: &GPUDevice{Index: -1}},
		"pid twice":      {GPU: &GPUDevice{Processes: []GPUProcess{{PID: 1}, {PID: 1}}}},
		"bad uuid":       {GPU: &GPUDevice{UUID: "\xff"}},
		"negative nodes": {Cluster: &ClusterState{Nodes: -1}},
		"negative alloc": {Cluster: &ClusterState{AllocatedGPUs: -0.5}},
		"negative count": {Engine: &EngineKV{Preemptions: -1}},
		"kv and engine":  {KV: &KV{}, Engine: &EngineKV{}},
		"bad cluster":    {Labels: Labels{Cluster: "\xff"}, Cluster: &ClusterState{}},
	} {
		if _, err := checkSamples([]Sample{s}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// An engine sample and a block-pool sample under the same labels would
	// export kv_cache_usage_ratio twice: the second source is down.
	l := Labels{Instance: "x", Pool: "engine"}
	reg := prometheus.NewPedanticRegistry()
	_, err := New(reg,
		FuncSource{SourceName: "a", Fn: func() ([]Sample, error) { return []Sample{{Labels: l, Engine: &EngineKV{}}}, nil }},
		FuncSource{SourceName: "b", Fn: func() ([]Sample, error) { return []Sample{{Labels: l, KV: &KV{}}}, nil }},
		FuncSource{SourceName: "c", Fn: func() ([]Sample, error) {
			return []Sample{{GPU: &GPUDevice{Index: 0}}, {Labels: Labels{GPU: "other"}, GPU: &GPUDevice{Index: 0}}}, nil
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	expect := `# HELP gpufrag_source_up 1 if the source's last collection succeeded, 0 if it failed.
# TYPE gpufrag_source_up gauge
gpufrag_source_up{source="a"} 1
gpufrag_source_up{source="b"} 0
gpufrag_source_up{source="c"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expect), "gpufrag_source_up"); err != nil {
		t.Error(err)
	}
}

// TestSourceTimeout: a ContextSource that hangs costs a scrape at most the
// timeout, is reported down, and while it still hangs is not called again.
func TestSourceTimeout(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	hung := FuncContextSource{SourceName: "hung", Fn: func(ctx context.Context) ([]Sample, error) {
		calls.Add(1)
		<-release // ignores ctx, like a wedged driver call
		return nil, nil
	}}
	polite := FuncContextSource{SourceName: "polite", Fn: func(ctx context.Context) ([]Sample, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewWithOptions(reg, Options{SourceTimeout: 50 * time.Millisecond},
		hung, polite, NewGPUSource("nvml", gpuDevices)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		start := time.Now()
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("scrape %d took %v with a 50ms source timeout", i, d)
		}
		want := map[string]float64{"hung": 0, "polite": 0, "nvml": 1}
		for _, f := range fams {
			if f.GetName() != "gpufrag_source_up" {
				continue
			}
			for _, m := range f.GetMetric() {
				src := m.GetLabel()[0].GetValue()
				if m.GetGauge().GetValue() != want[src] {
					t.Errorf("scrape %d: source_up{%s} = %v, want %v", i, src, m.GetGauge().GetValue(), want[src])
				}
			}
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("hung source called %d times, want once (later scrapes see it busy)", n)
	}
	close(release)
}

// TestStateLogs: one log line per change of a source's state, none per
// scrape.
func TestStateLogs(t *testing.T) {
	var fail atomic.Bool
	flappy := FuncSource{SourceName: "flappy", Fn: func() ([]Sample, error) {
		if fail.Load() {
			return nil, errors.New("endpoint refused")
		}
		return nil, nil
	}}
	logs := &syncBuffer{}
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewWithOptions(reg, Options{Logger: testLogger(logs)}, flappy); err != nil {
		t.Fatal(err)
	}
	for _, down := range []bool{false, false, true, true, true, false, false} {
		fail.Store(down)
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "source down"); n != 1 {
		t.Errorf("%d 'source down' lines, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "source up"); n != 1 {
		t.Errorf("%d 'source up' lines, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "endpoint refused") {
		t.Errorf("the down line lacks the error:\n%s", out)
	}
}

// TestOffSourceLogs: a source from NewOffSource is down on every scrape and
// the collector does not log it (its caller did, once, at startup); a
// source failing with the same error otherwise is logged once.
func TestOffSourceLogs(t *testing.T) {
	cause := errors.New("NVML not available: libnvidia-ml.so.1 not found")
	logs := &syncBuffer{}
	reg := prometheus.NewPedanticRegistry()
	plain := FuncContextSource{SourceName: "plain", Fn: func(context.Context) ([]Sample, error) { return nil, cause }}
	if _, err := NewWithOptions(reg, Options{Logger: testLogger(logs)}, NewOffSource("nvml", cause), plain); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "gpufrag_source_up" {
				continue
			}
			for _, m := range mf.GetMetric() {
				if m.GetGauge().GetValue() != 0 {
					t.Errorf("scrape %d: %v up, want every source down", i, m.GetLabel())
				}
			}
		}
	}
	out := logs.String()
	if n := strings.Count(out, "source down"); n != 1 || !strings.Contains(out, "source=plain") || strings.Contains(out, "source=nvml") {
		t.Errorf("want one 'source down' line, for plain only:\n%s", out)
	}
	if _, err := NewOffSource("nvml", cause).CollectContext(context.Background()); !errors.Is(err, cause) || err.Error() != cause.Error() {
		t.Errorf("off source error = %v, want %v unchanged", err, cause)
	}
}

// TestMaxSeries: a source whose series would pass the cap is down, the
// sources before it are exported.
func TestMaxSeries(t *testing.T) {
	mem := func(name string, n int) Source {
		return FuncSource{SourceName: name, Fn: func() ([]Sample, error) {
			var out []Sample
			for i := range n {
				out = append(out, Sample{Labels: Labels{Instance: fmt.Sprint(name, i)}, Memory: &Memory{}})
			}
			return out, nil
		}}
	}
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewWithOptions(reg, Options{MaxSeries: 13 * 3}, mem("a", 2), mem("b", 2), mem("c", 1)); err != nil {
		t.Fatal(err)
	}
	expect := `# HELP gpufrag_source_up 1 if the source's last collection succeeded, 0 if it failed.
# TYPE gpufrag_source_up gauge
gpufrag_source_up{source="a"} 1
gpufrag_source_up{source="b"} 0
gpufrag_source_up{source="c"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expect), "gpufrag_source_up"); err != nil {
		t.Error(err)
	}
	if _, err := NewWithOptions(nil, Options{MaxSeries: -1}); err == nil {
		t.Error("negative MaxSeries accepted")
	}
}

// TestPolledSource: results are served from the last poll; a failed poll
// and a stale result mark the source down.
func TestPolledSource(t *testing.T) {
	clock := NewManualClock(t0)
	var fail atomic.Bool
	var polls atomic.Int32
	src := NewGPUSource("nvml", func(ctx context.Context) ([]GPUDevice, error) {
		polls.Add(1)
		if fail.Load() {
			return nil, errors.New("nvml: GPU is lost")
		}
		return gpuDevices(ctx)
	})
	p, err := NewPolledSource(src, 5*time.Second, time.Second, clock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Collect(); err == nil {
		t.Error("Collect before any poll succeeded")
	}
	if err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s, err := p.Collect()
		if err != nil || len(s) != 2 {
			t.Fatalf("Collect = %d samples, %v", len(s), err)
		}
	}
	if n := polls.Load(); n != 1 {
		t.Errorf("%d polls for 3 collections, want 1", n)
	}
	fail.Store(true)
	if err := p.Poll(context.Background()); err == nil {
		t.Error("failing poll returned nil")
	}
	if _, err := p.Collect(); err == nil || !strings.Contains(err.Error(), "GPU is lost") {
		t.Errorf("Collect after a failed poll: %v", err)
	}
	fail.Store(false)
	_ = p.Poll(context.Background())
	clock.Advance(16 * time.Second)
	if _, err := p.Collect(); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Errorf("Collect after 16s without a poll (interval 5s): %v", err)
	}

	// Run polls on every tick of the clock.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	before := polls.Load()
	go func() { done <- p.Run(ctx) }()
	if err := clock.WaitTickers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first poll", func() bool { return polls.Load() == before+1 })
	clock.Advance(5 * time.Second)
	eventually(t, "a poll on the tick", func() bool { return polls.Load() == before+2 })
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
	if _, err := NewPolledSource(src, 0, 0, nil); err == nil {
		t.Error("zero interval accepted")
	}
}

// TestShutdown: cancelling Serve's context stops it gracefully: it returns
// nil, the runners are stopped, and the port is closed.
func TestShutdown(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	var stopped atomic.Bool
	runner := runnerFunc(func(ctx context.Context) error { <-ctx.Done(); stopped.Store(true); return nil })
	srv := startServer(t, ServerConfig{Gatherer: reg, Runners: []Runner{runner}})
	if code, body := get(t, srv.url+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	if code, _ := get(t, srv.url+"/nope"); code != http.StatusNotFound {
		t.Errorf("/nope: %d", code)
	}
	srv.stop()
	select {
	case err := <-srv.done:
		if err != nil {
			t.Errorf("Serve after cancel: %v", err)
		}
		srv.done <- nil // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if !stopped.Load() {
		t.Error("runner not stopped before Serve returned")
	}
	if _, err := http.Get(srv.url + "/healthz"); err == nil {
		t.Error("still serving after shutdown")
	}
	// Healthz reports 503 while shutting down.
	h := Handler(ServerConfig{Gatherer: reg}, func() bool { return false })
	rec := newRecorder()
	h.ServeHTTP(rec, mustRequest(t, "/healthz"))
	if rec.code != http.StatusServiceUnavailable {
		t.Errorf("healthz while shutting down: %d", rec.code)
	}
	if err := Serve(context.Background(), nil, ServerConfig{}); err == nil {
		t.Error("Serve without a Gatherer succeeded")
	}
}

type runnerFunc func(context.Context) error

func (f runnerFunc) Run(ctx context.Context) error { return f(ctx) }

type recorder struct {
	h    http.Header
	code int
	body strings.Builder
}

func newRecorder() *recorder                    { return &recorder{h: http.Header{}, code: 200} }
func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }

func mustRequest(t *testing.T, path string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://x"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestParseSidecar(t *testing.T) {
	l, err := parseSidecar("x.labels.json", []byte(` {"instance":"a","model":"b","gpu":"2"} `))
	if err != nil || l != (sidecar{"a", "b", "2"}) {
		t.Errorf("good sidecar: %+v, %v", l, err)
	}
	for in, want := range map[string]string{
		`{"instance":"a"`:             "byte offset 15: unexpected end",
		`{"instance":1}`:              `byte offset 13: field "instance"`,
		`{"gpu":"0","x":1}`:           `byte offset 11: field "x": unknown field`,
		`{"instance":"a"} {}`:         "byte offset 17: data after",
		`[1]`:                         "byte offset 1",
		`nul`:                         "byte offset 3: unexpected end",
		strings.Repeat(" ", 70000):    "longer than",
		`{"instance":"a","instance":`: "byte offset 27: unexpected end",
		// Issue 28: what encoding/json accepted silently, and label values
		// that are not plain text.
		"{\"instance\":\"a\xffb\"}":                                "byte 14: invalid UTF-8 (byte 0xff)",
		`{"model":"x\ud800"}`:                                      `byte 11: "\\ud800" is half of a UTF-16 surrogate pair`,
		`{"instance":"a","instance":"b"}`:                          `byte 16: $: key "instance" appears twice`,
		`{"instance":"a","INSTANCE":"b"}`:                          `keys "instance" and "INSTANCE" differ only in case`,
		`{"INSTANCE":"b"}`:                                         `field "INSTANCE": unknown key (the keys are "instance", "model" and "gpu", in lower case)`,
		`{"instance":"a\u0000b"}`:                                  `field "instance": value "a\x00b": byte 1: control character U+0000`,
		`{"model":"\u001b]0;owned\u0007"}`:                         `field "model": value "\x1b]0;owned\a": byte 0: control character U+001B`,
		"{\"gpu\":\"0\x7f\"}":                                      `field "gpu": value "0\x7f": byte 1: control character U+007F`,
		"{\"gpu\":\"\u0085\"}":                                     `field "gpu": value "\u0085": byte 0: control character U+0085`,
		`{"model":"` + strings.Repeat("m", MaxLabelBytes+1) + `"}`: `field "model": value "mmmm`,
	} {
		_, err := parseSidecar("x.labels.json", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "x.labels.json: ") {
			t.Errorf("%.40q: error %v, want one naming the file and %q", in, err, want)
		}
	}
}

// FuzzParseSidecar: the sidecar parser never panics, and what it accepts
// is valid UTF-8 that round-trips.
func FuzzParseSidecar(f *testing.F) {
	f.Add([]byte(`{"instance":"vllm-0","model":"llama","gpu":"0"}`))
	f.Add([]byte(`{"instance":1}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := parseSidecar("f.labels.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.labels.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := (Labels{GPU: l.GPU, Instance: l.Instance, Model: l.Model}).valid(); err != nil {
			t.Fatalf("accepted invalid labels %+v: %v", l, err)
		}
		// Accepted: a document without what encoding/json reads silently,
		// whose keys, read case-sensitively, are the labels.
		if err := untrusted.CheckJSON(data); err != nil {
			t.Fatalf("accepted %q: %v", data, err)
		}
		var m map[string]string
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("accepted %q, not an object of strings: %v", data, err)
		}
		for k := range m {
			if k != "instance" && k != "model" && k != "gpu" {
				t.Fatalf("accepted %q with key %q", data, k)
			}
		}
		if l != (sidecar{m["instance"], m["model"], m["gpu"]}) {
			t.Fatalf("accepted %q as %+v", data, l)
		}
	})
}

type fakeVersioned struct {
	samples []Sample
	version uint64
	err     error
}

func (f *fakeVersioned) Name() string               { return "v" }
func (f *fakeVersioned) Collect() ([]Sample, error) { return f.samples, f.err }
func (f *fakeVersioned) CollectVersioned() ([]Sample, uint64, error) {
	return f.samples, f.version, f.err
}

// TestVersionedCache: a VersionedSource's metrics are built once per
// version (the same version serves the cached values even if the samples
// differ), rebuilt when it changes, and an error still marks it down.
func TestVersionedCache(t *testing.T) {
	f := &fakeVersioned{samples: []Sample{{Labels: Labels{Instance: "a"}, KV: &KV{Blocks: 10}}}, version: 1}
	dup := FuncSource{SourceName: "w", Fn: func() ([]Sample, error) {
		return []Sample{{Labels: Labels{Instance: "a"}, KV: &KV{}}}, nil
	}}
	c, err := New(nil, f)
	if err != nil {
		t.Fatal(err)
	}
	blocks := func() float64 { return testutil.ToFloat64(onlyMetric(t, c, "gpufrag_kv_blocks")) }
	if got := blocks(); got != 10 {
		t.Fatalf("kv_blocks = %v", got)
	}
	f.samples = []Sample{{Labels: Labels{Instance: "a"}, KV: &KV{Blocks: 20}}}
	if got := blocks(); got != 10 {
		t.Errorf("same version: kv_blocks = %v, want the cached 10", got)
	}
	f.version = 2
	if got := blocks(); got != 20 {
		t.Errorf("new version: kv_blocks = %v, want 20", got)
	}
	f.err = errors.New("gone")
	if n := testutil.CollectAndCount(c, "gpufrag_kv_blocks"); n != 0 {
		t.Errorf("failing versioned source exported %d kv_blocks series", n)
	}
	// Cached keys still collide with another source's label sets.
	f.err = nil
	reg := prometheus.NewPedanticRegistry()
	if _, err := New(reg, f, dup); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		expect := "# HELP gpufrag_source_up 1 if the source's last collection succeeded, 0 if it failed.\n" +
			"# TYPE gpufrag_source_up gauge\ngpufrag_source_up{source=\"v\"} 1\ngpufrag_source_up{source=\"w\"} 0\n"
		if err := testutil.GatherAndCompare(reg, strings.NewReader(expect), "gpufrag_source_up"); err != nil {
			t.Error(err)
		}
	}
}

// TestSharedFlight: concurrent scrapes of a slow ContextSource share one
// call, and all of them export it.
func TestSharedFlight(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	slow := FuncContextSource{SourceName: "slow", Fn: func(ctx context.Context) ([]Sample, error) {
		calls.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return []Sample{{Labels: Labels{Instance: "a"}, KV: &KV{Blocks: 3}}}, nil
	}}
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewWithOptions(reg, Options{SourceTimeout: 10 * time.Second}, slow); err != nil {
		t.Fatal(err)
	}
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() {
			c, err := testutil.GatherAndCount(reg, "gpufrag_kv_blocks")
			if err == nil && c != 1 {
				err = fmt.Errorf("%d kv_blocks series", c)
			}
			errs <- err
		}()
	}
	eventually(t, "the first call", func() bool { return calls.Load() >= 1 })
	time.Sleep(50 * time.Millisecond) // let the other scrapes join the flight
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if c := calls.Load(); c < 1 || c > n {
		t.Errorf("%d calls for %d concurrent scrapes", c, n)
	}
	t.Logf("%d calls for %d concurrent scrapes", calls.Load(), n)
}
