// Package synth generates synthetic allocation op traces (package optrace),
// deterministic for a seed, for examples, tests and benchmarks.
//
// Serving models one GPU of an LLM server in the naive framework style that
// fragments a caching allocator: every request keeps its KV cache in one
// contiguous tensor that grows by re-allocation and copy when it fills up
// (DESIGN.md's contiguous-grow), and every step allocates and frees
// activation buffers whose sizes follow the batch (prefill tokens and
// decoding sequences change from step to step). The queue never runs dry:
// requests are admitted whenever the batch and the KV budget allow, so the
// server runs near its memory limit, where allocators differ most.
//
// Invariants: Serving is a pure function of its config (no clock, no global
// random source); its output passes optrace.Validate; a shorter trace of the
// same config is a prefix of a longer one.
package synth

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gpufrag/gpufrag/optrace"
)

// Serving configures the LLM-serving trace generator. Sizes are bytes.
type Serving struct {
	Seed uint64 // the random source is rand.NewPCG(Seed, 0x5e7)
	Ops  int    // trace length: generation stops after exactly this many ops

	// Weights is allocated once, first, and never freed (0 for none).
	Weights int64
	// KVBytesPerToken is 2 × layers × kv_heads × head_dim × dtype bytes.
	KVBytesPerToken int64
	// KVChunkTokens: KV tensors hold whole chunks of this many tokens and
	// grow by one chunk (re-allocate, copy, free the old one) when full.
	KVChunkTokens int
	// KVBudget: a request is admitted only while the KV tensors of running
	// requests plus its own stay within this many bytes.
	KVBudget int64
	// MaxBatch is the most requests running at once.
	MaxBatch int
	// PrefillTokens is the prompt-token budget of one step (chunked prefill
	// without the chunking: at least one prompt is admitted per step).
	PrefillTokens int
	// PromptTokens and OutputTokens are [min, max] ranges; lengths are drawn
	// log-uniformly, so short requests are common and long ones occur.
	PromptTokens, OutputTokens [2]int

	// Model shape for activation buffers: bf16 hidden states, fused QKV and
	// gate/up projections, fp32 logits for the sequences sampled each step.
	Hidden, Intermediate, Vocab int
}

// Llama3_8B is a Llama-3-8B-like server on one 80 GiB GPU (bf16 weights
// and KV cache): 15 GiB of weights, 128 KiB of KV per token, a 54 GiB KV
// budget (with activations, about 70 GiB live at the peak: 88% of the GPU),
// up to 256 running requests, prompts of 128 to 8192 tokens and outputs of
// 16 to 1024. Set Ops (and Seed) before use.
func Llama3_8B() Serving {
	return Serving{
		Seed:            1,
		Weights:         16_060_522_496, // 8.03B parameters × 2 bytes
		KVBytesPerToken: 2 * 32 * 8 * 128 * 2,
		KVChunkTokens:   256,
		KVBudget:        54 << 30,
		MaxBatch:        256,
		PrefillTokens:   8192,
		PromptTokens:    [2]int{128, 8192},
		OutputTokens:    [2]int{16, 1024},
		Hidden:          4096,
		Intermediate:    14336,
		Vocab:           128256,
	}
}

// Example is the trace `gpufrag replay` runs when given none: the first
// 5,000 ops of Llama3_8B with seed 1. On an 80 GiB device the allocators
// differ visibly: the caching allocator reserves about 10 GiB more than it
// allocates, with its free memory in pieces, while direct and vmm reserve
// only what is live.
func Example() Serving {
	c := Llama3_8B()
	c.Ops = 5000
	return c
}

// check reports a configuration Serving cannot run.
func (c Serving) check() error {
	switch {
	case c.Ops < 0:
		return fmt.Errorf("synth: Ops %d is negative", c.Ops)
	case c.Weights < 0 || c.KVBytesPerToken <= 0 || c.KVChunkTokens <= 0 || c.KVBudget <= 0:
		return fmt.Errorf("synth: weights, KV bytes per token, KV chunk and KV budget must be positive: %+v", c)
	case c.MaxBatch <= 0 || c.PrefillTokens <= 0:
		return fmt.Errorf("synth: MaxBatch and PrefillTokens must be positive: %+v", c)
	case c.PromptTokens[0] <= 0 || c.PromptTokens[1] < c.PromptTokens[0] ||
		c.OutputTokens[0] <= 0 || c.OutputTokens[1] < c.OutputTokens[0]:
		return fmt.Errorf("synth: token ranges must be positive [min, max]: prompt %v output %v", c.PromptTokens, c.OutputTokens)
	case c.Hidden <= 0 || c.Intermediate <= 0 || c.Vocab <= 0:
		return fmt.Errorf("synth: model shape must be positive: %+v", c)
	}
	g := gen{c: c}
	if kv := g.kvFor(c.PromptTokens[1] + c.OutputTokens[1]); kv > c.KVBudget {
		return fmt.Errorf("synth: the longest request needs %d bytes of KV, over the budget of %d", kv, c.KVBudget)
	}
	return nil
}

// request is one running sequence.
type request struct {
	n       int   // request number, names its ids
	gen     int   // KV tensor generation, names its ids
	prompt  int   // prompt tokens
	output  int   // tokens to generate
	done    int   // tokens generated so far
	kvBytes int64 // size of the current KV tensor
}

func (r *request) kvID() string { return fmt.Sprintf("r%d.kv%d", r.n, r.gen) }

// GenerateServing returns the first c.Ops ops of the serving trace.
func GenerateServing(c Serving) ([]optrace.Op, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	g := gen{c: c, rng: rand.New(rand.NewPCG(c.Seed, 0x5e7)), ops: make([]optrace.Op, 0, c.Ops+64)}
	if c.Weights > 0 {
		g.alloc("weights", c.Weights)
	}
	for step := 0; len(g.ops) < c.Ops; step++ {
		g.step(step)
	}
	return g.ops[:c.Ops], nil
}

type gen struct {
	c       Serving
	rng     *rand.Rand
	ops     []optrace.Op
	running []*request
	pending *request // drawn but not yet admitted (kept so draws stay in order)
	next    int      // next request number
	kvLive  int64    // Σ kvBytes of running requests
}

func (g *gen) alloc(id string, size int64) {
	g.ops = append(g.ops, optrace.Op{Kind: optrace.Alloc, ID: id, Size: size})
}

func (g *gen) free(id string) { g.ops = append(g.ops, optrace.Op{Kind: optrace.Free, ID: id}) }

// logUniform draws an integer in [lo, hi] with log-uniform density.
func (g *gen) logUniform(r [2]int) int {
	lo, hi := math.Log(float64(r[0])), math.Log(float64(r[1])+1)
	return min(r[1], int(math.Exp(lo+g.rng.Float64()*(hi-lo))))
}

// kvFor is the size of a KV tensor that holds tokens, in whole chunks.
func (g *gen) kvFor(tokens int) int64 {
	chunks := (tokens + g.c.KVChunkTokens - 1) / g.c.KVChunkTokens
	return int64(chunks) * int64(g.c.KVChunkTokens) * g.c.KVBytesPerToken
}

// step is one iteration of the serving loop: admit, grow KV, run the
// forward pass (activations), retire finished requests, synchronise.
func (g *gen) step(step int) {
	c := g.c
	// 1. Admission: allocate each new request's KV for its prompt and first
	// generated token.
	prefill := 0
	for len(g.running) < c.MaxBatch {
		if g.pending == nil {
			g.next++
			g.pending = &request{n: g.next, prompt: g.logUniform(c.PromptTokens), output: g.logUniform(c.OutputTokens)}
		}
		r := g.pending
		kv := g.kvFor(r.prompt + 1)
		if g.kvLive+kv > c.KVBudget || (prefill > 0 && prefill+r.prompt > c.PrefillTokens) {
			break
		}
		g.pending = nil
		r.kvBytes = kv
		g.kvLive += kv
		g.alloc(r.kvID(), kv)
		g.running = append(g.running, r)
		prefill += r.prompt
	}
	// 2. KV growth: a sequence whose tensor is full gets one more chunk;
	// the new tensor is allocated before the old one is freed (the copy).
	for _, r := range g.running {
		if need := g.kvFor(r.prompt + r.done + 1); need > r.kvBytes {
			old := r.kvID()
			r.gen++
			r.kvBytes, g.kvLive = need, g.kvLive+need-r.kvBytes
			g.alloc(r.kvID(), need)
			g.free(old)
		}
	}
	// 3. Forward pass: activation buffers sized by this step's tokens,
	// freed in the order a layer finishes with them (not LIFO).
	if len(g.running) > 0 {
		tokens := int64(prefill + len(g.running))
		seqs := int64(len(g.running))
		s := fmt.Sprintf("s%d.", step)
		h, m, v := int64(c.Hidden), int64(c.Intermediate), int64(c.Vocab)
		g.alloc(s+"x", tokens*h*2)
		g.alloc(s+"qkv", tokens*h*3*2)
		g.alloc(s+"attn", tokens*h*2)
		g.free(s + "qkv")
		g.alloc(s+"mlp", tokens*m*2*2)
		g.free(s + "attn")
		g.alloc(s+"logits", seqs*v*4)
		g.free(s + "mlp")
		g.free(s + "x")
		g.free(s + "logits")
	}
	// 4. Every running sequence produced a token; finished ones leave.
	kept := g.running[:0]
	for _, r := range g.running {
		r.done++
		if r.done >= r.output {
			g.free(r.kvID())
			g.kvLive -= r.kvBytes
			continue
		}
		kept = append(kept, r)
	}
	clear(g.running[len(kept):])
	g.running = kept
	// 5. The sampler copies tokens to the host: a synchronisation.
	g.ops = append(g.ops, optrace.Op{Kind: optrace.Sync})
}
