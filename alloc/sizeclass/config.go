// Size-class allocator configuration.
// See package alloc for the overview.

package sizeclass

import (
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// Name is the allocator's name in specs ("sizeclass").
const Name = "sizeclass"

// DirectPool is the pool name of requests larger than the largest class,
// which are served directly from the device as by package direct.
const DirectPool = "direct"

const (
	// ClassAlign: every class is a multiple of 512 bytes, the rounding unit
	// of PyTorch's allocator (kMinBlockSize) and twice the 256-byte alignment
	// cudaMalloc guarantees, so every slot of a slab starts 512-byte aligned.
	ClassAlign = 512
	// MaxClass is 1 TiB: no GPU comes near it (the largest have under
	// 300 GB), so a larger class is a typo, and the limit keeps slab
	// arithmetic far from overflow.
	MaxClass = mem.TiB
	// SlabTarget is the slab size small classes aim for: one 2 MiB driver
	// page (mem.PageSize). A class below it packs PageSize/class slots in a
	// slab, as the Go runtime packs small objects in a span, so small blocks
	// do not each waste most of a page; a class of a page or more gets one
	// slot per slab, because grouping slots that are already a page or more
	// saves nothing and would keep more memory hostage per slab.
	SlabTarget = mem.PageSize
)

// DefaultClasses are 8 MiB, 64 MiB and 512 MiB, the example DESIGN.md §3
// gives: classes 8× apart, so three of them span small activations to
// large KV buffers, at the price of up to 7/8 of a block lost to rounding in
// the worst case (see WasteTable).
var DefaultClasses = []int64{8 * mem.MiB, 64 * mem.MiB, 512 * mem.MiB}

// Config is the size-class allocator's configuration.
type Config struct {
	// Classes are the slot sizes, strictly increasing, each a positive
	// multiple of ClassAlign and at most MaxClass. Empty means
	// DefaultClasses. New copies the slice; the allocator keeps no
	// reference to it.
	Classes []int64
}

// DefaultConfig returns the default classes.
func DefaultConfig() Config { return Config{Classes: append([]int64(nil), DefaultClasses...)} }

// EnsureDefaults fills an empty class list with the defaults.
func (c *Config) EnsureDefaults() {
	if len(c.Classes) == 0 {
		c.Classes = append([]int64(nil), DefaultClasses...)
	}
}

// Validate reports the first class out of range, wrapping alloc.ErrBadSpec.
func (c Config) Validate() error {
	if len(c.Classes) == 0 {
		return fmt.Errorf("%w: sizeclass needs at least one class (want e.g. 8MiB/64MiB/512MiB)", alloc.ErrBadSpec)
	}
	for i, s := range c.Classes {
		switch {
		case s <= 0 || s > MaxClass:
			return fmt.Errorf("%w: sizeclass class %d (%s) must be between 512B and 1TiB", alloc.ErrBadSpec, i+1, formatExact(s))
		case s%ClassAlign != 0:
			return fmt.Errorf("%w: sizeclass class %d (%s) must be a multiple of 512 bytes", alloc.ErrBadSpec, i+1, formatExact(s))
		case i > 0 && s <= c.Classes[i-1]:
			return fmt.Errorf("%w: sizeclass classes must be strictly increasing: %s follows %s",
				alloc.ErrBadSpec, formatExact(s), formatExact(c.Classes[i-1]))
		}
	}
	return nil
}

// ParseConfig parses the spec arguments after "sizeclass:": class sizes with
// units, separated by slashes, strictly increasing ("8MiB/64MiB/512MiB").
// Empty means the defaults.
func ParseConfig(args string) (Config, error) {
	if strings.TrimSpace(args) == "" {
		return DefaultConfig(), nil
	}
	var c Config
	for i, f := range strings.Split(args, "/") {
		n, err := mem.ParseBytes(f)
		if err != nil {
			return Config{}, fmt.Errorf("%w: sizeclass class %d: %w (want sizes separated by slashes, e.g. 8MiB/64MiB/512MiB)",
				alloc.ErrBadSpec, i+1, err)
		}
		c.Classes = append(c.Classes, n)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// String returns the canonical arguments: the classes joined by slashes,
// each in the largest unit that divides it ("8MiB/64MiB/512MiB").
func (c Config) String() string {
	parts := make([]string, len(c.Classes))
	for i, s := range c.Classes {
		parts[i] = formatExact(s)
	}
	return strings.Join(parts, "/")
}

// formatExact prints n in the largest binary unit that divides it, so the
// text parses back to exactly n (mem.FormatBytes rounds to two decimals).
func formatExact(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", mem.TiB}, {"GiB", mem.GiB}, {"MiB", mem.MiB}, {"KiB", mem.KiB}} {
		if n != 0 && n%u.mult == 0 {
			return fmt.Sprintf("%d%s", n/u.mult, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}
