// Package registry is the registry of allocators: it turns specs such as
// "caching", "caching:expandable_segments:True,max_split_size_mb:128",
// "sizeclass:8MiB/64MiB/512MiB" or "vmm:2MiB" into parsed values and
// allocators, and says what each allocator can do. A spec is NAME[:ARGS];
// ARGS belong to the named allocator package (each has ParseConfig and New).
// It is the only package that knows every allocator: commands, the scenario
// builder, advise and the analyses ask it (Parse, KindOf, Caps) instead of
// looking at a spec's text. A parsed Spec is an alloc.Described (text,
// kind name, alloc.Caps), which kv/strategy and defrag take, so that they
// link no allocator; it marshals to and from its text (MarshalText,
// UnmarshalText), so a scenario, an experiment or sim.Config holds it
// parsed once.
//
// Parse checks a spec's name and arguments without a device; Spec.New
// builds the allocator on one. Spec.Caps says which of package alloc's
// optional interfaces the allocator implements (declared per Kind and held
// to the code by a test that builds every Kind), and Spec.PyTorchConf how
// PyTorch selects it.
//
// # Adding an allocator
//
//  1. Its package under alloc/, with ParseConfig and New, passing
//     alloc/alloctest.
//  2. One entry in Kinds below: name, summary, example, its Caps (the test
//     fails until they match what the allocator implements) and how PyTorch
//     selects it, if it does.
//  3. If defrag should plan moves for it, it implements alloc.Relocator,
//     whose Relocation says how its blocks move (declared in its Caps too).
//
// Nothing else names allocators: a KV strategy's needs (kv/strategy) and
// defrag's rules (which blocks move where, or none) are answered from
// alloc.Caps; ForPools names the allocator of a layout by its pools.
package registry

import (
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/arena"
	"github.com/gpufrag/gpufrag/alloc/async"
	"github.com/gpufrag/gpufrag/alloc/buddy"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/alloc/direct"
	"github.com/gpufrag/gpufrag/alloc/sizeclass"
	"github.com/gpufrag/gpufrag/alloc/vmm"
	"github.com/gpufrag/gpufrag/mem"
)

// Kind describes one allocator: its name in specs, texts for help, what it
// can do and how it is parsed and built.
type Kind struct {
	Name    string
	Summary string
	Example string // a spec with arguments
	// Caps are the optional interfaces of package alloc that every
	// allocator of this kind implements. GrowUnit is 0 here: it depends on
	// the arguments, and Spec.Caps fills it in.
	Caps alloc.Caps
	// PyTorch is how PyTorch selects an allocator of this kind.
	PyTorch PyTorch
	// parse checks the arguments (the allocator package's ParseConfig) and
	// returns what build needs.
	parse func(args string) (parsed, error)
	// build builds an allocator from parsed.cfg (the package's New).
	build func(dev *mem.Device, cfg any) (alloc.Allocator, error)
}

// parsed is a kind's parsed arguments: the allocator package's config, a
// plain value, so that a Spec compares (reflect.DeepEqual) by content.
type parsed struct {
	cfg any
	argFacts
}

// argFacts are what a kind's arguments decide beyond its Caps.
type argFacts struct {
	growUnit  int64 // Grower.GrowUnit for kinds that grow in place
	mapsPages bool  // every segment VMM-backed (Spec.MapsPages)
}

// entry is a Kind whose arguments are parsed by parse and built by build
// (an allocator package's ParseConfig and New); facts, when not nil, gives
// what the config decides beyond the Kind's Caps.
func entry[C any, A alloc.Allocator](k Kind, parse func(string) (C, error), build func(*mem.Device, C) (A, error), facts func(C) argFacts) Kind {
	k.parse = func(args string) (parsed, error) {
		c, err := parse(args)
		if err != nil {
			return parsed{}, err
		}
		p := parsed{cfg: c}
		if facts != nil {
			p.argFacts = facts(c)
		}
		return p, nil
	}
	k.build = func(dev *mem.Device, cfg any) (alloc.Allocator, error) {
		a, err := build(dev, cfg.(C))
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	return k
}

// Kinds lists every allocator in a fixed order.
var Kinds = []Kind{
	entry(Kind{Name: "caching", Summary: "PyTorch's CUDA caching allocator; args in PYTORCH_CUDA_ALLOC_CONF syntax",
		Example: "caching:expandable_segments:True,max_split_size_mb:128",
		Caps: alloc.Caps{Relocates: true, Relocation: alloc.Relocation{Releasable: true, Streams: true, SizePools: true},
			Stamps: true, RecordsTrips: true}, PyTorch: PyTorch{Native: true}},
		caching.ParseConfig, caching.New, func(c caching.Config) argFacts { return argFacts{mapsPages: c.ExpandableSegments} }),
	entry(Kind{Name: sizeclass.Name, Summary: "pools per size class, larger requests served directly",
		Example: "sizeclass:8MiB/64MiB/512MiB", Caps: alloc.Caps{Relocates: true, Relocation: alloc.Relocation{Releasable: true, Slots: true}}},
		sizeclass.ParseConfig, sizeclass.New, nil),
	entry(Kind{Name: arena.Name, Summary: "one pre-reserved pool (fraction of free memory or a size), best fit with coalescing",
		Example: "arena:0.9", Caps: alloc.Caps{Relocates: true, Relocation: alloc.Relocation{Memmove: true}}},
		arena.ParseConfig, arena.New, nil),
	entry(Kind{Name: buddy.Name, Summary: "one pre-reserved pool (fraction of free memory or a size) cut into power-of-two blocks, split and merged with their buddy (the vLLM paper's Orca baselines)",
		Example: "buddy:0.9,min:4KiB"},
		buddy.ParseConfig, buddy.New, nil),
	entry(Kind{Name: async.Name, Summary: "stream-ordered pool in the manner of cudaMallocAsync, with a release threshold",
		Example: "async:release_threshold:1GiB", Caps: alloc.Caps{Stamps: true, RecordsTrips: true, Syncs: true}, PyTorch: PyTorch{Backend: "backend:cudaMallocAsync"}},
		async.ParseConfig, async.New, func(async.Config) argFacts { return argFacts{mapsPages: true} }),
	entry(Kind{Name: direct.Name, Summary: "one raw device allocation per request (the baseline)",
		Example: "direct"},
		direct.ParseConfig, direct.New, nil),
	entry(Kind{Name: vmm.Name, Summary: "virtually contiguous ranges backed by physical pages mapped on demand",
		Example: "vmm:2MiB", Caps: alloc.Caps{GrowsInPlace: true, RecordsTrips: true}},
		vmm.ParseConfig, vmm.New, func(c vmm.Config) argFacts { return argFacts{growUnit: c.Page, mapsPages: true} }),
}

// Names returns the allocator names in order.
func Names() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = k.Name
	}
	return out
}

func lookup(name string) (*Kind, bool) {
	for i := range Kinds {
		if Kinds[i].Name == name {
			return &Kinds[i], true
		}
	}
	return nil, false
}

// Spec is a parsed allocator spec: its Kind and checked arguments. The zero
// value names no allocator (New fails). A Spec is read-only and may be
// shared.
type Spec struct {
	text string // as written, surrounding space trimmed
	args string // the text after the first ':'
	kind *Kind
	p    parsed
}

// Parse checks s, NAME[:ARGS], without a device: the name must be a Kind's
// (case does not matter) and ARGS must parse as its package's ParseConfig
// reads them. Errors wrap alloc.ErrBadSpec and name the spec and the bad
// part. Settings that depend on the device (an arena larger than the
// memory) are checked by New.
func Parse(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	k, err := kindOf(s)
	if err != nil {
		return Spec{}, err
	}
	_, args, _ := strings.Cut(s, ":")
	p, err := k.parse(args)
	if err != nil {
		return Spec{}, fmt.Errorf("allocator %q: %w", s, err)
	}
	return Spec{text: s, args: args, kind: k, p: p}, nil
}

// MustParse is Parse for specs written in code (defaults, tests); it
// panics on an error.
func MustParse(s string) Spec {
	sp, err := Parse(s)
	if err != nil {
		panic(fmt.Errorf("registry.MustParse: %w", err))
	}
	return sp
}

// Default is the default allocator, "caching" (PyTorch's, with its
// defaults), parsed once.
func Default() Spec { return defaultSpec }

var defaultSpec = MustParse("caching")

// Described: a parsed Spec tells capability-driven packages (kv/strategy,
// defrag) what they need without linking the allocators.
var _ alloc.Described = Spec{}

// MarshalText gives String, so a Spec in a YAML or JSON document reads as
// it was written.
func (s Spec) MarshalText() ([]byte, error) { return []byte(s.text), nil }

// UnmarshalText is Parse: a document's allocator spec is parsed once, as
// it is read.
func (s *Spec) UnmarshalText(text []byte) error {
	p, err := Parse(string(text))
	if err != nil {
		return err
	}
	*s = p
	return nil
}

// IsZero reports whether s is the zero Spec (no allocator).
func (s Spec) IsZero() bool { return s.kind == nil }

// KindOf returns the Kind that spec s names, looking at the name only: the
// arguments are not checked (Parse checks them). An unknown name is an
// error wrapping alloc.ErrBadSpec that lists the known ones.
func KindOf(s string) (Kind, error) {
	k, err := kindOf(s)
	if err != nil {
		return Kind{}, err
	}
	return *k, nil
}

func kindOf(s string) (*Kind, error) {
	name, _, _ := strings.Cut(strings.TrimSpace(s), ":")
	k, ok := lookup(strings.ToLower(strings.TrimSpace(name)))
	if !ok {
		return nil, fmt.Errorf("%w: unknown allocator %q (known: %s)", alloc.ErrBadSpec, name, strings.Join(Names(), ", "))
	}
	return k, nil
}

// String returns the spec as it was written (surrounding space trimmed),
// which is how commands print it; the allocator's own Spec method gives the
// canonical form.
func (s Spec) String() string { return s.text }

// Name is the allocator's name ("caching"), "" for the zero Spec.
func (s Spec) Name() string {
	if s.kind == nil {
		return ""
	}
	return s.kind.Name
}

// Args is the argument text after "NAME:", as written ("" when none).
func (s Spec) Args() string { return s.args }

// Kind returns the spec's Kind (the zero Kind for the zero Spec).
func (s Spec) Kind() Kind {
	if s.kind == nil {
		return Kind{}
	}
	return *s.kind
}

// Caps returns what an allocator built from s can do, GrowUnit included.
func (s Spec) Caps() alloc.Caps {
	if s.kind == nil {
		return alloc.Caps{}
	}
	c := s.kind.Caps
	c.GrowUnit = s.p.growUnit
	return c
}

// MapsPages reports whether every segment of the allocator s builds is
// backed by physical pages mapped into a virtual range (expandable: caching
// with expandable_segments:True, async's pool as cudaMallocAsync's, vmm), so that free memory goes back to the
// device page by page and compacting live blocks has nothing to gain.
func (s Spec) MapsPages() bool { return s.p.mapsPages }

// PyTorchConf returns the PYTORCH_CUDA_ALLOC_CONF value that selects s in
// PyTorch, and false when none does (gpufrag's own models). For the
// caching allocator it is the arguments; for a backend such as async the
// backend's switch, whose own arguments PyTorch sets elsewhere.
func (s Spec) PyTorchConf() (string, bool) {
	if s.kind == nil {
		return "", false
	}
	switch pt := s.kind.PyTorch; {
	case pt.Native:
		return s.args, true
	case pt.Backend != "":
		return pt.Backend, true
	}
	return "", false
}

// New builds the allocator on dev. Errors name the spec.
func (s Spec) New(dev *mem.Device) (alloc.Allocator, error) {
	if s.kind == nil {
		return nil, fmt.Errorf("%w: no allocator (the zero Spec)", alloc.ErrBadSpec)
	}
	a, err := s.kind.build(dev, s.p.cfg)
	if err != nil {
		return nil, fmt.Errorf("allocator %q: %w", s.text, err)
	}
	return a, nil
}

// New builds the allocator named by s on dev: Parse, then Spec.New.
func New(s string, dev *mem.Device) (alloc.Allocator, error) {
	sp, err := Parse(s)
	if err != nil {
		return nil, err
	}
	return sp.New(dev)
}

// SplitList splits a comma-separated list of specs. Because the caching
// allocator's own arguments are comma-separated, a piece that does not start
// with an allocator name continues the previous spec:
//
//	"caching:expandable_segments:True,max_split_size_mb:128,vmm:2MiB"
//	→ ["caching:expandable_segments:True,max_split_size_mb:128", "vmm:2MiB"]
//
// "all" expands to every allocator with default settings.
func SplitList(list string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		name, _, _ := strings.Cut(p, ":")
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "all" {
			out = append(out, Names()...)
			continue
		}
		// A piece continues the previous spec only if it looks like a
		// caching option (key:value) and does not name an allocator; a bare
		// unknown word starts a spec of its own, so the error names it.
		if _, ok := lookup(name); ok || len(out) == 0 || !strings.Contains(p, ":") {
			out = append(out, p)
			continue
		}
		out[len(out)-1] += "," + p
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty allocator list", alloc.ErrBadSpec)
	}
	return out, nil
}

// SplitLists splits each of values as SplitList does, in order (the
// values of a repeated --alloc flag); the first error is SplitList's.
func SplitLists(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		ss, err := SplitList(v)
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	return out, nil
}
