// Arena configuration: parsing and printing the spec arguments.
// See package alloc for the overview.

package arena

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// DefaultFraction is the share of the device's free memory the pool takes
// when no argument is given: 0.9, TensorRT-LLM's default
// free_gpu_memory_fraction for its KV-cache pool (research/kv-managers.md
// §2.3). The 10% left over is what TensorRT-LLM keeps for activations and
// the CUDA context's own growth.
const DefaultFraction = 0.9

// Config sizes the pool. Exactly one of Fraction and Size is in effect: Size
// when it is positive, Fraction otherwise.
type Config struct {
	// Fraction of the device's free memory at New, in (0, 1].
	Fraction float64
	// Size is a fixed pool size in bytes; positive overrides Fraction.
	Size int64
}

// DefaultConfig is "arena": DefaultFraction of free memory.
func DefaultConfig() Config { return Config{Fraction: DefaultFraction} }

// ParseConfig reads the spec arguments after "arena:". Empty means
// DefaultConfig; a bare number is a fraction of free memory in (0, 1]
// ("0.8"); a number with a unit is a fixed size ("64GiB", "512MiB").
func ParseConfig(args string) (Config, error) {
	s := strings.TrimSpace(args)
	if s == "" {
		return DefaultConfig(), nil
	}
	const want = "want a fraction of free memory in (0, 1] such as 0.9, or a size with a unit such as 64GiB"
	f, err := strconv.ParseFloat(s, 64)
	if err == nil {
		if !(f > 0 && f <= 1) { // also rejects NaN
			return Config{}, fmt.Errorf("%w: arena fraction %s is outside (0, 1] (a fixed size needs a unit, such as 64GiB)",
				alloc.ErrBadSpec, s)
		}
		return Config{Fraction: f}, nil
	}
	n, err := mem.ParseBytes(s)
	if err != nil {
		return Config{}, fmt.Errorf("%w: arena argument %q: %s (%w)", alloc.ErrBadSpec, s, want, err)
	}
	if n <= 0 {
		return Config{}, fmt.Errorf("%w: arena size %q must be positive", alloc.ErrBadSpec, s)
	}
	return Config{Size: n}, nil
}

// String prints the config in the form ParseConfig reads back.
func (c Config) String() string {
	if c.Size > 0 {
		return formatSize(c.Size)
	}
	return strconv.FormatFloat(c.Fraction, 'g', -1, 64)
}

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
// of free memory, rounded down to whole driver pages.
func (c Config) poolSize(dev *mem.Device) int64 {
	n := c.Size
	if n <= 0 {
		n = int64(c.Fraction * float64(dev.Free()))
	}
	return n / mem.PageSize * mem.PageSize
}
