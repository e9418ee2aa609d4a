package sim

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/workload"
)

// TestNewErrors checks that New refuses every bad config with an error
// wrapping ErrBadConfig that names the field.
func TestNewErrors(t *testing.T) {
	one := []workload.Request{{ID: "a", PromptTokens: 10, OutputTokens: 1, N: 1}}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		reqs   []workload.Request
		want   string
	}{
		{"bad model", func(c *Config) { c.Model.Layers = 0 }, one, "model"},
		{"bad tp", func(c *Config) { c.TP = 3 }, one, "tp"},
		{"no gpu", func(c *Config) { c.GPU.Capacity = 0 }, one, "gpu"},
		{"bad kv dtype", func(c *Config) { c.KVDType = 200 }, one, "kv dtype"},
		{"no kv", func(c *Config) { c.KV = strategy.Spec{} }, one, "kv: empty"},
		{"no alloc", func(c *Config) { c.Alloc = registry.Spec{} }, one, "alloc: empty"},
		{"bad on-oom", func(c *Config) { c.OnOOM = 9 }, one, "on-oom"},
		{"util 0", func(c *Config) { c.GPUMemoryUtilization = 0 }, one, "gpu memory utilization"},
		{"util above 1", func(c *Config) { c.GPUMemoryUtilization = 1.5 }, one, "gpu memory utilization"},
		{"negative context", func(c *Config) { c.ContextBytes = -1 }, one, "context bytes"},
		{"no token budget", func(c *Config) { c.MaxBatchTokens = 0 }, one, "max batch tokens"},
		{"no seqs", func(c *Config) { c.MaxSeqs = 0 }, one, "max seqs"},
		{"negative max context", func(c *Config) { c.MaxContext = -1 }, one, "max context"},
		{"negative max tokens", func(c *Config) { c.MaxTokens = -1 }, one, "max tokens"},
		{"efficiency 0", func(c *Config) { c.Roofline.ComputeEfficiency = 0 }, one, "roofline"},
		{"negative overhead", func(c *Config) { c.Roofline.StepOverhead = -1 }, one, "roofline"},
		{"negative duration", func(c *Config) { c.Duration = -1 }, one, "duration"},
		{"negative sample interval", func(c *Config) { c.SampleInterval = -1 }, one, "sample interval"},
		{"weights do not fit", func(c *Config) { c.GPU.Capacity = 2 * mem.MiB }, one, "do not fit"},
		{"no memory for KV", func(c *Config) { c.GPUMemoryUtilization = 0.05 }, one, "no memory left for the KV cache"},
		// Specs arrive parsed (their text is refused by ParseSpec and
		// registry.Parse); the pair is checked against the built allocator.
		{"vmm kv on caching", func(c *Config) { c.KV = kvOf("vmm:2MiB") }, one,
			"bad config: kv: bad strategy spec: kv vmm:2MiB maps its own pages and needs an allocator that grows blocks in place by 2MiB, such as vmm:2MiB; alloc caching does not grow blocks in place"},
		{"vmm kv on another page", func(c *Config) { c.KV, c.Alloc = kvOf("vmm:2MiB"), allocOf("vmm:64KiB") }, one,
			"kv vmm:2MiB maps its own pages and needs an allocator that grows blocks in place by 2MiB, such as vmm:2MiB; alloc vmm:64KiB grows them by 64KiB"},
		{"unsorted requests", func(*Config) {}, []workload.Request{
			{ID: "late", Arrival: 5, PromptTokens: 1, N: 1}, {ID: "early", Arrival: 1, PromptTokens: 1, N: 1}}, "not sorted by arrival at early"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyConfig(64 * mem.MiB)
			tc.mutate(&c)
			_, err := New(c, tc.reqs)
			if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an ErrBadConfig naming %q", err, tc.want)
			}
		})
	}
}

func TestParseOnOOM(t *testing.T) {
	for _, o := range []OnOOM{OnOOMDefault, OnOOMPreempt, OnOOMReserve, OnOOMFail} {
		got, err := ParseOnOOM(strings.ToUpper(o.String()))
		if err != nil || got != o {
			t.Errorf("ParseOnOOM(%q) = %v, %v", o.String(), got, err)
		}
	}
	if _, err := ParseOnOOM("retry"); !errors.Is(err, ErrBadConfig) {
		t.Errorf("ParseOnOOM(retry): %v", err)
	}
	if s := OnOOM(7).String(); s != "OnOOM(7)" {
		t.Errorf("OnOOM(7).String() = %q", s)
	}
}

// TestDefaultOnOOM checks the policy each strategy stands for.
func TestDefaultOnOOM(t *testing.T) {
	for kv, want := range map[string]OnOOM{
		"paged:16": OnOOMPreempt, "vmm:2MiB": OnOOMPreempt,
		"contiguous-max": OnOOMReserve, "contiguous-max:pow2": OnOOMReserve, "contiguous-max:oracle": OnOOMReserve,
		"contiguous-grow": OnOOMFail,
	} {
		c := tinyConfig(64 * mem.MiB)
		c.KV = kvOf(kv)
		if kv == "vmm:2MiB" {
			c.Alloc = allocOf(kv)
		}
		_, res := runEngine(t, c, nil)
		if res.OnOOM != want.String() {
			t.Errorf("%s: on-oom %s, want %v", kv, res.OnOOM, want)
		}
	}
}

// TestEmptyRun: no requests, no steps, nothing held.
func TestEmptyRun(t *testing.T) {
	_, res := runEngine(t, tinyConfig(64*mem.MiB), nil)
	if res.RequestsTotal != 0 || res.Steps != 0 || res.OutputTokens != 0 || res.SimulatedSeconds != 0 {
		t.Fatalf("%+v", res)
	}
}

// TestRealModels runs a few requests on each preset that fits an H200,
// through each OOM policy's default strategy.
func TestRealModels(t *testing.T) {
	g, err := model.LookupGPU("h200-141g")
	if err != nil {
		t.Fatal(err)
	}
	reqs := []workload.Request{
		{ID: "a", PromptTokens: 3000, OutputTokens: 20, N: 1},
		{ID: "b", Arrival: 1e6, PromptTokens: 500, OutputTokens: 30, N: 2},
		{ID: "c", Arrival: 2e6, PromptTokens: 9000, OutputTokens: 0, N: 1},
	}
	for _, name := range []string{"llama-3.1-8b", "qwen2.5-14b", "llama-2-13b", "opt-13b"} {
		m, err := model.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range []string{"paged:16", "contiguous-max:oracle", "contiguous-grow"} {
			c := DefaultConfig(m, g)
			c.KV = kvOf(kv)
			_, res := runEngine(t, c, reqs)
			// Llama-2 and OPT have a 4K and a 2K context: longer prompts
			// are rejected.
			want := 0
			for _, r := range reqs {
				if r.PromptTokens <= m.MaxContext {
					want++
				}
			}
			if res.RequestsCompleted != want || res.RequestsCompleted+res.RequestsRejected != 3 {
				t.Errorf("%s %s: %+v", name, kv, res)
			}
		}
	}
}

func TestDeque(t *testing.T) {
	var d deque
	var model []int32
	for i := range int32(100) {
		if i%3 == 0 {
			d.pushFront(i)
			model = slices.Insert(model, 0, i)
		} else {
			d.pushBack(i)
			model = append(model, i)
		}
		if i%5 == 0 {
			if got := d.popFront(); got != model[0] {
				t.Fatalf("popFront %d, want %d", got, model[0])
			}
			model = model[1:]
		}
		if d.len() != len(model) || (len(model) > 0 && d.front() != model[0]) {
			t.Fatalf("after %d: len %d front %d, model %v", i, d.len(), d.front(), model)
		}
	}
	for len(model) > 0 {
		if got := d.popFront(); got != model[0] {
			t.Fatalf("popFront %d, want %d", got, model[0])
		}
		model = model[1:]
	}
}

func TestQuantiles(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want Quantiles
	}{
		{nil, Quantiles{}},
		{[]float64{5}, Quantiles{5, 5, 5}},
		{[]float64{3, 1, 2}, Quantiles{2, 3, 3}},
		{[]float64{4, 3, 2, 1}, Quantiles{2, 4, 4}},
	} {
		if got := quantiles(tc.xs); got != tc.want {
			t.Errorf("quantiles(%v) = %+v, want %+v", tc.xs, got, tc.want)
		}
	}
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(1000 - i)
	}
	if q := quantiles(xs); q.P50 != 500 || q.P99 != 990 || q.Max != 1000 {
		t.Errorf("quantiles of 1..1000 = %+v", q)
	}
}

// TestSeriesBounded: a run of 1.2M sample times at one per second reaches
// MaxSamples, is thinned once and then holds what a run sampled every two
// seconds from the start holds, sample for sample; the minimum health still
// counts every sample. Before the bound, --duration 100000h kept 3.6e8
// samples (12 GB).
func TestSeriesBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 1.2M samples per run")
	}
	const span = 1_200_000 // seconds
	var reqs []workload.Request
	for i := range 60 {
		reqs = append(reqs, workload.Request{ID: fmt.Sprint("r", i), Arrival: int64(i) * span / 60 * 1e9,
			PromptTokens: 100 + 10*i, OutputTokens: 50, N: 1})
	}
	cfg := tinyConfig(mem.GiB)
	cfg.Duration = span * 1e9
	_, thin := runEngine(t, cfg, reqs)
	if !thin.SamplesThinned || len(thin.Series.Time) > MaxSamples || thin.SampleIntervalS != 2 {
		t.Fatalf("thinned %t, %d samples, interval %gs; want thinned, at most %d, 2s",
			thin.SamplesThinned, len(thin.Series.Time), thin.SampleIntervalS, MaxSamples)
	}
	cfg.SampleInterval = 2e9
	_, wide := runEngine(t, cfg, reqs)
	if wide.SamplesThinned {
		t.Fatalf("a run of %d samples was thinned", len(wide.Series.Time))
	}
	if !reflect.DeepEqual(thin.Series, wide.Series) || thin.FragRate != wide.FragRate {
		t.Errorf("thinned series (%d samples, frag %+v) differ from one sampled every 2s (%d, %+v)",
			len(thin.Series.Time), thin.FragRate, len(wide.Series.Time), wide.FragRate)
	}
	if thin.HealthMin > wide.HealthMin {
		t.Errorf("health min %g after thinning, above the 2s run's %g: thinning lost samples it counts", thin.HealthMin, wide.HealthMin)
	}
}

// TestCannotFail checks what becomes of the errors the engine's books rule
// out (a preemption of a request the strategy does not hold): under -tags
// invariants a panic naming the call and the request, otherwise nothing.
func TestCannotFail(t *testing.T) {
	e, err := New(tinyConfig(4*mem.GiB), []workload.Request{{ID: "q7", PromptTokens: 10, OutputTokens: 1, N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	e.running = append(e.running, 0) // running, but never admitted into the strategy
	var got any
	func() {
		defer func() { got = recover() }()
		e.preempt(0)
	}()
	if !invariants.Enabled {
		if got != nil {
			t.Fatalf("panic without -tags invariants: %v", got)
		}
		return
	}
	perr, ok := got.(error)
	if !ok || !strings.Contains(perr.Error(), "preempt q7 cannot fail") || !errors.Is(perr, strategy.ErrUnknownSeq) {
		t.Fatalf("preempt of an unadmitted request under invariants: recovered %v, want an error naming preempt q7 wrapping ErrUnknownSeq", got)
	}
}
