package advise

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
)

// The default design: 8 KV × allocator setups of stock settings of the
// engine in use (paged KV only), 6 utilization, 2 bucket, 6 token-budget,
// 4 sequence-limit and 2 prefix-caching candidates, no duplicates, none
// experimental, and defrag only where compaction can act.
func TestCandidatesDefault(t *testing.T) {
	cs, err := DefaultSpace().Candidates()
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]int{}
	seen := map[settingsKey]bool{}
	for _, c := range cs {
		groups[c.Group]++
		s := c.Settings
		if seen[s.key()] {
			t.Errorf("duplicate %s", s)
		}
		seen[s.key()] = true
		ks := s.KV
		if err := strategy.CheckPair(ks, s.Alloc); err != nil {
			t.Errorf("%s: %v", s, err)
		}
		if s.Defrag != "off" && (!s.KV.Movable() || !s.Alloc.Caps().Relocates) {
			t.Errorf("%s: defrag on a setup it cannot act on", s)
		}
		if c.Experimental || len(s.Research()) > 0 {
			t.Errorf("%s: experimental in the default space (%q)", s, s.Research())
		}
		if ks.Family() != strategy.Paged {
			t.Errorf("%s: another engine family (%s) in the default space", s, ks.Family())
		}
	}
	want := map[string]int{"setup": 8, "util": 6, "bucket": 2, "tokens": 6, "seqs": 4, "prefix": 2}
	for g, n := range want {
		if groups[g] != n {
			t.Errorf("group %s: %d candidates, want %d (all: %v)", g, groups[g], n, groups)
		}
	}
	if len(cs) != 28 {
		t.Errorf("%d candidates, want 28", len(cs))
	}
	if base := (Settings{KV: kv("paged:16"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 8192, MaxSeqs: 256, PrefixCaching: "on"}); !cs[0].Settings.Equal(base) || len(base.Changes()) != 0 {
		t.Errorf("first candidate %s, want the base with no changes (%q)", cs[0].Settings, base.Changes())
	}
}

// The experimental space adds the contiguous engine families, vmm (on its
// own allocator), sizeclass and two defrag policies, and labels exactly
// the research ones; InEngine tells the families apart.
func TestCandidatesExperimental(t *testing.T) {
	sp := ExperimentalSpace()
	cs, err := sp.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	exp := 0
	families := map[string]bool{}
	for _, c := range cs {
		kv := c.Settings.KV
		families[kv.Family().String()] = true
		if sp.InEngine(c.Settings.KV) != (kv.Family() == strategy.Paged) {
			t.Errorf("%s: in the engine in use %v", c.Settings, sp.InEngine(c.Settings.KV))
		}
		research := c.Settings.KV.String() == "vmm:2MiB" || c.Settings.Alloc.String() == "sizeclass" || c.Settings.Defrag != "off"
		if c.Experimental != research {
			t.Errorf("%s: experimental %v, research settings %v", c.Settings, c.Experimental, research)
		}
		if c.Experimental {
			exp++
		}
	}
	if exp == 0 || exp == len(cs) {
		t.Fatalf("%d of %d candidates experimental", exp, len(cs))
	}
	if len(families) != 3 {
		t.Errorf("engine families %v: want paged, contiguous and vmm", families)
	}
}

// Full crosses every dimension, still skipping invalid and duplicate
// combinations: 2 KV × 4 allocators × 4 utils × 2 buckets × 4 token
// budgets × 3 sequence limits × 2 prefix-caching values (the default
// space's only defrag policy is off).
func TestCandidatesFull(t *testing.T) {
	sp := DefaultSpace()
	sp.Full = true
	cs, err := sp.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	want := 2 * 4 * 4 * 2 * 4 * 3 * 2
	if len(cs) != want {
		t.Errorf("%d candidates, want %d", len(cs), want)
	}
}

func TestSpaceValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Space)
		want string
	}{
		{func(s *Space) { s.KVs = nil }, "kv: no values"},
		{func(s *Space) { s.Allocs = als("caching", "caching") }, `alloc: "caching" listed twice`},
		{func(s *Space) { s.Utils = []float64{0.9, 1.5} }, "gpu_memory_utilization: 1.5: want a share in (0, 1]"},
		{func(s *Space) { s.Utils = []float64{0} }, "gpu_memory_utilization: 0"},
		{func(s *Space) { s.Buckets = []int{-1} }, "bucket: -1"},
		{func(s *Space) { s.Buckets = []int{256, 256} }, "bucket: 256 listed twice"},
		{func(s *Space) { s.Defrags = []string{"sometimes"} }, `defrag: "sometimes"`},
		{func(s *Space) { s.KVs = []strategy.Spec{{}} }, "kv: empty value"},
		{func(s *Space) { s.Allocs = []registry.Spec{al("caching"), {}} }, "alloc: empty value"},
		{func(s *Space) { s.KVs = kvs("paged:16", "PAGED:16") }, `kv: "paged:16" listed twice`},
	} {
		sp := DefaultSpace()
		c.edit(&sp)
		_, err := sp.Candidates()
		if !errors.Is(err, ErrBadSpace) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an ErrBadSpace naming %q", err, c.want)
		}
	}
}

// Check reports a bad KV or allocator spec before anything runs, naming
// the candidate.
func TestCheck(t *testing.T) {
	m, _ := model.Preset("llama-3.1-8b")
	g, _ := model.LookupGPU("a100-80g")
	base := sim.DefaultConfig(m, g)
	cs, err := DefaultSpace().Candidates()
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(base, cs); err != nil {
		t.Fatalf("default candidates: %v", err)
	}
	// A spec that does not parse never reaches a Space (the caller parses
	// its text at the edge); one that parses but cannot be built on the
	// device is Check's.
	sp := DefaultSpace()
	sp.Allocs = als("caching", "arena:200GiB")
	if cs, err = sp.Candidates(); err != nil {
		t.Fatal(err)
	}
	if err := Check(base, cs); err == nil || !strings.Contains(err.Error(), "arena:200GiB") || !strings.Contains(err.Error(), "candidate 1") {
		t.Errorf("allocator larger than the GPU: got %v", err)
	}
}

func TestEngineFlags(t *testing.T) {
	for _, c := range []struct {
		s     Settings
		flags string
		env   string
	}{
		{Settings{KV: kv("paged:16"), Alloc: al("caching:expandable_segments:True"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, "--block-size 16 --gpu-memory-utilization 0.9", "expandable_segments:True"},
		{Settings{KV: kv("paged:32"), Alloc: al("async"), GPUMemoryUtilization: 0.95, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, "--block-size 32 --gpu-memory-utilization 0.95", "backend:cudaMallocAsync"},
		{Settings{KV: kv("contiguous-grow"), Alloc: al("caching"), GPUMemoryUtilization: 0.85, Bucket: 256, Defrag: "threshold", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, "--gpu-memory-utilization 0.85", ""},
		{Settings{KV: kv("vmm:2MiB"), Alloc: al("vmm:2MiB"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, "--gpu-memory-utilization 0.9", ""},
		{Settings{KV: kv("paged:16"), Alloc: al("async:release_threshold:1GiB"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, "--block-size 16 --gpu-memory-utilization 0.9", "backend:cudaMallocAsync"},
		{Settings{KV: kv("paged:16"), Alloc: al("sizeclass"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, "--block-size 16 --gpu-memory-utilization 0.9", ""},
	} {
		flags, env, _ := c.s.EngineFlags()
		if strings.Join(flags, " ") != c.flags || env != c.env {
			t.Errorf("%s: got %q %q, want %q %q", c.s, flags, env, c.flags, c.env)
		}
	}
	for _, c := range []struct {
		s    Settings
		note string
	}{
		{Settings{KV: kv("vmm:2MiB"), Alloc: al("vmm:2MiB"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, "vmm KV (2MiB pages) is vAttention-style page mapping, not a stock vLLM option"},
		{Settings{KV: kv("contiguous-max"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, "contiguous-max KV is not a vLLM mode"},
		{Settings{KV: kv("paged:16"), Alloc: al("async:release_threshold:1GiB"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, "async arguments (release_threshold:1GiB) are set on the CUDA memory pool"},
		{Settings{KV: kv("paged:16"), Alloc: al("sizeclass"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, "allocator sizeclass is gpufrag's model; PyTorch has no switch for it"},
		{Settings{KV: kv("paged:16"), Alloc: al("arena:0.5"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, "allocator arena:0.5 is gpufrag's model"},
	} {
		_, _, notes := c.s.EngineFlags()
		if !strings.Contains(strings.Join(notes, "\n"), c.note) {
			t.Errorf("%s: notes %q, want one containing %q", c.s, notes, c.note)
		}
	}
	// The caching allocator and async without arguments need no note.
	for _, s := range []Settings{{KV: kv("paged:16"), Alloc: al("caching:expandable_segments:True"), GPUMemoryUtilization: 0.9, Defrag: "off"}, {KV: kv("paged:16"), Alloc: al("async"), GPUMemoryUtilization: 0.9, Defrag: "off"}} {
		if _, _, notes := s.EngineFlags(); len(notes) != 0 {
			t.Errorf("%s: notes %q, want none", s, notes)
		}
	}
}

// TestCandidatesPairing: a vmm:P strategy runs on every listed allocator
// that grows in place by P, however it is spelt, and on vmm:P when none
// does; other strategies on every allocator.
func TestCandidatesPairing(t *testing.T) {
	sp := Space{KVs: kvs("vmm:2MiB", "vmm:64KiB", "paged:16"), Allocs: als("caching", "vmm", "vmm:2048KiB"),
		Utils: []float64{0.9}, Buckets: []int{0}, Defrags: []string{"off"}}
	cs, err := sp.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Settings.KV.String()+" on "+c.Settings.Alloc.String())
	}
	want := "vmm:2MiB on vmm|vmm:2MiB on vmm:2048KiB|vmm:64KiB on vmm:64KiB|paged:16 on caching|paged:16 on vmm|paged:16 on vmm:2048KiB"
	if strings.Join(got, "|") != want {
		t.Errorf("candidates %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestCheckImpossiblePair: a candidate no sweep generates but a caller may
// build, vmm KV on the caching allocator, is refused by Check with the one
// message of strategy.CheckPair, naming the candidate.
func TestCheckImpossiblePair(t *testing.T) {
	m, _ := model.Preset("llama-3.1-8b")
	g, _ := model.LookupGPU("a100-80g")
	err := Check(sim.DefaultConfig(m, g), []Candidate{{Settings: Settings{KV: kv("vmm:2MiB"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}, Group: "setup"}})
	want := "kv vmm:2MiB maps its own pages and needs an allocator that grows blocks in place by 2MiB, such as vmm:2MiB; alloc caching does not grow blocks in place"
	if !errors.Is(err, strategy.ErrBadSpec) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "candidate 0") {
		t.Errorf("Check(vmm:2MiB on caching): %v; want candidate 0 and %q", err, want)
	}
}
