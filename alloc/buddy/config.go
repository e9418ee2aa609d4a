// Buddy allocator configuration: parsing and printing the spec arguments.
// See package alloc for the overview.

package buddy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// Name is the allocator's name in specs.
const Name = "buddy"

// DefaultFraction is the share of the device's free memory the pool takes
// when no size is given: 0.9, as for package arena (TensorRT-LLM's default
// free_gpu_memory_fraction, research/kv-managers.md §2.3), so that
// "buddy" and "arena" hold the same bytes and differ only in how they carve
// them.
const DefaultFraction = 0.9

// DefaultMin is the smallest block when min: is not given: 512 bytes,
// PyTorch's kMinBlockSize and package arena's Align, so internal waste is
// comparable with theirs below the power-of-two rounding, and a multiple of
// the 256 B alignment cudaMalloc guarantees.
const DefaultMin = 512

// MinMin is the smallest min: accepted, DefaultMin: a smaller block would
// break the 512-byte alignment every other allocator keeps, and the bound
// holds the number of orders to 42 on a mem.MaxCapacity device
// (2^50 / 2^9 = 2^41 blocks of the smallest size).
const MinMin = DefaultMin

// maxOrders bounds the orders a pool can have: order k is a block of
// min << k bytes, and a pool holds at most mem.MaxCapacity (2^50) bytes of
// blocks at least MinMin (2^9) bytes, so k ≤ 41.
const maxOrders = 42

// Config sizes the pool and its smallest block. Exactly one of Fraction and
// Size is in effect: Size when it is positive, Fraction otherwise.
type Config struct {
	// Fraction of the device's free memory at New, in (0, 1].
	Fraction float64
	// Size is a fixed pool size in bytes; positive overrides Fraction.
	Size int64
	// Min is the smallest block, the unit of the buddy system: a multiple
	// of MinMin up to mem.MaxCapacity, a power of two or not (one token's
	// KV); 0 means DefaultMin. Every request is rounded up to Min × 2^k for
	// the smallest k that holds it.
	Min int64
}

// DefaultConfig is "buddy": DefaultFraction of free memory, blocks of at
// least DefaultMin bytes.
func DefaultConfig() Config { return Config{Fraction: DefaultFraction, Min: DefaultMin} }

// normalized returns c with a zero Min replaced by DefaultMin.
func (c Config) normalized() Config {
	if c.Min == 0 {
		c.Min = DefaultMin
	}
	return c
}

// Validate reports a config that New cannot use, wrapping alloc.ErrBadSpec.
func (c Config) Validate() error {
	c = c.normalized()
	if c.Size < 0 || c.Size == 0 && !(c.Fraction > 0 && c.Fraction <= 1) { // also rejects NaN
		return fmt.Errorf("%w: buddy needs a pool size > 0 or a fraction in (0, 1], got %+v", alloc.ErrBadSpec, c)
	}
	return checkMin(c.Min, formatSize(c.Min))
}

// checkMin reports a smallest block that is not a multiple of MinMin in
// [MinMin, mem.MaxCapacity]; text is the value as the user wrote it.
func checkMin(n int64, text string) error {
	if n < MinMin || n > mem.MaxCapacity || n%MinMin != 0 {
		return fmt.Errorf("%w: buddy min %s must be a multiple of 512B up to 1PiB: a power of two such as 4KiB or 2MiB, or one KV token's bytes (blocks are then powers of two of tokens)",
			alloc.ErrBadSpec, text)
	}
	return nil
}

// ParseConfig reads the spec arguments after "buddy:", comma-separated:
//
//	[POOL][,min:SIZE]
//
// POOL is a bare number, a fraction of free memory in (0, 1] ("0.9"), or a
// size with a unit ("64GiB"); it comes first and defaults to
// DefaultFraction. min:SIZE is the smallest block, a multiple of 512 B
// ("min:4KiB", "min:819200"; a bare number is bytes), default DefaultMin. Empty means
// DefaultConfig, and "min:2MiB" alone is the default pool with 2 MiB
// blocks. Each argument is at most maxQuote bytes. (registry.SplitList keeps
// ",min:..." with the buddy spec before it, as it does the caching
// allocator's key:value options.)
func ParseConfig(args string) (Config, error) {
	c := DefaultConfig()
	s := strings.TrimSpace(args)
	if s == "" {
		return c, nil
	}
	const want = "want [POOL][,min:SIZE], POOL a fraction of free memory in (0, 1] such as 0.9 or a size with a unit such as 64GiB"
	seenMin := false
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		key, val, isKey := strings.Cut(item, ":")
		switch {
		case len(item) > maxQuote:
			// No valid item is this long (mem.ParseBytes reads at most 40
			// digits), and its parse error would repeat all of it.
			return Config{}, fmt.Errorf("%w: buddy argument %d %s is too long (%s)", alloc.ErrBadSpec, i+1, quote(item), want)
		case item == "":
			return Config{}, fmt.Errorf("%w: buddy argument %d is empty (%s)", alloc.ErrBadSpec, i+1, want)
		case !isKey && i > 0:
			return Config{}, fmt.Errorf("%w: buddy argument %d %s: the pool size comes first (%s)",
				alloc.ErrBadSpec, i+1, quote(item), want)
		case !isKey:
			pool, err := parsePool(item, want)
			if err != nil {
				return Config{}, err
			}
			c.Fraction, c.Size = pool.Fraction, pool.Size
		case strings.ToLower(strings.TrimSpace(key)) == "min":
			if seenMin {
				return Config{}, fmt.Errorf("%w: buddy min given twice", alloc.ErrBadSpec)
			}
			seenMin = true
			v := strings.TrimSpace(val)
			n, err := mem.ParseBytes(v)
			if err != nil {
				return Config{}, fmt.Errorf("%w: buddy min %s: want a size with a unit such as 4KiB (%w)",
					alloc.ErrBadSpec, quote(v), err)
			}
			if err := checkMin(n, quote(v)); err != nil {
				return Config{}, err
			}
			c.Min = n
		default:
			return Config{}, fmt.Errorf("%w: buddy argument %d: unknown key %s (the only key is min, as in min:4KiB; %s)",
				alloc.ErrBadSpec, i+1, quote(strings.TrimSpace(key)), want)
		}
	}
	return c, nil
}

// parsePool reads the pool item: a fraction in (0, 1] or a size with a unit.
func parsePool(s, want string) (Config, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err == nil {
		if !(f > 0 && f <= 1) { // also rejects NaN
			return Config{}, fmt.Errorf("%w: buddy fraction %s is outside (0, 1] (a fixed size needs a unit, such as 64GiB)",
				alloc.ErrBadSpec, quote(s))
		}
		return Config{Fraction: f}, nil
	}
	n, err := mem.ParseBytes(s)
	if err != nil {
		return Config{}, fmt.Errorf("%w: buddy pool %s: %s (%w)", alloc.ErrBadSpec, quote(s), want, err)
	}
	if n <= 0 {
		return Config{}, fmt.Errorf("%w: buddy pool size %s must be positive", alloc.ErrBadSpec, quote(s))
	}
	return Config{Size: n}, nil
}

// maxQuote bounds how much of an input value an error message repeats, and
// so the length of one argument: 64 bytes, as internal/untrusted's Quote does for
// the file readers (a spec can come from a scenario file).
const maxQuote = 64

// quote prints s for an error message, cut to maxQuote bytes with its
// length when longer.
func quote(s string) string {
	if len(s) <= maxQuote {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:maxQuote]), len(s))
}

// String prints the config in the form ParseConfig reads back: the pool,
// then ",min:SIZE" when the smallest block is not DefaultMin.
func (c Config) String() string {
	c = c.normalized()
	var s string
	if c.Size > 0 {
		s = formatSize(c.Size)
	} else {
		s = formatFraction(c.Fraction)
	}
	if c.Min != DefaultMin {
		s += ",min:" + formatSize(c.Min)
	}
	return s
}

// formatFraction prints f as ParseConfig reads it back.
func formatFraction(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// formatSize prints n with a unit, exactly: mem.FormatBytes when that reads
// back to n, bytes otherwise ("1.50GiB" is exact, 1.3 GiB is not).
func formatSize(n int64) string {
	if s := mem.FormatBytes(n); s != "" {
		if back, err := mem.ParseBytes(s); err == nil && back == n {
			return s
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// poolSize is the size New reserves on dev: the configured size or fraction
// of free memory, rounded down to a whole poolUnit.
func (c Config) poolSize(dev *mem.Device) int64 {
	c = c.normalized()
	n := c.Size
	if n <= 0 {
		n = int64(c.Fraction * float64(dev.Free()))
	}
	unit := c.poolUnit()
	return n / unit * unit
}

// poolUnit is what the pool is a whole number of: a driver page and a
// smallest block when min is a power of two (the larger of the two, as
// cudaMalloc rounds to pages), else the smallest block alone. A unit that
// is not a power of two is one token's KV (OPT-13B in fp16: 819,200 B =
// 25 × 2^15), whose least common multiple with a 2 MiB page (50 MiB) would
// waste up to that much of a pool; the reservation is then not rounded to
// pages (what a real cudaMalloc would round up, under 2 MiB, is not
// modelled).
func (c Config) poolUnit() int64 {
	if c.Min&(c.Min-1) == 0 {
		return max(mem.PageSize, c.Min)
	}
	return c.Min
}
