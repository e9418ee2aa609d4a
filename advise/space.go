// The sweep space: the settings a user controls and the candidate design.
// See doc.go for the overview.

package advise

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/alloc/spec"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/sim"
)

// ErrBadSpace means a sweep space that cannot be swept; the message names
// the dimension and the value.
var ErrBadSpace = errors.New("advise: bad sweep space")

// Settings is one point of the sweep: what a user sets in their engine.
type Settings struct {
	// KV is the KV strategy (kv/strategy spec): paged:16, contiguous-grow,
	// contiguous-max, vmm:2MiB...
	KV string `json:"kv"`
	// Alloc is the allocator (alloc/spec syntax): caching,
	// caching:expandable_segments:True, sizeclass, async, vmm:2MiB...
	Alloc string `json:"alloc"`
	// GPUMemoryUtilization is vLLM's gpu_memory_utilization.
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	// Bucket rounds prompts up to a multiple of this many tokens (0: off).
	Bucket int `json:"bucket"`
	// Defrag is the compaction policy (sim.ParseDefragPolicy); always
	// "off" for KV strategies that keep no KV in movable blocks (paged, vmm).
	Defrag string `json:"defrag"`
}

// String is a short label: "paged:16 on caching, util 0.9, bucket 0, defrag off".
func (s Settings) String() string {
	return fmt.Sprintf("%s on %s, util %s, bucket %d, defrag %s",
		s.KV, s.Alloc, fmtShare(s.GPUMemoryUtilization), s.Bucket, s.Defrag)
}

func fmtShare(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// Space lists the values of each dimension. The first value of each list is
// the base; Candidates varies the dimensions around it.
type Space struct {
	KVs     []string  `json:"kv"`
	Allocs  []string  `json:"alloc"`
	Utils   []float64 `json:"gpu_memory_utilization"`
	Buckets []int     `json:"bucket"`
	Defrags []string  `json:"defrag"`
	// Full crosses every dimension (bounded only by the list lengths)
	// instead of the grouped design.
	Full bool `json:"full"`
}

// DefaultSpace returns the default sweep: 45 candidates with the grouped
// design (21 memory setups, 4 defrag, 15 utilization, 5 bucket).
//
// The values: paged with vLLM's default block (16) and the next size up;
// both contiguous families; vmm with 2 MiB pages (vAttention's and the
// CUDA VMM granularity). Allocators: PyTorch's caching allocator as shipped,
// with expandable segments (the setting PyTorch suggests in its OOM
// message), with max_split_size_mb:512 (the classic fragmentation knob, at
// a size above typical activation buffers), plus sizeclass and async
// (cudaMallocAsync). Utilization from 0.8 to 0.95 in vLLM's steps around
// its default 0.9. Buckets of 256 tokens (a common padding granularity).
// Defrag: the threshold and online policies of package sim.
func DefaultSpace() Space {
	return Space{
		KVs:     []string{"paged:16", "paged:32", "contiguous-grow", "contiguous-max", "vmm:2MiB"},
		Allocs:  []string{"caching", "caching:expandable_segments:True", "caching:max_split_size_mb:512", "sizeclass", "async"},
		Utils:   []float64{0.9, 0.8, 0.85, 0.95},
		Buckets: []int{0, 256},
		Defrags: []string{"off", "threshold", "online"},
	}
}

// Validate checks the lists: none empty, no duplicates, shares in (0, 1],
// buckets non-negative, defrag policies known. KV and allocator specs are
// checked when a config is built (they need the model and GPU).
func (sp Space) Validate() error {
	bad := func(dim, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadSpace, dim, fmt.Sprintf(format, args...))
	}
	if err := uniqueStrings("kv", sp.KVs); err != nil {
		return err
	}
	if err := uniqueStrings("alloc", sp.Allocs); err != nil {
		return err
	}
	if err := uniqueStrings("defrag", sp.Defrags); err != nil {
		return err
	}
	if len(sp.Utils) == 0 {
		return bad("gpu_memory_utilization", "no values")
	}
	seenU := map[float64]bool{}
	for _, u := range sp.Utils {
		if !(u > 0 && u <= 1) || math.IsNaN(u) {
			return bad("gpu_memory_utilization", "%v: want a share in (0, 1]", u)
		}
		if seenU[u] {
			return bad("gpu_memory_utilization", "%v listed twice", u)
		}
		seenU[u] = true
	}
	if len(sp.Buckets) == 0 {
		return bad("bucket", "no values")
	}
	seenB := map[int]bool{}
	for _, b := range sp.Buckets {
		if b < 0 {
			return bad("bucket", "%d: want 0 (off) or a positive number of tokens", b)
		}
		if seenB[b] {
			return bad("bucket", "%d listed twice", b)
		}
		seenB[b] = true
	}
	for _, d := range sp.Defrags {
		if _, err := sim.ParseDefragPolicy(d); err != nil {
			return bad("defrag", "%q: want off, threshold, adaptive, online or offline", d)
		}
	}
	return nil
}

func uniqueStrings(dim string, xs []string) error {
	if len(xs) == 0 {
		return fmt.Errorf("%w: %s: no values", ErrBadSpace, dim)
	}
	seen := map[string]bool{}
	for _, x := range xs {
		if strings.TrimSpace(x) == "" {
			return fmt.Errorf("%w: %s: empty value", ErrBadSpace, dim)
		}
		if seen[x] {
			return fmt.Errorf("%w: %s: %q listed twice", ErrBadSpace, dim, x)
		}
		seen[x] = true
	}
	return nil
}

// Candidate is one setting to evaluate, with the design group that
// produced it.
type Candidate struct {
	Settings Settings `json:"settings"`
	// Group is "setup" (KV × allocator at the base), "defrag", "util",
	// "bucket", or "full" under Space.Full.
	Group string `json:"group"`
}

// movable reports whether a KV strategy keeps KV in allocator blocks that
// compaction can move (strategy.Spec.Movable; false for a spec that does
// not parse, whose run reports it).
func movable(kv string) bool {
	s, err := strategy.ParseSpec(kv)
	return err == nil && s.Movable()
}

// canRelocate reports whether an allocator implements alloc.Relocator
// (spec.Caps.Relocates), so defrag policies can act on it.
func canRelocate(a string) bool {
	s, err := spec.Parse(a)
	return err == nil && s.Caps().Relocates
}

// baseAlloc is the allocator kv runs on in the util, bucket and defrag
// groups: the first of the allocators it may run on (strategy.AllocsFor:
// the base allocator, or vmm's own).
func baseAlloc(kv string, allocs []string) string {
	return strategy.AllocsFor(kv, allocs)[0]
}

// Candidates lists the settings to evaluate, in a fixed order without
// duplicates. The grouped design (the default) keeps the count linear in
// the list lengths instead of their product:
//
//  1. setup: every valid KV strategy × allocator pair, at the base
//     utilization, bucket and defrag (KV × allocator is where the
//     interactions are: a paged pool is one allocation, contiguous KV
//     lives or dies by the allocator's splitting);
//  2. defrag: each non-base policy × each contiguous KV strategy on the
//     base allocator (compaction only moves contiguous KV, and only on
//     allocators that can relocate: caching, sizeclass, arena);
//  3. util: each non-base utilization × each KV strategy on the base
//     allocator (how much memory the KV gets interacts with how the
//     strategy uses it);
//  4. bucket: each non-base bucket × each KV strategy on the base
//     allocator.
//
// With k KV strategies, a allocators, u utilizations, b buckets and d
// defrag policies that is at most k·a + (d−1)·k + (u−1)·k + (b−1)·k
// candidates. Space.Full crosses everything instead (k·a·u·b·d at most).
func (sp Space) Candidates() ([]Candidate, error) {
	if err := sp.Validate(); err != nil {
		return nil, err
	}
	var out []Candidate
	seen := map[Settings]bool{}
	add := func(s Settings, group string) {
		if !movable(s.KV) || !canRelocate(s.Alloc) {
			s.Defrag = "off"
		}
		s.Defrag = strings.ToLower(s.Defrag)
		if seen[s] {
			return
		}
		seen[s] = true
		out = append(out, Candidate{Settings: s, Group: group})
	}
	u0, b0, d0 := sp.Utils[0], sp.Buckets[0], sp.Defrags[0]
	if sp.Full {
		for _, kv := range sp.KVs {
			for _, a := range strategy.AllocsFor(kv, sp.Allocs) {
				for _, u := range sp.Utils {
					for _, b := range sp.Buckets {
						for _, d := range sp.Defrags {
							add(Settings{kv, a, u, b, d}, "full")
						}
					}
				}
			}
		}
		return out, nil
	}
	for _, kv := range sp.KVs {
		for _, a := range strategy.AllocsFor(kv, sp.Allocs) {
			add(Settings{kv, a, u0, b0, d0}, "setup")
		}
	}
	for _, d := range sp.Defrags[1:] {
		for _, kv := range sp.KVs {
			if movable(kv) && canRelocate(baseAlloc(kv, sp.Allocs)) {
				add(Settings{kv, baseAlloc(kv, sp.Allocs), u0, b0, d}, "defrag")
			}
		}
	}
	for _, u := range sp.Utils[1:] {
		for _, kv := range sp.KVs {
			add(Settings{kv, baseAlloc(kv, sp.Allocs), u, b0, d0}, "util")
		}
	}
	for _, b := range sp.Buckets[1:] {
		for _, kv := range sp.KVs {
			add(Settings{kv, baseAlloc(kv, sp.Allocs), u0, b, d0}, "bucket")
		}
	}
	return out, nil
}

// Apply writes s into a copy of the engine config base.
func (s Settings) Apply(base sim.Config) (sim.Config, error) {
	c := base
	c.KV, c.Alloc, c.GPUMemoryUtilization = s.KV, s.Alloc, s.GPUMemoryUtilization
	p, err := sim.ParseDefragPolicy(s.Defrag)
	if err != nil {
		return c, err
	}
	c.Defrag.Policy = p
	return c, nil
}

// EngineFlags returns what to set in a real deployment for s: vLLM flags,
// the PYTORCH_CUDA_ALLOC_CONF value, and notes for settings with no
// vLLM/PyTorch equivalent.
func (s Settings) EngineFlags() (flags []string, env string, notes []string) {
	kv, _ := strategy.ParseSpec(s.KV) // a spec that does not parse is no vLLM mode
	switch kv.Family() {
	case strategy.Paged:
		flags = append(flags, "--block-size "+strconv.Itoa(kv.BlockTokens()))
	case strategy.VMM:
		notes = append(notes, "vmm KV ("+mem.FormatBytesExact(kv.Page())+" pages) is vAttention-style page mapping, not a stock vLLM option")
	default:
		notes = append(notes, s.KV+" KV is not a vLLM mode: it models engines that allocate KV per request (plain PyTorch/HF serving, Orca, FasterTransformer)")
	}
	flags = append(flags, "--gpu-memory-utilization "+fmtShare(s.GPUMemoryUtilization))
	a, _ := spec.Parse(s.Alloc) // the zero Spec for one that does not parse: PyTorch cannot select it
	conf, ok := a.PyTorchConf()
	switch {
	case !ok:
		notes = append(notes, "allocator "+s.Alloc+" is gpufrag's model; PyTorch has no switch for it")
	case !a.Kind().PyTorch.Native && a.Args() != "":
		// A backend such as cudaMallocAsync: its arguments are the pool's.
		notes = append(notes, a.Name()+" arguments ("+a.Args()+") are set on the CUDA memory pool, not through PYTORCH_CUDA_ALLOC_CONF")
	}
	env = conf
	if s.Bucket > 0 {
		notes = append(notes, fmt.Sprintf("pad prompts to a multiple of %d tokens", s.Bucket))
	}
	if s.Defrag != "off" && s.Defrag != "" {
		notes = append(notes, "defrag "+s.Defrag+" needs an engine that can compact KV memory (gpufrag's policy model)")
	}
	return flags, env, notes
}
