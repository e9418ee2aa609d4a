// VMM allocator configuration.
// See package alloc for the overview.

package vmm

import (
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// Name is the allocator's name in specs ("vmm").
const Name = "vmm"

// Pool is the pool name of every segment.
const Pool = "vmm"

const (
	// DefaultPage is 2 MiB, the granularity cuMemGetAllocationGranularity
	// reports on current NVIDIA GPUs: the smallest page the stock VMM API
	// maps, used by PyTorch's expandable segments and by GMLake.
	DefaultPage = 2 * mem.MiB
	// MinPage is 64 KiB, the page vAttention maps with its driver extension
	// (it adds 64 KiB and 128 KiB pages to cut internal waste). Pages are
	// multiples of it, since no driver maps anything finer.
	MinPage = 64 * mem.KiB
	// MaxPage is 1 GiB, the largest page any GPU driver offers (huge pages
	// on Grace Hopper); beyond it a "page" is just a whole allocation.
	MaxPage = mem.GiB

	// DefaultMaxRange is the virtual space reserved per allocation, 64 GiB:
	// the KV cache of a 128k-token context of a 70B-class model with GQA
	// (about 40 GiB in bf16) fits with room to spare, so Grow never has to
	// move a sequence; virtual space costs nothing (see the package doc).
	DefaultMaxRange = 64 * mem.GiB
	// MaxMaxRange is 128 TiB (2^47 bytes), the smallest virtual address space
	// of a current GPU: one range cannot be larger than all of it.
	MaxMaxRange = 128 * mem.TiB
)

// Config is the VMM allocator's configuration. The zero value means the
// defaults (New fills them in).
type Config struct {
	// Page is the physical page size P: allocations are backed by whole
	// pages of P bytes. A multiple of MinPage in [MinPage, MaxPage].
	Page int64
	// MaxRange is the virtual space reserved per allocation, the size it can
	// Grow to in place. A multiple of Page, at most MaxMaxRange; zero means
	// DefaultMaxRange rounded down to a multiple of Page.
	MaxRange int64
}

// DefaultConfig returns 2 MiB pages and 64 GiB ranges.
func DefaultConfig() Config { return Config{Page: DefaultPage, MaxRange: DefaultMaxRange} }

// EnsureDefaults fills zero fields with the defaults.
func (c *Config) EnsureDefaults() {
	if c.Page == 0 {
		c.Page = DefaultPage
	}
	if c.MaxRange == 0 {
		c.MaxRange = defaultMaxRange(c.Page)
	}
}

// defaultMaxRange is DefaultMaxRange rounded down to a multiple of the page
// (every power-of-two page divides it; a page such as 192 KiB does not).
func defaultMaxRange(page int64) int64 {
	if page <= 0 || page > DefaultMaxRange {
		return DefaultMaxRange // Validate reports the page
	}
	return DefaultMaxRange - DefaultMaxRange%page
}

// Validate reports the first setting out of range, wrapping alloc.ErrBadSpec.
func (c Config) Validate() error {
	switch {
	case c.Page < MinPage || c.Page > MaxPage || c.Page%MinPage != 0:
		return fmt.Errorf("%w: vmm page %s must be a multiple of 64KiB between 64KiB and 1GiB (2MiB is the CUDA VMM granularity, 64KiB vAttention's)",
			alloc.ErrBadSpec, formatExact(c.Page))
	case c.MaxRange < c.Page || c.MaxRange > MaxMaxRange || c.MaxRange%c.Page != 0:
		return fmt.Errorf("%w: vmm max_range %s must be a multiple of the page %s, at most 128TiB",
			alloc.ErrBadSpec, formatExact(c.MaxRange), formatExact(c.Page))
	}
	return nil
}

// ParseConfig parses the spec arguments after "vmm:": an optional page size
// and an optional max_range, comma-separated, in PYTORCH_CUDA_ALLOC_CONF's
// key:value style. Empty means the defaults. Examples: "2MiB", "64KiB",
// "page:64KiB,max_range:16GiB".
func ParseConfig(args string) (Config, error) {
	var c Config
	if strings.TrimSpace(args) == "" {
		return DefaultConfig(), nil
	}
	for i, item := range strings.Split(args, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return Config{}, fmt.Errorf("%w: vmm arguments %q have an empty setting (want e.g. vmm:64KiB,max_range:16GiB)", alloc.ErrBadSpec, args)
		}
		key, val, hasKey := strings.Cut(item, ":")
		if !hasKey {
			key, val = "page", item
			if i != 0 {
				return Config{}, fmt.Errorf("%w: vmm argument %q: a bare size is the page and must come first (want e.g. vmm:64KiB,max_range:16GiB)", alloc.ErrBadSpec, item)
			}
		}
		key = strings.ToLower(strings.TrimSpace(key))
		var dst *int64
		switch key {
		case "page":
			dst = &c.Page
		case "max_range":
			dst = &c.MaxRange
		default:
			return Config{}, fmt.Errorf("%w: vmm: unknown setting %q (want page or max_range, e.g. vmm:64KiB,max_range:16GiB)", alloc.ErrBadSpec, key)
		}
		if *dst != 0 {
			return Config{}, fmt.Errorf("%w: vmm: %s given twice", alloc.ErrBadSpec, key)
		}
		n, err := mem.ParseBytes(val)
		if err != nil {
			return Config{}, fmt.Errorf("%w: vmm %s: %w", alloc.ErrBadSpec, key, err)
		}
		if n == 0 {
			return Config{}, fmt.Errorf("%w: vmm %s must be positive", alloc.ErrBadSpec, key)
		}
		*dst = n
	}
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// String returns the canonical arguments: the page size, then max_range when
// it is not the default for that page ("2MiB", "64KiB,max_range:16GiB").
func (c Config) String() string {
	s := formatExact(c.Page)
	if c.MaxRange != defaultMaxRange(c.Page) {
		s += ",max_range:" + formatExact(c.MaxRange)
	}
	return s
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
