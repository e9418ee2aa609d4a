package exporter

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	kvscrape "github.com/gpufrag/gpufrag/exporter/scrape"
)

// scrapeExpositions are exporter/scrape's test expositions (vLLM V0, V1,
// V1 with two engines, starting; SGLang, old SGLang).
var scrapeExpositions = []string{"sglang", "sglang_old", "vllm_starting", "vllm_v0", "vllm_v1", "vllm_v1_dp2"}

// TestGoldenScrape: each of exporter/scrape's expositions through
// NewScrapeSource, as `gpufrag exporter --scrape` serves them (the
// instance label of a server at 127.0.0.1:19480); a server that cannot be
// read is down.
func TestGoldenScrape(t *testing.T) {
	var srcs []Source
	for _, name := range scrapeExpositions {
		path := filepath.Join("scrape", "testdata", name+".prom")
		srcs = append(srcs, NewScrapeSource("scrape:"+name, "127.0.0.1:19480", func(context.Context) ([]kvscrape.Instance, error) {
			f, err := os.Open(path)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return kvscrape.Parse(f, path)
		}))
	}
	srcs = append(srcs, NewScrapeSource("scrape:down", "127.0.0.1:19499", func(context.Context) ([]kvscrape.Instance, error) {
		return nil, errors.New("connection refused")
	}))
	reg := prometheus.NewPedanticRegistry()
	c, err := New(reg, srcs...)
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, reg, "scrape")
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestEnginePool(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{nil, "engine"},
		{map[string]string{}, "engine"},
		{map[string]string{"engine": "1"}, "engine/engine=1"},
		{map[string]string{"tp_rank": "1", "dp_rank": "0"}, "engine/dp_rank=0/tp_rank=1"},
	} {
		if got := enginePool(tc.labels); got != tc.want {
			t.Errorf("enginePool(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

// TestEngineKV: only the figures the engine published are carried over,
// and SGLang's hit-rate gauge is not (it has no counter equivalent).
func TestEngineKV(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   kvscrape.Instance
		want EngineKV
	}{
		{"nothing", kvscrape.Instance{Engine: "VLLM", Usage: 0.5, Blocks: 9, Preemptions: 3},
			EngineKV{Engine: "vllm"}},
		{"usage", kvscrape.Instance{Engine: "SGLang", HasUsage: true, Usage: 0.5},
			EngineKV{Engine: "sglang", Usage: 0.5}},
		{"blocks", kvscrape.Instance{Engine: "VLLM", HasBlocks: true, Blocks: 100, BlockSize: 16},
			EngineKV{Engine: "vllm", HasBlocks: true, Blocks: 100, BlockSize: 16}},
		{"preemptions", kvscrape.Instance{Engine: "VLLM", HasPreemptions: true, Preemptions: 7},
			EngineKV{Engine: "vllm", HasPreemptions: true, Preemptions: 7}},
		{"prefix", kvscrape.Instance{Engine: "VLLM", HasPrefix: true, PrefixQueries: 10, PrefixHits: 4},
			EngineKV{Engine: "vllm", HasPrefix: true, PrefixQueries: 10, PrefixHits: 4}},
		{"hit rate", kvscrape.Instance{Engine: "SGLang", HasPrefixHitRate: true, PrefixHitRate: 0.3},
			EngineKV{Engine: "sglang"}},
	} {
		if got := engineKV(tc.in); got != tc.want {
			t.Errorf("%s: engineKV = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
