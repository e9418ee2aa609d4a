package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/model"
)

// TestSGLangDefaultsByTier pins SGLangDefault to SGLang's sources, one row
// a memory tier, TP class and release (the citations are in
// profile_engine.go): the largest decode batch captured as a CUDA graph,
// how many sizes are captured up to it, and chunked_prefill_size. The
// GPUs are the presets, whose capacity is nvidia-smi's memory.total in
// MiB, the figure SGLang compares.
func TestSGLangDefaultsByTier(t *testing.T) {
	for _, c := range []struct {
		version string
		gpu     string
		tp      int
		max     int // largest size, 0 for none
		n       int // sizes
		chunk   int
	}{
		// 0.5.5 on (0.5.6: AccelMark's release and the default):
		// [1, 2, 4, 8, 12] + 16..256 by 8 + 272..496 by 16 + 512, cut at
		// cuda_graph_max_bs.
		{"0.5.6", "t4-16g", 1, 8, 4, 2048},        // below 20 GiB
		{"0.5.6", "t4-16g", 4, 8, 4, 2048},        // any TP
		{"0.5.6", "rtx4090-24g", 1, 24, 7, 2048},  // below 35 GiB, TP < 4
		{"0.5.6", "rtx4090-24g", 2, 24, 7, 2048},  //
		{"0.5.6", "rtx4090-24g", 4, 80, 14, 2048}, // TP ≥ 4
		{"0.5.6", "a10g-24g", 1, 24, 7, 2048},
		{"0.5.6", "rtx-a6000-48g", 1, 32, 8, 4096}, // below 60 GiB
		{"0.5.6", "a100-40g", 1, 32, 8, 4096},
		{"0.5.6", "a100-40g", 8, 160, 24, 4096}, // AccelMark's Llama-3-70B at TP 8
		{"0.5.6", "l40s-48g", 2, 32, 8, 4096},
		{"0.5.6", "a100-80g", 1, 256, 36, 8192}, // below 90 GiB
		{"0.5.6", "a800-80g", 1, 256, 36, 8192},
		{"0.5.6", "h100-80g", 4, 512, 52, 8192},
		{"0.5.6", "h200-141g", 1, 256, 36, 8192}, // below 160 GiB
		{"0.5.6", "h200-141g", 8, 512, 52, 8192},
		{"0.5.6", "b200-192g", 1, 512, 52, 16384}, // above: any TP
		{"0.5.18", "rtx4090-24g", 1, 24, 7, 2048},
		{"0.5.5", "rtx4090-24g", 1, 24, 7, 2048},
		{"0.5.4", "rtx4090-24g", 1, 16, 6, 2048}, // 16 in 0.5.3-0.5.4
		{"0.5.3", "rtx4090-24g", 4, 80, 14, 2048},
		{"0.5.3", "a100-80g", 1, 256, 36, 8192},
		// 0.4.8-0.5.2: [1, 2, 4, 8] + 16..160 by 8, 168..256 above 90 GiB,
		// 272..512 by 16 above 160,000 MiB; 8 / 80 below 35 GiB.
		{"0.5.2", "rtx4090-24g", 1, 8, 4, 2048},
		{"0.5.2", "rtx4090-24g", 4, 80, 13, 2048},
		{"0.5.2", "rtx-a6000-48g", 1, 160, 23, 8192},
		{"0.5.2", "a100-80g", 1, 160, 23, 8192},
		{"0.5.2", "h200-141g", 1, 256, 35, 8192},
		{"0.4.9", "b200-192g", 1, 512, 51, 16384},
		// 0.4.7: above 96 GiB and 180,000 MiB (0.4.8: the H200 is above both).
		{"0.4.8", "h200-141g", 2, 256, 35, 8192},
		{"0.4.7", "b200-192g", 1, 512, 51, 16384},
		{"0.4.7", "rtx-a6000-48g", 1, 160, 23, 8192},
		// 0.4.6: 168..256 above 81,920 MiB (the A100-80GB's is not above).
		{"0.4.6", "a100-80g", 1, 160, 23, 8192},
		{"0.4.6", "h200-141g", 4, 256, 35, 8192},
		{"0.4.6", "rtx4090-24g", 4, 80, 13, 2048},
		// 0.4.0-0.4.5: [1, 2, 4] + 8..160 by 8, cut at 160, or 8 below
		// 25,000 MiB (80 at TP ≥ 4 from 0.4.1). 0.4.0 is datacrunch's.
		{"0.4.0", "h200-141g", 4, 160, 23, 8192},
		{"0.4.0", "h200-141g", 8, 160, 23, 8192},
		{"0.4.0", "rtx4090-24g", 4, 8, 4, 2048},
		{"0.4.0", "a10g-24g", 1, 8, 4, 2048},
		{"0.4.5", "rtx4090-24g", 4, 80, 13, 2048},
		{"0.4.5", "rtx3090-24g", 1, 8, 4, 2048}, // 24,576 MiB
		{"0.4.5", "l40s-48g", 1, 160, 23, 8192},
		// Before 0.4: to 160 from 0.2.14 (4 below 25,000 MiB in 0.3.6),
		// 128 from 0.1.22, 120 from 0.1.20, none before; chunked prefill
		// on by default from 0.2.13.
		{"0.3.6", "rtx4090-24g", 1, 4, 3, 2048},
		{"0.3.6", "a100-80g", 1, 160, 23, 8192},
		{"0.3.5", "rtx4090-24g", 1, 160, 23, 8192},
		{"0.2.14", "a100-80g", 1, 160, 23, 8192},
		{"0.2.13", "a100-80g", 1, 128, 19, 8192},
		{"0.2.12", "a100-80g", 1, 128, 19, 0},
		{"0.1.22", "a100-80g", 1, 128, 19, 0},
		{"0.1.21", "a100-80g", 1, 120, 18, 0},
		{"0.1.19", "a100-80g", 1, 0, 0, 0},
	} {
		name := fmt.Sprintf("%s %s tp %d", c.version, c.gpu, c.tp)
		v, err := ParseEngineVersion(EngineSGLang, c.version)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		g, err := model.LookupGPU(c.gpu)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d := SGLangDefault(v, g.Capacity, c.tp)
		top := 0
		if len(d.GraphSizes) > 0 {
			top = d.GraphSizes[len(d.GraphSizes)-1]
		}
		if top != c.max || len(d.GraphSizes) != c.n || d.ChunkedPrefill != c.chunk {
			t.Errorf("%s (%d MiB): sizes %v (%d, to %d), chunk %d; want %d sizes to %d, chunk %d",
				name, g.Capacity>>20, d.GraphSizes, len(d.GraphSizes), top, d.ChunkedPrefill, c.n, c.max, c.chunk)
		}
		for i := 1; i < len(d.GraphSizes); i++ {
			if d.GraphSizes[i] <= d.GraphSizes[i-1] {
				t.Errorf("%s: sizes %v repeat or descend at %d", name, d.GraphSizes, i)
			}
		}
		// The profile captures the same sizes at this TP.
		gt := engineGraphs(EngineSGLang, v, g.Capacity)
		if got := graphSizes(gt, c.tp); !slices.Equal(got, d.GraphSizes) {
			t.Errorf("%s: the profile captures %v at tp %d, want %v (%+v)", name, got, c.tp, d.GraphSizes, gt)
		}
	}
}

// TestSGLangGraphsByTP: the profile of SGLang 0.5.6 on an RTX A6000 runs
// a decode batch of 33 eagerly at TP 1 (cuda_graph_max_bs 32) and as a
// graph at TP 4 (160); the eager step is charged eager_per_layer_ns on
// every layer. At 0.4.0 both run it as a graph (160 at any TP).
func TestSGLangGraphsByTP(t *testing.T) {
	p, err := DefaultProfile("rtx-a6000-48g", EngineSGLang, "0.5.6")
	if err != nil {
		t.Fatal(err)
	}
	if p.CUDAGraph.SmallTPMax != 32 || p.CUDAGraph.Sizes[len(p.CUDAGraph.Sizes)-1] != 160 {
		t.Fatalf("cuda_graph %+v, want sizes to 160 and 32 at TP < 4", p.CUDAGraph)
	}
	m, err := model.Preset("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		version string
		tp      int
		graph   bool
	}{{"0.5.6", 1, false}, {"0.5.6", 2, false}, {"0.5.6", 4, true}, {"0.4.0", 1, true}} {
		p, err := DefaultProfile("rtx-a6000-48g", EngineSGLang, c.version)
		if err != nil {
			t.Fatal(err)
		}
		s := NewShape(m, c.tp, model.BF16)
		at32 := p.Compile(s).Time(Step{DecodeSeqs: 32, DecodeContext: 32 * 500, Sampled: 32})
		at33 := p.Compile(s).Time(Step{DecodeSeqs: 33, DecodeContext: 33 * 500, Sampled: 33})
		if !at32.Graph || at33.Graph != c.graph {
			t.Errorf("%s tp %d: batch 32 graph %v, 33 graph %v; want true, %v", c.version, c.tp, at32.Graph, at33.Graph, c.graph)
		}
		eager := float64(p.Overhead.EagerPerLayerNs) * float64(m.Layers)
		if !c.graph && at33.OverheadNs-at32.OverheadNs < eager-1 {
			t.Errorf("%s tp %d: the eager batch's overhead %g ns is not the graph's %g plus %g per layer × %d",
				c.version, c.tp, at33.OverheadNs, at32.OverheadNs, float64(p.Overhead.EagerPerLayerNs), m.Layers)
		}
	}
}

// TestSmallTPMaxValidate: small_tp_max must be one of the sizes, and a
// profile file carries it through WriteYAML and LoadProfile.
func TestSmallTPMaxValidate(t *testing.T) {
	p, err := DefaultProfile("a100-80g", EngineSGLang, "0.5.6")
	if err != nil {
		t.Fatal(err)
	}
	if p.CUDAGraph.SmallTPMax != 256 {
		t.Fatalf("small_tp_max %d, want 256", p.CUDAGraph.SmallTPMax)
	}
	var b strings.Builder
	if err := p.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "small_tp_max: 256") {
		t.Errorf("written profile lacks small_tp_max:\n%s", b.String())
	}
	q, err := LoadProfile(strings.NewReader(b.String()), "a100.yaml")
	if err != nil || q.CUDAGraph.SmallTPMax != 256 {
		t.Fatalf("read back: %+v, %v", q, err)
	}
	for _, bad := range []int{-1, 100, 1000} {
		q := p.Clone()
		q.CUDAGraph.SmallTPMax = bad
		if err := q.Validate(); !errors.Is(err, ErrBadProfile) || !strings.Contains(err.Error(), "small_tp_max") {
			t.Errorf("small_tp_max %d: %v, want ErrBadProfile naming it", bad, err)
		}
	}
	q = p.Clone()
	q.CUDAGraph.Sizes = nil
	if err := q.Validate(); !errors.Is(err, ErrBadProfile) {
		t.Errorf("small_tp_max without sizes: %v", err)
	}
}

// TestSGLangDefaults048: SGLang 0.4.8 already has 0.4.9's thresholds
// (v0.4.8 server_args.py:320-337: chunk 2,048 below 35 GiB, 8,192 below
// 160 GiB, 16,384 above, cuda_graph_max_bs 8 / 80 below 35 GiB;
// cuda_graph_runner.py:160-163: 168..256 above 90 GiB, 272..512 above
// 160,000 MiB; from 0.4.7.post1, taken as 0.4.7), 0.4.7 the older ones.
// No preset's memory falls between them: custom capacities, in MiB.
func TestSGLangDefaults048(t *testing.T) {
	for _, c := range []struct {
		version       string
		mib           int64
		max, n, chunk int
	}{
		{"0.4.8", 30000, 8, 4, 2048},
		{"0.4.8", 95000, 256, 35, 8192},
		{"0.4.8", 170000, 512, 51, 16384},
		{"0.4.7", 30000, 160, 23, 8192},
		{"0.4.7", 95000, 160, 23, 8192},
		{"0.4.7", 170000, 256, 35, 8192},
	} {
		v, err := ParseEngineVersion(EngineSGLang, c.version)
		if err != nil {
			t.Fatal(err)
		}
		d := SGLangDefault(v, c.mib<<20, 1)
		top := 0
		if len(d.GraphSizes) > 0 {
			top = d.GraphSizes[len(d.GraphSizes)-1]
		}
		if top != c.max || len(d.GraphSizes) != c.n || d.ChunkedPrefill != c.chunk {
			t.Errorf("%s at %d MiB: %d sizes to %d, chunk %d; want %d to %d, chunk %d",
				c.version, c.mib, len(d.GraphSizes), top, d.ChunkedPrefill, c.n, c.max, c.chunk)
		}
	}
}
