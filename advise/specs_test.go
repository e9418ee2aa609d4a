package advise

import (
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
)

// kv, al, kvs and als parse specs written in tests.
func kv(text string) strategy.Spec { return strategy.MustParseSpec(text) }

func al(text string) registry.Spec { return registry.MustParse(text) }

func kvs(texts ...string) []strategy.Spec {
	out := make([]strategy.Spec, len(texts))
	for i, t := range texts {
		out[i] = kv(t)
	}
	return out
}

func als(texts ...string) []registry.Spec { return mustAllocs(texts...) }
