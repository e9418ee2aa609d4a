package exporter

import (
	"context"
	"sort"
	"strings"

	// Named so that the tests' scrape helper keeps its name.
	kvscrape "github.com/gpufrag/gpufrag/exporter/scrape"
)

// NewScrapeSource returns a source named name over an inference server's
// /metrics as fetch reads it (scrape.Fetch): one sample per scraped
// instance, its KV-cache figures (engineKV) labelled instance, model = the
// instance's model_name and pool = enginePool of its other labels.
// `gpufrag exporter --scrape URL` names it "scrape:URL", with instance the
// URL's host:port.
func NewScrapeSource(name, instance string, fetch func(context.Context) ([]kvscrape.Instance, error)) FuncContextSource {
	return FuncContextSource{SourceName: name, Fn: func(ctx context.Context) ([]Sample, error) {
		insts, err := fetch(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]Sample, 0, len(insts))
		for _, in := range insts {
			kv := engineKV(in)
			out = append(out, Sample{
				Labels: Labels{Instance: instance, Model: in.Model, Pool: enginePool(in.Labels)},
				Engine: &kv,
			})
		}
		return out, nil
	}}
}

// enginePool is "engine", or "engine/k=v/..." with the server's extra labels
// in key order (vLLM's engine index, SGLang's ranks), so that several
// engines behind one URL stay distinct series.
func enginePool(labels map[string]string) string {
	if len(labels) == 0 {
		return "engine"
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("engine")
	for _, k := range keys {
		b.WriteString("/" + k + "=" + labels[k])
	}
	return b.String()
}

// engineKV maps a scraped instance onto the exporter's kind. SGLang reports a
// hit-rate gauge instead of counters; it has no counter equivalent and is not
// re-exported.
func engineKV(in kvscrape.Instance) EngineKV {
	kv := EngineKV{Engine: strings.ToLower(in.Engine)}
	if in.HasUsage {
		kv.Usage = in.Usage
	}
	if in.HasBlocks {
		kv.HasBlocks, kv.Blocks, kv.BlockSize = true, in.Blocks, in.BlockSize
	}
	if in.HasPreemptions {
		kv.HasPreemptions, kv.Preemptions = true, in.Preemptions
	}
	if in.HasPrefix {
		kv.HasPrefix, kv.PrefixQueries, kv.PrefixHits = true, in.PrefixQueries, in.PrefixHits
	}
	return kv
}
