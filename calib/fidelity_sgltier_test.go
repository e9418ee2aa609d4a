package calib

import (
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// TestFidelitySGLangChunkByMemory: a SGLang figure without its own token
// budget replays at its release's default chunked_prefill_size for the
// GPU's memory (sim.SGLangDefault): 0.5.6 on the RTX A6000 and the
// A100-40GB 4,096, on the A100-80GB 8,192, on the RTX 4090 2,048; 0.4.0 on
// the H200 8,192.
func TestFidelitySGLangChunkByMemory(t *testing.T) {
	fig := publishedFigure(t)
	files := map[string][]*workload.BenchResult{}
	for id, want := range map[string]int{
		"accelmark-rtx-a6000-48g-sglang-0.5.6-suite-a-online-qps25-tpot-median": 4096,
		"accelmark-a100-40g-sglang-0.5.6-suite-b-online-qps25-tpot-median":      4096,
		"accelmark-a100-80g-sglang-0.5.6-suite-a-online-qps25-tpot-median":      8192,
		"accelmark-rtx4090-24g-sglang-0.5.6-suite-a-online-qps25-tpot-median":   2048,
		"datacrunch-70b-tp4-random-1-1024-1024-ttft-median":                     8192,
	} {
		p, err := fidTranslate(fig(id), fidOpenFixture, files)
		if err != nil {
			t.Fatal(err)
		}
		if p.skip != "" {
			t.Fatalf("%s: skipped: %s", id, p.skip)
		}
		if got := p.sim.cfg.MaxBatchTokens; got != want || !p.sim.cfg.ChunkedPrefill {
			t.Errorf("%s: chunk %d (chunked prefill %v), want %d", id, got, p.sim.cfg.ChunkedPrefill, want)
		}
	}
}
