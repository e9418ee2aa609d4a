// Async pool configuration: parsing and printing the spec arguments.
// See package alloc for the overview.

package async

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// NoRelease is the release threshold that keeps every mapped page at a
// Sync: CUDA programs set cudaMemPoolAttrReleaseThreshold to UINT64_MAX for
// that, and the spec spells it "max".
const NoRelease = math.MaxInt64

// Config holds the pool's attributes.
type Config struct {
	// ReleaseThreshold is cudaMemPoolAttrReleaseThreshold: the unused mapped
	// bytes the pool keeps at a Sync; above it, Sync unmaps free pages.
	// The default is 0, CUDA's default for every pool ("unused memory is
	// released back to the OS on the next synchronisation"), so by default
	// the pool holds only what is allocated, rounded to pages, after each
	// Sync. NoRelease never trims at a Sync.
	ReleaseThreshold int64
}

// DefaultConfig is "async": CUDA's default pool attributes.
func DefaultConfig() Config { return Config{} }

// Validate reports a config that New cannot use.
func (c Config) Validate() error {
	if c.ReleaseThreshold < 0 {
		return fmt.Errorf("%w: async release_threshold %d must not be negative", alloc.ErrBadSpec, c.ReleaseThreshold)
	}
	return nil
}

const keyReleaseThreshold = "release_threshold"

// ParseConfig reads the spec arguments after "async:": a comma-separated
// list of key:value pairs, as in PYTORCH_CUDA_ALLOC_CONF. The one key is
// release_threshold, a size ("1GiB", "512MiB", "0", a bare number of bytes)
// or "max" for NoRelease. Empty means DefaultConfig.
func ParseConfig(args string) (Config, error) {
	cfg := DefaultConfig()
	seen := map[string]bool{}
	for _, item := range strings.Split(args, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, ":")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || v == "" {
			return Config{}, fmt.Errorf("%w: async argument %q is not key:value (want release_threshold:SIZE, such as release_threshold:1GiB)",
				alloc.ErrBadSpec, item)
		}
		if k != keyReleaseThreshold {
			return Config{}, fmt.Errorf("%w: async has no setting %q (known: %s)", alloc.ErrBadSpec, k, keyReleaseThreshold)
		}
		if seen[k] {
			return Config{}, fmt.Errorf("%w: async setting %s given twice", alloc.ErrBadSpec, k)
		}
		seen[k] = true
		if strings.EqualFold(v, "max") {
			cfg.ReleaseThreshold = NoRelease
			continue
		}
		n, err := mem.ParseBytes(v)
		if err != nil {
			return Config{}, fmt.Errorf("%w: async %s %q: want a size such as 1GiB, or max (%w)", alloc.ErrBadSpec, k, v, err)
		}
		cfg.ReleaseThreshold = n
	}
	return cfg, nil
}

// String prints the config in the form ParseConfig reads back.
func (c Config) String() string {
	v := "max"
	if c.ReleaseThreshold != NoRelease {
		v = formatSize(c.ReleaseThreshold)
	}
	return keyReleaseThreshold + ":" + v
}

// formatSize prints n with a unit when that reads back exactly, else in
// bytes ("1.50GiB" is exact, 1.3 GiB is not).
func formatSize(n int64) string {
	if s := mem.FormatBytes(n); s != "" {
		if back, err := mem.ParseBytes(s); err == nil && back == n {
			return s
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
