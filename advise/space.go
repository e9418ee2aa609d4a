// The sweep space: the settings a user controls and the candidate design.
// See doc.go for the overview.

package advise

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// ErrBadSpace means a sweep space that cannot be swept; the message names
// the dimension and the value.
var ErrBadSpace = errors.New("bad sweep space")

// Settings is one point of the sweep: what a user sets in their engine.
type Settings struct {
	// KV is the KV strategy, parsed (kv/strategy spec; its canonical text
	// in JSON): paged:16, contiguous-grow, contiguous-max, vmm:2MiB...
	KV strategy.Spec `json:"kv"`
	// Alloc is the allocator, parsed (alloc/registry syntax; its text as
	// written in JSON): caching, caching:expandable_segments:True,
	// sizeclass, async, vmm:2MiB...
	Alloc registry.Spec `json:"alloc"`
	// GPUMemoryUtilization is vLLM's gpu_memory_utilization.
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	// Bucket rounds prompts up to a multiple of this many tokens (0: off).
	Bucket int `json:"bucket"`
	// Defrag is the compaction policy (sim.ParseDefragPolicy); always
	// "off" for KV strategies that keep no KV in movable blocks (paged, vmm).
	Defrag string `json:"defrag"`
	// MaxBatchTokens is vLLM's max_num_batched_tokens, the token budget of
	// one step (0: the base config's, sim.DefaultConfig's 8,192).
	MaxBatchTokens int `json:"max_num_batched_tokens"`
	// MaxSeqs is vLLM's max_num_seqs (0: the base config's, 256).
	MaxSeqs int `json:"max_num_seqs"`
	// PrefixCaching is "on" or "off" (vLLM's --enable-prefix-caching /
	// --no-enable-prefix-caching; "" is on, vLLM V1's default). It matters
	// only for workloads whose requests share prompt prefixes (traces with
	// prefix ids, chat sessions).
	PrefixCaching string    `json:"prefix_caching"`
	_             [0]func() // not comparable: use Equal
}

// settingsKey is Settings as a map key and for equality: an allocator
// spec holds its parsed arguments, which need not be comparable
// (sizeclass's class list), so settings compare by the allocator's text,
// as written, as they did when they held text.
type settingsKey struct {
	kv           strategy.Spec
	alloc        string
	util         float64
	bucket       int
	defrag       string
	tokens, seqs int
	prefix       string
}

func (s Settings) key() settingsKey {
	return settingsKey{s.KV, s.Alloc.String(), s.GPUMemoryUtilization, s.Bucket, s.Defrag, s.MaxBatchTokens, s.MaxSeqs, s.PrefixCaching}
}

// Equal reports whether s and o are the same setting (allocators compared
// by their text). Settings must not be compared with ==, which panics on
// an allocator whose arguments are a list.
func (s Settings) Equal(o Settings) bool { return s.key() == o.key() }

// String is a short label: "paged:16 on caching, util 0.9, bucket 0, defrag
// off", then the engine limits and prefix caching where they differ from
// vLLM's defaults.
func (s Settings) String() string {
	out := fmt.Sprintf("%s on %s, util %s, bucket %d, defrag %s",
		s.KV, s.Alloc, fmtShare(s.GPUMemoryUtilization), s.Bucket, s.Defrag)
	if s.MaxBatchTokens != 0 && s.MaxBatchTokens != defaultBatchTokens {
		out += fmt.Sprintf(", %d batched tokens", s.MaxBatchTokens)
	}
	if s.MaxSeqs != 0 && s.MaxSeqs != defaultSeqs {
		out += fmt.Sprintf(", %d seqs", s.MaxSeqs)
	}
	if s.PrefixCaching == "off" {
		out += ", prefix caching off"
	}
	return out
}

// The engine defaults a change is counted against (Changes): vLLM V1's
// as gpufrag's DefaultConfig models them (paged:16 on PyTorch's caching
// allocator as shipped, gpu_memory_utilization 0.9, 8,192 batched tokens,
// 256 sequences, prefix caching on, no bucketing, no compaction).
const (
	defaultAlloc       = "caching"
	defaultUtil        = 0.9
	defaultBatchTokens = 8192
	defaultSeqs        = 256
)

var defaultKV = strategy.PagedSpec(16)

// Changes lists the settings of s that differ from the engine's defaults,
// as a user would change them ("--block-size 32", "max_num_seqs 128").
func (s Settings) Changes() []string {
	var out []string
	if s.KV != defaultKV {
		out = append(out, "kv "+s.KV.String())
	}
	if s.Alloc.String() != defaultAlloc {
		out = append(out, "allocator "+s.Alloc.String())
	}
	if s.GPUMemoryUtilization != defaultUtil {
		out = append(out, "gpu_memory_utilization "+fmtShare(s.GPUMemoryUtilization))
	}
	if s.Bucket != 0 {
		out = append(out, fmt.Sprintf("bucket %d", s.Bucket))
	}
	if s.Defrag != "off" && s.Defrag != "" {
		out = append(out, "defrag "+s.Defrag)
	}
	if s.MaxBatchTokens != 0 && s.MaxBatchTokens != defaultBatchTokens {
		out = append(out, fmt.Sprintf("max_num_batched_tokens %d", s.MaxBatchTokens))
	}
	if s.MaxSeqs != 0 && s.MaxSeqs != defaultSeqs {
		out = append(out, fmt.Sprintf("max_num_seqs %d", s.MaxSeqs))
	}
	if s.PrefixCaching == "off" {
		out = append(out, "prefix caching off")
	}
	return out
}

// Research lists the parts of s that no stock engine (vLLM, SGLang,
// TensorRT-LLM, plain PyTorch) can apply: vmm KV (vAttention), an
// allocator PyTorch cannot select (sizeclass, buddy, arena), a compaction
// policy (gpufrag's model). Empty for a stock setting.
func (s Settings) Research() []string {
	var out []string
	if s.KV.Family() == strategy.VMM {
		out = append(out, "vmm KV is vAttention's page mapping, in no stock engine")
	}
	if a := s.Alloc; !a.IsZero() {
		if _, ok := a.PyTorchConf(); !ok && a.Name() != "vmm" {
			out = append(out, "allocator "+a.String()+" is gpufrag's model; PyTorch cannot select it")
		}
	}
	if s.Defrag != "off" && s.Defrag != "" {
		out = append(out, "defrag "+s.Defrag+" needs an engine that compacts KV memory (gpufrag's policy model)")
	}
	return out
}

func fmtShare(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// Space lists the values of each dimension. The first value of each list is
// the base; Candidates varies the dimensions around it.
type Space struct {
	KVs     []strategy.Spec `json:"kv"`
	Allocs  []registry.Spec `json:"alloc"`
	Utils   []float64       `json:"gpu_memory_utilization"`
	Buckets []int           `json:"bucket"`
	Defrags []string        `json:"defrag"`
	// MaxBatchTokens and MaxSeqs are vLLM's max_num_batched_tokens and
	// max_num_seqs; PrefixCaching "on" and "off". Empty lists are the base
	// config's single value (so a space written before they existed means
	// what it meant).
	MaxBatchTokens []int    `json:"max_num_batched_tokens,omitempty"`
	MaxSeqs        []int    `json:"max_num_seqs,omitempty"`
	PrefixCaching  []string `json:"prefix_caching,omitempty"`
	// Full crosses every dimension (bounded only by the list lengths)
	// instead of the grouped design.
	Full bool `json:"full"`
}

// DefaultSpace returns the default sweep: only stock settings of the
// engine in use, vLLM with paged KV (Settings.Research is empty for every
// candidate, and every KV strategy is of the paged family), 26 candidates
// with the grouped design (8 memory setups, 6 utilization, 2 bucket, 6
// token budget, 4 sequence limit) and 2 more (prefix caching off) where
// the workload shares prefixes.
//
// The values: paged with vLLM's default block (16) and the next size up.
// Allocators: PyTorch's caching allocator as shipped, with expandable
// segments (the setting PyTorch suggests in its OOM message), with
// max_split_size_mb:512 (the classic fragmentation knob, at a size above
// typical activation buffers), and cudaMallocAsync. Utilization from 0.8
// to 0.95 in vLLM's steps around its default 0.9. Buckets of 256 tokens (a
// common padding granularity). Token budgets 2,048 to 16,384 around vLLM
// V1's 8,192 (a smaller budget keeps long prefills out of the steps that
// decode, the TPOT knob); sequence limits 128 and 512 around its 256.
// ExperimentalSpace adds the other engine families and the research
// setups.
func DefaultSpace() Space {
	return Space{
		KVs:            []strategy.Spec{strategy.PagedSpec(16), strategy.PagedSpec(32)},
		Allocs:         mustAllocs("caching", "caching:expandable_segments:True", "caching:max_split_size_mb:512", "async"),
		Utils:          []float64{0.9, 0.8, 0.85, 0.95},
		Buckets:        []int{0, 256},
		Defrags:        []string{"off"},
		MaxBatchTokens: []int{8192, 2048, 4096, 16384},
		MaxSeqs:        []int{256, 128, 512},
		PrefixCaching:  []string{"on", "off"},
	}
}

// ExperimentalSpace is DefaultSpace with what is not a stock setting of
// the engine in use (`advise --experimental`): the other engine families
// gpufrag models, contiguous KV (contiguous-grow, plain PyTorch/HF
// serving's growing cache; contiguous-max, the per-request reservation of
// FasterTransformer-style engines), and the research setups no stock
// engine offers: vmm KV with 2 MiB pages (vAttention's), the sizeclass
// allocator, and the threshold and online compaction policies. The
// research candidates are labelled experimental (Candidate.Experimental,
// Settings.Research); those of another family than the base KV strategy's
// are never a best effort (NewReport).
func ExperimentalSpace() Space {
	sp := DefaultSpace()
	sp.KVs = append(sp.KVs, strategy.MustParseSpec("contiguous-grow"), strategy.MustParseSpec("contiguous-max"), strategy.MustParseSpec("vmm:2MiB"))
	sp.Allocs = append(sp.Allocs, registry.MustParse("sizeclass"))
	sp.Defrags = append(sp.Defrags, "threshold", "online")
	return sp
}

// mustAllocs parses allocator specs written in code.
func mustAllocs(texts ...string) []registry.Spec {
	out := make([]registry.Spec, len(texts))
	for i, t := range texts {
		out[i] = registry.MustParse(t)
	}
	return out
}

// Validate checks the lists: none empty, no duplicates, no zero (unset)
// KV or allocator spec (a Spec is parsed as it is made), shares in (0, 1], buckets non-negative, defrag
// policies known. Settings an allocator can only refuse on a device (an
// arena larger than the memory) are refused when a config is built.
func (sp Space) Validate() error {
	bad := func(dim, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadSpace, dim, fmt.Sprintf(format, args...))
	}
	if err := uniqueStrings("kv", texts(sp.KVs)); err != nil {
		return err
	}
	if err := uniqueStrings("alloc", texts(sp.Allocs)); err != nil {
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
	if err := positiveInts("max_num_batched_tokens", sp.MaxBatchTokens); err != nil {
		return err
	}
	if err := positiveInts("max_num_seqs", sp.MaxSeqs); err != nil {
		return err
	}
	seenP := map[string]bool{}
	for _, p := range sp.PrefixCaching {
		if p != "on" && p != "off" {
			return bad("prefix_caching", "%q: want on or off", p)
		}
		if seenP[p] {
			return bad("prefix_caching", "%q listed twice", p)
		}
		seenP[p] = true
	}
	return nil
}

// positiveInts checks an optional list of positive, distinct values.
func positiveInts(dim string, xs []int) error {
	seen := map[int]bool{}
	for _, x := range xs {
		if x <= 0 {
			return fmt.Errorf("%w: %s: %d: want a positive number", ErrBadSpace, dim, x)
		}
		if seen[x] {
			return fmt.Errorf("%w: %s: %d listed twice", ErrBadSpace, dim, x)
		}
		seen[x] = true
	}
	return nil
}

// orBase is xs, or the one value 0 (the base config's) when xs is empty.
func orBase[T int | string](xs []T) []T {
	if len(xs) == 0 {
		var zero T
		return []T{zero}
	}
	return xs
}

// KVList is the space's KV strategies as one comma-separated list, as
// `advise --kv` takes them.
func (sp Space) KVList() string { return strings.Join(texts(sp.KVs), ",") }

// AllocList is the space's allocators as one comma-separated list, as
// `advise --alloc` takes them.
func (sp Space) AllocList() string { return strings.Join(texts(sp.Allocs), ",") }

// texts are the specs' texts (a zero Spec's is "").
func texts[S fmt.Stringer](xs []S) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
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
	// "bucket", "tokens" (max_num_batched_tokens), "seqs" (max_num_seqs),
	// "prefix" (prefix caching), or "full" under Space.Full.
	Group string `json:"group"`
	// Experimental is true for a research setup no stock engine offers
	// (Settings.Research says what).
	Experimental bool `json:"experimental"`
}

// Equal reports whether c and o are the same candidate (Settings.Equal).
func (c Candidate) Equal(o Candidate) bool {
	return c.Settings.Equal(o.Settings) && c.Group == o.Group && c.Experimental == o.Experimental
}

// InEngine reports whether kv belongs to the engine in use: the family of
// the space's base KV strategy (its first, paged:16 by default; any when
// the space lists none).
// The engine family a KV strategy stands for (strategy.Spec.Family: paged
// for vLLM, SGLang, TensorRT-LLM; contiguous for engines that allocate KV
// per request; vmm for vAttention).
func (sp Space) InEngine(kv strategy.Spec) bool {
	return len(sp.KVs) == 0 || kv.Family() == sp.KVs[0].Family()
}

// allocsFor is the pairing rule of simulate's and advise's sweeps
// (scenario.AllocsFor): the allocators of allocs that kv can run on, in
// order, or kv's DefaultAlloc alone when none can. The error says that no
// allocator can run kv (its default is one the registry refuses).
func allocsFor(kv strategy.Spec, allocs []registry.Spec) ([]registry.Spec, error) {
	fit, _, err := scenario.AllocsFor(kv, allocs)
	if err != nil {
		return nil, fmt.Errorf("%w: kv: %w", ErrBadSpace, err)
	}
	return fit, nil
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
	fits := make([][]registry.Spec, len(sp.KVs))
	for i, kv := range sp.KVs {
		fit, err := allocsFor(kv, sp.Allocs)
		if err != nil {
			return nil, err
		}
		fits[i] = fit
	}
	var out []Candidate
	seen := map[settingsKey]bool{}
	add := func(s Settings, group string) {
		if !s.KV.Movable() || !s.Alloc.Caps().Relocates {
			s.Defrag = "off"
		}
		s.Defrag = strings.ToLower(s.Defrag)
		if seen[s.key()] {
			return
		}
		seen[s.key()] = true
		out = append(out, Candidate{Settings: s, Group: group, Experimental: len(s.Research()) > 0})
	}
	toks, seqs, pcs := orBase(sp.MaxBatchTokens), orBase(sp.MaxSeqs), orBase(sp.PrefixCaching)
	u0, b0, d0, t0, q0, p0 := sp.Utils[0], sp.Buckets[0], sp.Defrags[0], toks[0], seqs[0], pcs[0]
	if sp.Full {
		for i, kv := range sp.KVs {
			for _, a := range fits[i] {
				for _, u := range sp.Utils {
					for _, b := range sp.Buckets {
						for _, d := range sp.Defrags {
							for _, t := range toks {
								for _, q := range seqs {
									for _, p := range pcs {
										add(Settings{KV: kv, Alloc: a, GPUMemoryUtilization: u, Bucket: b, Defrag: d, MaxBatchTokens: t, MaxSeqs: q, PrefixCaching: p}, "full")
									}
								}
							}
						}
					}
				}
			}
		}
		return out, nil
	}
	// The util, bucket and defrag groups run each KV strategy on the first
	// allocator it may run on (the base allocator, or vmm's own).
	for i, kv := range sp.KVs {
		for _, a := range fits[i] {
			add(Settings{KV: kv, Alloc: a, GPUMemoryUtilization: u0, Bucket: b0, Defrag: d0, MaxBatchTokens: t0, MaxSeqs: q0, PrefixCaching: p0}, "setup")
		}
	}
	for _, d := range sp.Defrags[1:] {
		for i, kv := range sp.KVs {
			if kv.Movable() && fits[i][0].Caps().Relocates {
				add(Settings{KV: kv, Alloc: fits[i][0], GPUMemoryUtilization: u0, Bucket: b0, Defrag: d, MaxBatchTokens: t0, MaxSeqs: q0, PrefixCaching: p0}, "defrag")
			}
		}
	}
	for _, u := range sp.Utils[1:] {
		for i, kv := range sp.KVs {
			add(Settings{KV: kv, Alloc: fits[i][0], GPUMemoryUtilization: u, Bucket: b0, Defrag: d0, MaxBatchTokens: t0, MaxSeqs: q0, PrefixCaching: p0}, "util")
		}
	}
	for _, b := range sp.Buckets[1:] {
		for i, kv := range sp.KVs {
			add(Settings{KV: kv, Alloc: fits[i][0], GPUMemoryUtilization: u0, Bucket: b, Defrag: d0, MaxBatchTokens: t0, MaxSeqs: q0, PrefixCaching: p0}, "bucket")
		}
	}
	for _, t := range toks[1:] {
		for i, kv := range sp.KVs {
			add(Settings{KV: kv, Alloc: fits[i][0], GPUMemoryUtilization: u0, Bucket: b0, Defrag: d0, MaxBatchTokens: t, MaxSeqs: q0, PrefixCaching: p0}, "tokens")
		}
	}
	for _, q := range seqs[1:] {
		for i, kv := range sp.KVs {
			add(Settings{KV: kv, Alloc: fits[i][0], GPUMemoryUtilization: u0, Bucket: b0, Defrag: d0, MaxBatchTokens: t0, MaxSeqs: q, PrefixCaching: p0}, "seqs")
		}
	}
	for _, p := range pcs[1:] {
		for i, kv := range sp.KVs {
			add(Settings{KV: kv, Alloc: fits[i][0], GPUMemoryUtilization: u0, Bucket: b0, Defrag: d0, MaxBatchTokens: t0, MaxSeqs: q0, PrefixCaching: p}, "prefix")
		}
	}
	return out, nil
}

// Apply writes s into a copy of the engine config base. The specs were
// parsed when s was made; a zero (unset) one is an error.
func (s Settings) Apply(base sim.Config) (sim.Config, error) {
	c := base
	switch {
	case s.KV.IsZero():
		return c, fmt.Errorf("%w: kv: none given", sim.ErrBadConfig)
	case s.Alloc.IsZero():
		return c, fmt.Errorf("%w: alloc: none given", sim.ErrBadConfig)
	}
	c.KV, c.Alloc = s.KV, s.Alloc
	c.GPUMemoryUtilization = s.GPUMemoryUtilization
	p, err := sim.ParseDefragPolicy(s.Defrag)
	if err != nil {
		return c, err
	}
	c.Defrag.Policy = p
	if s.MaxBatchTokens > 0 {
		c.MaxBatchTokens = s.MaxBatchTokens
	}
	if s.MaxSeqs > 0 {
		c.MaxSeqs = s.MaxSeqs
	}
	if s.PrefixCaching == "off" {
		c.PrefixCaching = false
	}
	return c, nil
}

// EngineFlags returns what to set in a real deployment for s: vLLM flags,
// the PYTORCH_CUDA_ALLOC_CONF value, and notes for settings with no
// vLLM/PyTorch equivalent.
func (s Settings) EngineFlags() (flags []string, env string, notes []string) {
	kv := s.KV
	switch kv.Family() {
	case strategy.Paged:
		flags = append(flags, "--block-size "+strconv.Itoa(kv.BlockTokens()))
	case strategy.VMM:
		notes = append(notes, "vmm KV ("+mem.FormatBytesExact(kv.Page())+" pages) is vAttention-style page mapping, not a stock vLLM option")
	default:
		notes = append(notes, kv.String()+" KV is not a vLLM mode: it models engines that allocate KV per request (plain PyTorch/HF serving, Orca, FasterTransformer)")
	}
	flags = append(flags, "--gpu-memory-utilization "+fmtShare(s.GPUMemoryUtilization))
	if s.MaxBatchTokens > 0 {
		flags = append(flags, "--max-num-batched-tokens "+strconv.Itoa(s.MaxBatchTokens))
	}
	if s.MaxSeqs > 0 {
		flags = append(flags, "--max-num-seqs "+strconv.Itoa(s.MaxSeqs))
	}
	if s.PrefixCaching == "off" {
		flags = append(flags, "--no-enable-prefix-caching")
	}
	a := s.Alloc // the zero Spec (none): PyTorch cannot select it
	conf, ok := a.PyTorchConf()
	switch {
	case !ok:
		notes = append(notes, "allocator "+a.String()+" is gpufrag's model; PyTorch has no switch for it")
	case !a.Kind().PyTorch.Native && a.Args() != "":
		// A backend such as cudaMallocAsync: its arguments are the pool's.
		notes = append(notes, a.Name()+" arguments ("+a.Args()+") are set on the CUDA memory pool, not through "+registry.EnvVar)
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
