// Strategy specs: parsed without an allocator, with what each strategy is
// and needs, and the one check of a strategy × allocator pair.
// See doc.go for the overview.

package strategy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// Family is the kind of a KV strategy.
type Family uint8

const (
	// Contiguous strategies keep each sample's KV in one allocator block:
	// contiguous-max (and :pow2, :oracle) and contiguous-grow.
	Contiguous Family = iota + 1
	// Paged is paged:B, a block pool in one allocation.
	Paged
	// VMM is vmm:P, one range per sample grown in place page by page.
	VMM
)

// String returns the family's name in specs.
func (f Family) String() string {
	switch f {
	case Contiguous:
		return "contiguous"
	case Paged:
		return "paged"
	case VMM:
		return "vmm"
	}
	return "Family(" + strconv.Itoa(int(f)) + ")"
}

// Spec is a parsed KV strategy spec. The zero value is no strategy.
type Spec struct {
	family Family
	mode   contiguousMode // Contiguous
	block  int            // Paged: tokens per block
	page   int64          // VMM: bytes per page
}

// ParseSpec parses a strategy spec (see Parse for the list) without an
// allocator. Errors wrap ErrBadSpec and name the bad part.
func ParseSpec(spec string) (Spec, error) {
	s := strings.TrimSpace(spec)
	name, args, hasArgs := strings.Cut(s, ":")
	name = strings.ToLower(strings.TrimSpace(name))
	args = strings.TrimSpace(args)
	switch name {
	case "contiguous-max":
		mode := reserveMax
		switch {
		case !hasArgs:
		case strings.EqualFold(args, "pow2"):
			mode = reservePow2
		case strings.EqualFold(args, "oracle"):
			mode = reserveOracle
		default:
			return Spec{}, fmt.Errorf("%w: %q: variant %q (want pow2 or oracle)", ErrBadSpec, spec, args)
		}
		return Spec{family: Contiguous, mode: mode}, nil
	case "contiguous-grow":
		if hasArgs {
			return Spec{}, fmt.Errorf("%w: %q: contiguous-grow takes no arguments, got %q", ErrBadSpec, spec, args)
		}
		return Spec{family: Contiguous, mode: growDouble}, nil
	case "paged":
		b, err := strconv.Atoi(args)
		if !hasArgs || err != nil || b <= 0 || b > maxBlockTokens {
			return Spec{}, fmt.Errorf("%w: %q: block size %q (want paged:B, B tokens in 1..%d, e.g. paged:16)",
				ErrBadSpec, spec, args, maxBlockTokens)
		}
		return Spec{family: Paged, block: b}, nil
	case "vmm":
		if !hasArgs {
			return Spec{}, fmt.Errorf("%w: %q: page size missing (want vmm:P, e.g. vmm:2MiB)", ErrBadSpec, spec)
		}
		p, err := mem.ParseBytes(args)
		if err != nil || p <= 0 {
			return Spec{}, fmt.Errorf("%w: %q: page size %q (want bytes such as 2MiB)", ErrBadSpec, spec, args)
		}
		return Spec{family: VMM, page: p}, nil
	}
	return Spec{}, fmt.Errorf("%w: unknown strategy %q (known: %s)", ErrBadSpec, name, strings.Join(Names(), ", "))
}

// PagedSpec is the Spec of paged:B (B tokens per block), built without
// text; B must be in 1..65536 (ParseSpec checks a spec's text).
func PagedSpec(blockTokens int) Spec { return Spec{family: Paged, block: blockTokens} }

// String is the canonical spec, as Strategy.Name gives it: "paged:16",
// "contiguous-max:pow2", "vmm:2MiB".
func (s Spec) String() string {
	switch s.family {
	case Contiguous:
		switch s.mode {
		case reservePow2:
			return "contiguous-max:pow2"
		case reserveOracle:
			return "contiguous-max:oracle"
		case growDouble:
			return "contiguous-grow"
		}
		return "contiguous-max"
	case Paged:
		return "paged:" + strconv.Itoa(s.block)
	case VMM:
		return "vmm:" + mem.FormatBytesExact(s.page)
	}
	return ""
}

// MustParseSpec is ParseSpec for specs written in code (tests, defaults);
// it panics on an error.
func MustParseSpec(spec string) Spec {
	s, err := ParseSpec(spec)
	if err != nil {
		panic(err)
	}
	return s
}

// MarshalText gives String, so a Spec in a YAML or JSON document reads as
// its canonical spec.
func (s Spec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText is ParseSpec: a document's spec text is parsed once, as it
// is read.
func (s *Spec) UnmarshalText(text []byte) error {
	p, err := ParseSpec(string(text))
	if err != nil {
		return err
	}
	*s = p
	return nil
}

// IsZero reports whether s is the zero Spec (no strategy).
func (s Spec) IsZero() bool { return s == Spec{} }

// Family is the strategy's family (0 for the zero Spec).
func (s Spec) Family() Family { return s.family }

// BlockTokens is paged:B's B, 0 for other families.
func (s Spec) BlockTokens() int { return s.block }

// Page is vmm:P's P in bytes, 0 for other families.
func (s Spec) Page() int64 { return s.page }

// Movable reports whether the strategy keeps KV in allocator blocks that a
// defragmenter may relocate (it implements the Movable interface: the
// contiguous family).
func (s Spec) Movable() bool { return s.family == Contiguous }

// Reserves reports whether the strategy reserves a sequence's whole KV at
// Admit (Reserving says whole: the contiguous-max family), so admission can
// be decided by counting tokens.
func (s Spec) Reserves() bool { return s.family == Contiguous && s.mode != growDouble }

// Needs is what a strategy requires of its allocator; the zero value is
// nothing beyond alloc.Allocator.
type Needs struct {
	// GrowUnit, when positive, asks for an allocator that grows blocks in
	// place (alloc.Grower) by exactly this many bytes: vmm:P maps its own
	// pages of P bytes.
	GrowUnit int64
}

// Needs returns what s requires of its allocator.
func (s Spec) Needs() Needs {
	if s.family == VMM {
		return Needs{GrowUnit: s.page}
	}
	return Needs{}
}

// MetBy reports whether an allocator with capabilities c meets n.
func (n Needs) MetBy(c alloc.Caps) bool {
	return n.GrowUnit == 0 || (c.GrowsInPlace && c.GrowUnit == n.GrowUnit)
}

// DefaultAlloc is the allocator spec s runs on when a list offers none
// that meets its needs: vmm:P for vmm:P (vAttention maps its pages with the
// CUDA VMM API); "" for strategies that run on any allocator.
func (s Spec) DefaultAlloc() string {
	if s.family == VMM {
		return "vmm:" + mem.FormatBytesExact(s.page)
	}
	return ""
}

// CheckPair reports whether strategy kv can run on allocator a: nil, or the
// one error (wrapping ErrBadSpec) every command, the scenario builder and
// New give for an impossible pair. a is any parsed allocator spec
// (alloc/registry.Spec): the check reads its capabilities, not its kind.
func CheckPair(kv Spec, a alloc.Described) error {
	return checkCaps(kv, a.String(), a.Caps())
}

// checkCaps checks kv's needs against an allocator's capabilities; name
// names the allocator in the message.
func checkCaps(kv Spec, name string, c alloc.Caps) error {
	n := kv.Needs()
	if n.MetBy(c) {
		return nil
	}
	has := "does not grow blocks in place"
	if c.GrowsInPlace {
		has = "grows them by " + mem.FormatBytesExact(c.GrowUnit)
	}
	return fmt.Errorf("%w: kv %s maps its own pages and needs an allocator that grows blocks in place by %s, such as %s; alloc %s %s",
		ErrBadSpec, kv, mem.FormatBytesExact(n.GrowUnit), kv.DefaultAlloc(), name, has)
}

// AllocsFor is the pairing rule of every sweep: the allocators of allocs
// that strategy kv can run on, in order, or none (nil) when none can: the
// caller then runs kv on its DefaultAlloc, parsed where allocator specs are
// (sim/scenario.Pair, advise). The result may share allocs' backing array.
func AllocsFor[A alloc.Described](kv Spec, allocs []A) []A {
	if kv.Needs() == (Needs{}) {
		return allocs
	}
	var out []A
	for _, a := range allocs {
		if CheckPair(kv, a) == nil {
			out = append(out, a)
		}
	}
	return out
}
