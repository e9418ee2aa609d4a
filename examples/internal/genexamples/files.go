package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/optrace"
	"github.com/gpufrag/gpufrag/optrace/synth"
)

// An exampleFile is one file of examples/ and how it is made: from a file of
// ../shared/data (src, relative to it) or from nothing (src empty).
type exampleFile struct {
	name string
	src  string
	gen  func(src []byte) ([]byte, error)
}

// exampleFiles lists every generated file; examples/README.md gives each
// one's origin and licence in the same words.
var exampleFiles = []exampleFile{
	{"azure_conv.csv", "traces/AzureLLMInferenceTrace_conv.csv", headLines(1 + 1400)},
	{"mooncake_conv.jsonl", "traces/mooncake_conversation_trace.jsonl", headLines(400)},
	{"sharegpt.csv", "traces/sharegpt_8k_filtered_stats_llama2_tokenizer.part1.csv", headLines(1 + 1000)},
	{"fineserve.csv", "", func([]byte) ([]byte, error) { return fineServe(), nil }},
	{"burstgpt.csv", "", func([]byte) ([]byte, error) { return burstGPT(), nil }},
	{"vllm_bench_qps01.json", "bench/surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_01.json", cutBench(benchRequests)},
	{"vllm_bench_qps16.json", "bench/surajssd__llm-k8s__results_serving_meta-llama-Llama-3.3-70B-Instruct__01_tp8_pp1__serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_16.json", cutBench(benchRequests)},
	{"sglang_bench.jsonl", "bench/datacrunch-research__h200-benchmarks__sglang__outputs__llama_3_3_70b_online_output.jsonl", same},
	{"qwen2.5-7b.config.json", "models/qwen2.5-7b.config.json", same},
	{"nodes.csv", "openb/openb_node_list_gpu_node.csv", headLines(1 + 200)},
	{"pods.csv", "openb/openb_pod_list_default.csv", headLines(1 + 400)},
	{"ops.jsonl", "", func([]byte) ([]byte, error) { return opsTrace() }},
	{"snapshot.pickle", "", func([]byte) ([]byte, error) { return snapshotPickle() }},
	{"snapshot-later.pickle", "", func([]byte) ([]byte, error) { return servingSnapshot(laterOps, false) }},
}

// benchRequests is how many requests the vLLM benchmark cuts keep: enough
// for calibrate to have a spread of lengths, small enough to keep each file
// near 120 KB (a request's itls and text are about 5.5 KB).
const benchRequests = 20

// same is the copy of a file unchanged.
func same(src []byte) ([]byte, error) { return src, nil }

// headLines keeps the first n lines of a file, bytes unchanged (CRLF
// endings stay); the last line kept ends with its line break.
func headLines(n int) func([]byte) ([]byte, error) {
	return func(src []byte) ([]byte, error) {
		at := 0
		for range n {
			i := bytes.IndexByte(src[at:], '\n')
			if i < 0 {
				return nil, fmt.Errorf("the source has fewer than %d lines", n)
			}
			at += i + 1
		}
		return src[:at], nil
	}
}

// benchArrays are the per-request arrays of vLLM's --save-result JSON.
var benchArrays = []string{"input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"}

// cutBench cuts every per-request array of a vLLM benchmark_serving.py
// --save-result file to its first n requests; every other key and value
// stays as written, summary figures included (so they describe all the
// requests of the run). It writes the object back as Python's json.dumps
// does (", " and ": " separators, values as they were written), which
// reproduces the source byte for byte when nothing is cut.
func cutBench(n int) func([]byte) ([]byte, error) {
	return func(src []byte) ([]byte, error) {
		dec := json.NewDecoder(bytes.NewReader(src))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return nil, fmt.Errorf("not a JSON object: %w", err)
		}
		var out bytes.Buffer
		out.WriteByte('{')
		for first := true; dec.More(); first = false {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key := tok.(string)
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, fmt.Errorf("key %q: %w", key, err)
			}
			if slices.Contains(benchArrays, key) {
				var elems []json.RawMessage
				if err := json.Unmarshal(raw, &elems); err != nil {
					return nil, fmt.Errorf("key %q: %w", key, err)
				}
				parts := make([]string, 0, min(n, len(elems)))
				for _, e := range elems[:min(n, len(elems))] {
					parts = append(parts, string(e)) // the element's bytes as written
				}
				raw = json.RawMessage("[" + strings.Join(parts, ", ") + "]")
			}
			if !first {
				out.WriteString(", ")
			}
			k, _ := json.Marshal(key)
			out.Write(k)
			out.WriteString(": ")
			out.Write(raw)
		}
		out.WriteByte('}')
		return out.Bytes(), nil
	}
}

// synthRand is the random source of the synthetic traces, one stream per
// file, so each is a pure function of its seed.
func synthRand(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(2026, stream)) }

// logUniform draws an integer in [lo, hi] with log-uniform density.
func logUniform(r *rand.Rand, lo, hi int) int {
	a, b := math.Log(float64(lo)), math.Log(float64(hi)+1)
	return min(hi, int(math.Exp(a+r.Float64()*(b-a))))
}

// fineServe is a FineServe-format trace written by us (FineServe states no
// licence, so no rows are copied): 300 requests, Poisson arrivals at 0.5
// requests/s, timestamps in microseconds as the upstream file has them,
// prompts of 64-6000 and outputs of 0-800 tokens drawn log-uniformly (a few
// zero-length outputs, as upstream has).
func fineServe() []byte {
	r := synthRand(1)
	var b bytes.Buffer
	b.WriteString("input_length,output_length,latency,timestamp,architecture,scale\n")
	t := 0.0
	for i := range 300 {
		if i > 0 {
			t += r.ExpFloat64() / 0.5 * 1e6
		}
		out := logUniform(r, 1, 801) - 1
		fmt.Fprintf(&b, "%d,%d,%.4f,%.1f,Dense,30-100B\n", logUniform(r, 64, 6000), out, 0.001+r.Float64()/1000, t)
	}
	return b.Bytes()
}

// burstGPT is a BurstGPT-format trace written by us with the columns of its
// README (the real files are Git LFS objects and release assets): 300
// requests over about 10 minutes, arrivals in bursts (a gamma process of
// shape 0.25, mean gap 2 s), a third of them in 20 multi-turn sessions,
// ChatGPT and GPT-4, conversation and API logs, integer seconds as upstream.
func burstGPT() []byte {
	r := synthRand(2)
	var b bytes.Buffer
	b.WriteString("Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
	t := 0.0
	for range 300 {
		t += gamma(r, 0.25) * 2 / 0.25 // mean shape × scale = 2 s
		session, logType := "", "API log"
		if r.IntN(3) == 0 {
			session, logType = fmt.Sprintf("s%02d", r.IntN(20)), "Conversation log"
		}
		model := "ChatGPT"
		if r.IntN(5) == 0 {
			model = "GPT-4"
		}
		in, out := logUniform(r, 16, 4000), logUniform(r, 1, 1000)
		fmt.Fprintf(&b, "%d,%s,%.1f,%s,%d,%d,%d,%s\n", int(t), session, 0.5+float64(out)*0.02, model, in, out, in+out, logType)
	}
	return b.Bytes()
}

// gamma draws from a gamma distribution of the given shape (< 1) and scale
// 1, by Ahrens and Dieter's GS method: enough for bursty arrivals.
func gamma(r *rand.Rand, shape float64) float64 {
	for {
		u, p := r.Float64(), 1+shape/math.E
		if x := p * u; x <= 1 {
			y := math.Pow(x, 1/shape)
			if r.Float64() <= math.Exp(-y) {
				return y
			}
		} else {
			y := -math.Log((p - x) / shape)
			if r.Float64() <= math.Pow(y, shape-1) {
				return y
			}
		}
	}
}

// opsTrace is an allocation op trace from the project's serving generator
// (optrace/synth): a Llama-3-8B-like server whose weights are not in the
// trace (replay's --other stands for them), a 20 GiB KV budget, 3,000 ops.
func opsTrace() ([]byte, error) {
	c := synth.Llama3_8B()
	c.Seed, c.Ops, c.Weights, c.KVBudget = 2, 3000, 0, 20<<30
	ops, err := synth.GenerateServing(c)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := optrace.Write(&b, ops); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Call sites of the synthetic snapshot: what kind of tensor an op of
// optrace/synth allocates, by its id.
var (
	siteWeights = frames("model.py", 40, "load_weights")
	siteKV      = frames("engine.py", 212, "grow_kv_cache")
	siteAct     = map[string]*snaptest.Shared{
		"x":      frames("model.py", 88, "embed"),
		"qkv":    frames("model.py", 97, "attention"),
		"attn":   frames("model.py", 101, "attention"),
		"mlp":    frames("model.py", 120, "mlp"),
		"logits": frames("model.py", 131, "lm_head"),
	}
)

// frames is a Python stack of one frame above the allocator, shared through
// the pickle memo as PyTorch's snapshots share frame lists.
func frames(file string, line int, name string) *snaptest.Shared {
	return &snaptest.Shared{V: []any{
		snaptest.Dict{{"filename", file}, {"line", line}, {"name", name}},
		snaptest.Dict{{"filename", "serve.py"}, {"line", 12}, {"name", "main"}},
	}}
}

func siteOf(id string) *snaptest.Shared {
	switch {
	case id == "weights":
		return siteWeights
	case strings.Contains(id, ".kv"):
		return siteKV
	}
	if i := strings.IndexByte(id, '.'); i >= 0 {
		if s, ok := siteAct[id[i+1:]]; ok {
			return s
		}
	}
	return frames("model.py", 1, "unknown")
}

// snapshotPickle is a PyTorch memory snapshot (the modern format of
// torch.cuda.memory._dump_snapshot, pickle protocol 2) written from our
// model of PyTorch's caching allocator, not from a GPU: the weights of a
// Llama-3-8B-like server allocated before recording started, then 1,500 ops
// of optrace/synth's serving trace recorded as PyTorch records them
// (segment_alloc before the alloc that caused it, free_requested and
// free_completed, call-site frames, time_us), and the final segments and
// blocks. Because the model wrote it, analyze reproduces every address.
func snapshotPickle() ([]byte, error) { return servingSnapshot(1500, true) }

// laterOps is how far snapshot-later.pickle runs the same server: twice
// as many ops as snapshot.pickle, so `gpufrag diff` has one server at two
// moments to compare (its KV cache grew and moved).
const laterOps = 3000

// servingSnapshot is snapshotPickle's server after ops ops of the same
// trace (seed 3); without trace, the file holds the final segments only
// (as a snapshot taken without _record_memory_history), which keeps it
// small.
func servingSnapshot(nops int, withTrace bool) ([]byte, error) {
	c := synth.Llama3_8B()
	c.Seed, c.Ops = 3, nops
	ops, err := synth.GenerateServing(c)
	if err != nil {
		return nil, err
	}
	dev := mem.MustDevice(80<<30, 0)
	a, err := registry.New("caching", dev)
	if err != nil {
		return nil, err
	}
	type live struct {
		blk   alloc.Block
		req   int64
		sites *snaptest.Shared
	}
	lives := map[string]live{}
	byAddr := map[uint64]*snaptest.Shared{}  // live block → its frames
	segSite := map[uint64]*snaptest.Shared{} // segment → the frames of the alloc that made it
	segs := func() map[uint64]int64 {
		m := map[uint64]int64{}
		for _, s := range a.Layout().Segments {
			m[s.Addr] = s.Size
		}
		return m
	}
	const t0 = 1_764_600_000_000_000 // µs since the Unix epoch (2025-12-01)
	now := int64(t0)
	var trace []any
	event := func(action string, addr uint64, size int64, f *snaptest.Shared) {
		e := snaptest.Dict{{"action", action}, {"addr", addr}, {"size", size}, {"stream", 0}, {"time_us", now}}
		if f != nil {
			e = append(e, snaptest.KV{"frames", f})
		}
		trace = append(trace, e)
	}
	for i, op := range ops {
		recording := i > 0 // the weights (op 0) were allocated before recording started
		switch op.Kind {
		case optrace.Alloc:
			before := segs()
			blk, err := a.Alloc(op.Size, op.Stream)
			if err != nil {
				return nil, fmt.Errorf("op %d (%s): %w", i, op.ID, err)
			}
			site := siteOf(op.ID)
			after := segs()
			if recording {
				for _, addr := range sortedKeys(before) {
					if _, ok := after[addr]; !ok {
						event("segment_free", addr, before[addr], segSite[addr])
					}
				}
			}
			for _, addr := range sortedKeys(after) {
				if _, ok := before[addr]; !ok {
					segSite[addr] = site
					if recording {
						event("segment_alloc", addr, after[addr], site)
					}
				}
			}
			if recording {
				event("alloc", blk.Addr, op.Size, site)
			}
			lives[op.ID] = live{blk, op.Size, site}
			byAddr[blk.Addr] = site
		case optrace.Free:
			l := lives[op.ID]
			event("free_requested", l.blk.Addr, l.req, l.sites)
			if err := a.Free(l.blk.Handle); err != nil {
				return nil, fmt.Errorf("op %d (%s): %w", i, op.ID, err)
			}
			event("free_completed", l.blk.Addr, l.req, l.sites)
			delete(lives, op.ID)
			delete(byAddr, l.blk.Addr)
		case optrace.Sync:
			now += 15_000 // one engine step
		}
		now += 20
	}
	var segments []any
	for _, s := range a.Layout().Segments {
		var blocks []any
		var allocated, requested int64
		for _, b := range s.Blocks {
			blk := snaptest.Dict{{"address", b.Addr}, {"size", b.Size}, {"requested_size", b.Requested}}
			if b.State == mem.Free {
				blk = append(blk, snaptest.KV{"state", "inactive"}, snaptest.KV{"frames", []any{}})
			} else {
				allocated += b.Size
				requested += b.Requested
				blk = append(blk, snaptest.KV{"state", "active_allocated"}, snaptest.KV{"frames", byAddr[b.Addr]})
			}
			blocks = append(blocks, blk)
		}
		segments = append(segments, snaptest.Dict{
			{"device", 0}, {"address", s.Addr}, {"total_size", s.Size}, {"allocated_size", allocated},
			{"active_size", allocated}, {"requested_size", requested}, {"stream", 0}, {"segment_type", s.Pool},
			{"segment_pool_id", snaptest.Tuple{0, 0}}, {"is_expandable", false}, {"frames", segSite[s.Addr]},
			{"blocks", blocks},
		})
	}
	if !withTrace {
		trace = []any{}
	}
	doc := snaptest.Dict{
		{"segments", segments},
		{"device_traces", []any{trace}},
		{"allocator_settings", snaptest.Dict{
			{"PYTORCH_CUDA_ALLOC_CONF", ""}, {"max_split_size", -1}, {"garbage_collection_threshold", 0.0},
			{"expandable_segments", false}, {"pinned_num_register_threads", 1},
			{"release_lock_on_cudamalloc", false}, {"pinned_use_cuda_host_register", false},
		}},
		{"external_annotations", []any{}},
	}
	return snaptest.Encode(doc), nil
}

func sortedKeys(m map[uint64]int64) []uint64 {
	keys := make([]uint64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
