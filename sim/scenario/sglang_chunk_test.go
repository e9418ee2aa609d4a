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

// TestEngineConfigSGLangChunkOff: with chunked_prefill false SGLang has no
// prefill chunk (--chunked-prefill-size -1), so its chunked_prefill_size
// for the GPU is not the step budget: the default stays, as the fidelity
// replay keeps it (calib fidTranslate applies the chunk only when chunked).
func TestEngineConfigSGLangChunkOff(t *testing.T) {
	off := false
	s := &Scenario{Model: "llama-2-7b", GPU: "rtx4090-24g"}
	s.Engine.Name, s.Engine.ChunkedPrefill = "sglang", &off
	cfg, err := EngineConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	def := sim.DefaultConfig(cfg.Model, cfg.GPU).MaxBatchTokens
	if cfg.ChunkedPrefill || cfg.MaxBatchTokens != def {
		t.Errorf("sglang on rtx4090-24g, chunked_prefill false: got chunked %v, max_batch_tokens %d; want false, %d (no chunk to take)",
			cfg.ChunkedPrefill, cfg.MaxBatchTokens, def)
	}
}

// TestEngineConfigSGLangBeforeChunking: SGLang turned chunked prefill on
// by default in 0.2.13 (chunked_prefill_size 8192; -1 in 0.2.12, None
// before: sim.SGLangDefault's 0), so an earlier release's scenario that
// leaves chunked_prefill unset does not chunk; one that sets it does.
func TestEngineConfigSGLangBeforeChunking(t *testing.T) {
	on := true
	for _, c := range []struct {
		version string
		set     *bool
		want    bool
	}{
		{"0.2.12", nil, false},
		{"0.1.20", nil, false},
		{"0.2.12", &on, true},
		{"0.2.13", nil, true},
	} {
		s := &Scenario{Model: "llama-3.1-8b", GPU: "a100-80g"}
		s.Engine.Name, s.Engine.Version, s.Engine.ChunkedPrefill = "sglang", c.version, c.set
		cfg, err := EngineConfig(s)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ChunkedPrefill != c.want {
			t.Errorf("sglang %s, chunked_prefill %v: got chunked %v, want %v", c.version, c.set, cfg.ChunkedPrefill, c.want)
		}
	}
}
