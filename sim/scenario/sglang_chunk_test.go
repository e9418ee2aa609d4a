package scenario

import (
	"testing"

	"github.com/gpufrag/gpufrag/sim"
)

// TestEngineConfigSGLangChunk: an SGLang scenario that leaves
// max_batch_tokens unset takes the release's chunked_prefill_size for the
// GPU's memory and TP (sim.SGLangDefault), as `simulate --engine sglang`
// on that GPU would be served; a set value, and every other engine, keep
// theirs.
func TestEngineConfigSGLangChunk(t *testing.T) {
	for _, c := range []struct {
		gpu, engine, version string
		tp, set, want        int
	}{
		{"rtx4090-24g", "sglang", "", 1, 0, 2048},
		{"rtx-a6000-48g", "sglang", "", 1, 0, 4096},
		{"a100-40g", "sglang", "0.5.6", 1, 0, 4096},
		{"a100-80g", "sglang", "", 1, 0, 8192},
		{"h200-141g", "sglang", "0.4.0", 4, 0, 8192},
		{"rtx4090-24g", "sglang", "", 1, 1024, 1024},
		{"rtx4090-24g", "vllm-v1", "", 1, 0, 8192},
	} {
		s := &Scenario{Model: "llama-3.1-8b", GPU: c.gpu, TP: c.tp}
		s.Engine.Name, s.Engine.Version, s.Engine.MaxBatchTokens = c.engine, c.version, c.set
		cfg, err := EngineConfig(s)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if cfg.MaxBatchTokens != c.want {
			t.Errorf("%s %s %s tp %d max_batch_tokens %d: got %d, want %d", c.gpu, c.engine, c.version, c.tp, c.set, cfg.MaxBatchTokens, c.want)
		}
		if c.engine == "sglang" && c.set == 0 {
			v := sim.DefaultEngineVersion(sim.EngineSGLang)
			if c.version != "" {
				v, _ = sim.ParseEngineVersion(sim.EngineSGLang, c.version)
			}
			if got := sim.SGLangDefault(v, cfg.GPU.Capacity, c.tp).ChunkedPrefill; got != c.want {
				t.Errorf("%s: SGLangDefault gives %d, the table %d", c.gpu, got, c.want)
			}
		}
	}
}
