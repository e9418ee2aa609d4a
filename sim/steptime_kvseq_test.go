package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/model"
)

// kvHalfTableURL is the kernel table the prior's attention.kv_seq_ns is
// drawn from (h/kvhalf12 read it as tokens, attention.kv_half_context).
const kvHalfTableURL = "https://github.com/vllm-project/vllm/pull/19825"

// kvHalfTable is vllm-project/vllm#19825's kernel benchmark (pavanimajety,
// 2025-07-09; benchmarks/kernels/benchmark_trtllm_decode_attention.py on a
// B200, BF16 KV cache, 64 query and 8 KV heads of 128, 16-token pages):
// one decode attention call's mean latency in ms by batch and max_seq_len,
// FlashInfer's paged decode kernel (BatchDecodeWithPagedKVCacheWrapper,
// "base_mean") and TensorRT-LLM's (trtllm_batch_decode_with_kv_cache,
// "trt_mean"). The script draws each sequence's KV length uniformly from
// [1, max_seq_len) and sets the last to max_seq_len.
var kvHalfTable = []struct {
	batch, maxLen   float64
	flashinfer, trt float64 // ms
}{
	{1, 1024, 0.044, 0.031}, {4, 1024, 0.042, 0.030}, {8, 1024, 0.045, 0.030}, {16, 1024, 0.047, 0.031},
	{32, 1024, 0.055, 0.038}, {64, 1024, 0.066, 0.046}, {128, 1024, 0.091, 0.070}, {256, 1024, 0.130, 0.102},
	{1, 2048, 0.043, 0.029}, {4, 2048, 0.044, 0.031}, {8, 2048, 0.048, 0.032}, {16, 2048, 0.055, 0.037},
	{32, 2048, 0.071, 0.049}, {64, 2048, 0.087, 0.066}, {128, 2048, 0.124, 0.100}, {256, 2048, 0.191, 0.174},
}

// kvHalfTableKVHeads is the table's KV heads (one GPU, no tensor
// parallelism); kvHalfTableBytesPerToken is one layer's KV bytes a token in
// its setup: 8 KV heads × 128 × K and V × 2 bytes.
const (
	kvHalfTableKVHeads       = 8
	kvHalfTableBytesPerToken = kvHalfTableKVHeads * 128 * 2 * 2
)

// fitKVHalfTable fits the step model's decode attention form to one column
// of kvHalfTable, its rows of at least minBatch sequences, by least squares: t = a + b × Σctx + c × batch, that is
// a + b × batch × (ctx + h) with h = c ÷ b, where Σctx is the batch's
// expected KV tokens, (batch − 1) × maxLen ÷ 2 + maxLen. a is the call's
// fixed cost (launch and the host's share, which the step model counts
// elsewhere); b the ns a KV token; h the tokens' worth each sequence adds
// (the term attention.kv_half_context). It returns a (ns), b (ns a token),
// h and the rms log error.
func fitKVHalfTable(col func(i int) float64, minBatch float64) (a, b, h, rmsLog float64) {
	var rows [][]float64 // one row of (a, b, c) per sequence count kept
	var y []float64
	for i, r := range kvHalfTable {
		if r.batch < minBatch {
			continue
		}
		rows = append(rows, []float64{1, (r.batch-1)*r.maxLen/2 + r.maxLen, r.batch})
		y = append(y, col(i)*1e6)
	}
	n := len(rows)
	sol := leastSquares(rows, y)
	a, b, c := sol[0], sol[1], sol[2]
	var sum float64
	for i, r := range kvHalfTable {
		if r.batch < minBatch {
			continue
		}
		pred := a + b*((r.batch-1)*r.maxLen/2+r.maxLen) + c*r.batch
		sum += math.Pow(math.Log(pred/(col(i)*1e6)), 2)
	}
	return a, b, c / b, math.Sqrt(sum / float64(n))
}

// TestPriorKVSeqNsFromKernelTable: the prior's attention.kv_seq_ns is
// the per-sequence cost of the step model's form fitted to FlashInfer's
// paged decode kernel in the cited table, as a time: c = h × b ns a
// sequence and layer (one call is one layer), over the table's 8 KV heads
// (the kernel's work units are (sequence, KV head) pairs), to 0.1 ns. The
// other kernel of the same table (TensorRT-LLM's, Blackwell only) costs
// about a fifth of it: the test pins both, and the tokens' reading the
// eleventh session quoted (h 187 and 37), so the comments stay true.
// Changing the prior or the table without redoing the other fails here.
func TestPriorKVSeqNsFromKernelTable(t *testing.T) {
	flashinfer := func(i int) float64 { return kvHalfTable[i].flashinfer }
	trt := func(i int) float64 { return kvHalfTable[i].trt }
	a, b, h, rms := fitKVHalfTable(flashinfer, 0)
	seq := h * b / kvHalfTableKVHeads
	t.Logf("FlashInfer: a %.1f µs, b %.4f ns a token (%.2f TB/s of one layer's KV), h %.1f tokens = %.1f ns a sequence and layer = %.2f ns a sequence, KV head and layer, rms log error %.3f",
		a/1e3, b, kvHalfTableBytesPerToken/b/1e3, h, h*b, seq, rms)
	ta, tb, th, trms := fitKVHalfTable(trt, 0)
	tseq := th * tb / kvHalfTableKVHeads
	t.Logf("TensorRT-LLM: a %.1f µs, b %.4f ns a token (%.2f TB/s), h %.1f tokens = %.1f ns = %.2f ns a KV head, rms log error %.3f",
		ta/1e3, tb, kvHalfTableBytesPerToken/tb/1e3, th, th*tb, tseq, trms)
	j := PriorJoint()
	if got, want := j.Attention.KVSeqNs, math.Round(seq*10)/10; got != want {
		t.Errorf("prior.yaml attention.kv_seq_ns = %v, want %v (FlashInfer's %.3f ns a sequence, KV head and layer in %s)", got, want, seq, kvHalfTableURL)
	}
	if j.Attention.KVHalfContext != 0 {
		t.Errorf("prior.yaml attention.kv_half_context = %v: the per-sequence cost is kv_seq_ns's alone", j.Attention.KVHalfContext)
	}
	if math.Round(h) != 187 || math.Round(h*b) != 91 || rms > 0.05 {
		t.Errorf("FlashInfer's column: h %.1f tokens, %.1f ns, rms %.3f; the comments quote 187, 91 ns and 0.049", h, h*b, rms)
	}
	if math.Round(th) != 37 || math.Round(th*tb) != 20 || trms > 0.04 {
		t.Errorf("TensorRT-LLM's column: h %.1f, %.1f ns, rms %.3f; the comments quote 37 tokens, 20 ns and 0.035", th, th*tb, trms)
	}
	// The slope is the B200's bandwidth (8 TB/s) to within the table's
	// rounding and its random lengths: the form reads the table as the
	// kernel streaming KV, not as something else.
	for _, bw := range []float64{kvHalfTableBytesPerToken / b / 1e3, kvHalfTableBytesPerToken / tb / 1e3} {
		if bw < 6 || bw > 9 {
			t.Errorf("the fitted slope is %.2f TB/s of KV reads on a B200 (8 TB/s)", bw)
		}
	}
	text := string(PriorYAML())
	if !strings.Contains(text, kvHalfTableURL) {
		t.Errorf("prior.yaml's comments do not cite %s", kvHalfTableURL)
	}
}

// TestKVSeqNsAcrossShapes: attention.kv_seq_ns is a time a (sequence, KV
// head) work unit and layer, so a decoding sequence's fixed cost is
// t_seq × KV heads on the GPU × layers whatever the GPU's bandwidth and the
// KV's element type; in tokens of KV reads (what kv_half_context was) it
// is fewer on a slower GPU and more with FP8 KV. The rows are the setups
// docs/calibrate.md (issue 24, twelfth session) quotes: the table's own
// shape on its B200, the vLLM paper's OPT-13B (MHA) on an A100-40GB, GQA
// 70B at TP 4 and 8, and FP8 KV.
func TestKVSeqNsAcrossShapes(t *testing.T) {
	j := PriorJoint()
	tseq := j.Attention.KVSeqNs
	rows := []struct {
		model, gpu string
		tp         int
		kv         model.DType
		heads      int // KV heads a GPU
	}{
		{"llama-3-8b", "b200-192g", 1, model.BF16, 8},
		{"llama-3-8b", "a100-40g", 1, model.BF16, 8},
		{"llama-3-8b", "a100-80g", 1, model.BF16, 8},
		{"llama-3-8b", "h100-80g", 1, model.FP8E4M3, 8},
		{"opt-13b", "a100-40g", 1, model.BF16, 40},
		{"llama-3-70b", "h100-80g", 4, model.BF16, 2},
		{"llama-3-70b", "a100-80g", 8, model.BF16, 1},
		{"llama-3-70b", "h100-80g", 8, model.FP8E4M3, 1},
	}
	for _, r := range rows {
		m, err := model.Preset(r.model)
		if err != nil {
			t.Fatal(err)
		}
		g, err := model.LookupGPU(r.gpu)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PriorProfile(r.gpu, EngineVLLMV1, "")
		if err != nil {
			t.Fatal(err)
		}
		s := NewShape(m, r.tp, r.kv)
		if s.KVHeads != r.heads {
			t.Errorf("%s at TP %d: %d KV heads a GPU, want %d", r.model, r.tp, s.KVHeads, r.heads)
		}
		c := p.Compile(s)
		want := tseq * float64(r.heads) * float64(m.Layers)
		if !near(c.kvSeqNs, want) {
			t.Errorf("%s on %s TP %d: %.1f ns a sequence, want t_seq × %d KV heads × %d layers = %.1f", r.model, r.gpu, r.tp, c.kvSeqNs, r.heads, m.Layers, want)
		}
		// In tokens at the full bandwidth (the table's own reading) and at
		// the model's kv_bw_eff.
		full := c.kvSeqNs / (s.KVBytesPerToken / (g.MemBandwidth / 1e9))
		t.Logf("%-11s %-9s TP %d %-7v KV heads %2d: %6.0f ns a sequence (%5.1f a layer) = %5.1f tokens of KV reads at the full bandwidth, %5.1f at kv_bw_eff %.2f",
			r.model, r.gpu, r.tp, r.kv, r.heads, c.kvSeqNs, c.kvSeqNs/float64(m.Layers), full, c.kvSeqNs/c.kvNsPerTok, p.Attention.KVBWEff)
	}
	// In tokens at the full bandwidth, the prior reads on the table's B200
	// as 178 (the table's 187 at its fitted 8.43 TB/s; the preset has 8)
	// and on an A100-40GB as 34.6, the lead's reading (187 × 1.555 ÷ 8 ≈
	// 36) and next to the refit's h of 34.9 there.
	tokens := func(gpu string) float64 {
		g, _ := model.LookupGPU(gpu)
		return tseq * kvHalfTableKVHeads / (kvHalfTableBytesPerToken / (g.MemBandwidth / 1e9))
	}
	if b, a := tokens("b200-192g"), tokens("a100-40g"); math.Round(b) != 178 || math.Round(a*10) != 346 {
		t.Errorf("the prior reads as %.0f tokens on a B200 and %.0f on an A100-40GB: not a time", b, a)
	}
}

// TestKVHalfContextStillReads: a profile written before kv_seq_ns (only
// kv_half_context, in tokens) reads and times as it did, a decoding
// sequence costing ctx½ tokens' reads; one with kv_seq_ns writes no
// kv_half_context; one with neither is refused, naming the field, both
// names and the line of the attention block.
func TestKVHalfContextStillReads(t *testing.T) {
	old, err := LoadProfile(strings.NewReader(h100ProfileYAML), "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if old.Attention.KVHalfContext != 64 || old.Attention.KVSeqNs != 0 {
		t.Fatalf("old profile: attention %+v", old.Attention)
	}
	s := NewShape(mustPreset(t, "llama-3-8b"), 1, model.BF16)
	c := old.Compile(s)
	if want := 64 * s.KVBytesPerToken / (old.Peak.MemBytesPerS * old.Attention.KVBWEff / 1e9); c.kvSeqNs != want {
		t.Errorf("old profile: %v ns a sequence, want 64 tokens' reads = %v", c.kvSeqNs, want)
	}
	var buf bytes.Buffer
	if err := old.WriteYAML(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "kv_half_context: 64") || !strings.Contains(buf.String(), "kv_seq_ns: 0") {
		t.Errorf("old profile written back:\n%s", buf.String())
	}
	newText := strings.Replace(h100ProfileYAML, "  kv_half_context: 64\n", "  kv_seq_ns: 11.4\n", 1)
	p, err := LoadProfile(strings.NewReader(newText), "new.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Compile(s).kvSeqNs, 11.4*8*32; !near(got, want) {
		t.Errorf("new profile: %v ns a sequence, want %v", got, want)
	}
	buf.Reset()
	if err := p.WriteYAML(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "kv_half_context") {
		t.Errorf("a profile with kv_seq_ns writes kv_half_context:\n%s", buf.String())
	}
	neither := strings.Replace(h100ProfileYAML, "  kv_half_context: 64\n", "", 1)
	line := fmt.Sprintf("line %d:", 1+strings.Count(neither[:strings.Index(neither, "\nattention:")+1], "\n")+1)
	_, err = LoadProfile(strings.NewReader(neither), "neither.yaml")
	for _, w := range []string{"neither.yaml", line, "attention.kv_seq_ns missing", "kv_half_context"} {
		if err == nil || !strings.Contains(err.Error(), w) || !errors.Is(err, ErrBadProfile) {
			t.Errorf("a profile with neither field: error %v, want it to say %q", err, w)
		}
	}
}

func mustPreset(t *testing.T, name string) model.Model {
	t.Helper()
	m, err := model.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
