// PYTORCH_CUDA_ALLOC_CONF parsing.
// See package alloc for the overview.

package caching

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

// roundupIntervals is the number of power-of-two intervals of the
// roundup_power2_divisions table: 1 MiB (2^20) up to 64 GiB (2^36), as in
// c10's kRoundUpPowerOfTwoIntervals.
const roundupIntervals = 16

// Config is the allocator's setting, as PYTORCH_CUDA_ALLOC_CONF states it.
type Config struct {
	// MaxSplitSize (max_split_size_mb) is M: blocks of at least M bytes are
	// never split, and requests below M never take them. 0 means unlimited
	// (PyTorch's SIZE_MAX, shown as -1 in snapshots and memory_stats).
	MaxSplitSize int64
	// MaxNonSplitRounding (max_non_split_rounding_mb) is R: a request of at
	// least M bytes may take a cached oversize block only if the block is
	// smaller than request + R. Default 20 MiB (kLargeBuffer).
	MaxNonSplitRounding int64
	// RoundupDivisions (roundup_power2_divisions) holds the divisions per
	// interval [2^(20+i), 2^(21+i)); 0 or 1 means plain 512-byte rounding.
	RoundupDivisions [roundupIntervals]int64
	// GCThreshold (garbage_collection_threshold) in (0, 1); 0 disables. It
	// only acts when PerProcessMemoryFraction is set, as in PyTorch.
	GCThreshold float64
	// PerProcessMemoryFraction caps reserved memory at this fraction of the
	// device capacity (torch.cuda.set_per_process_memory_fraction; newer
	// PyTorch also reads it from the allocator config). 0 means unset.
	PerProcessMemoryFraction float64
	// ExpandableSegments (expandable_segments) grows one virtual range per
	// stream and pool by mapping pages instead of cudaMalloc'ing segments.
	ExpandableSegments bool

	raw string // the text as given, for Spec
}

// maxSplitMiB is the largest max_split_size_mb and max_non_split_rounding_mb
// accepted (see ParseConfig).
const maxSplitMiB = 1 << 40

// ParseConfig reads PYTORCH_CUDA_ALLOC_CONF syntax: `key:value,key:[a:b,c:d]`,
// whitespace ignored, keys and rules as in c10/cuda/CUDAAllocatorConfig.cpp.
// Keys that do not change the allocation policy (release_lock_on_cudamalloc,
// pinned_*, graph_capture_record_stream_reuse, backend:native) are accepted
// and ignored; backend:cudaMallocAsync is refused with a pointer to the
// "async" allocator, which models it.
func ParseConfig(args string) (Config, error) {
	cfg := Config{MaxNonSplitRounding: kLargeBuffer, raw: strings.TrimSpace(args)}
	toks := lex(args)
	bad := func(format string, a ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: caching: %s", alloc.ErrBadSpec, fmt.Sprintf(format, a...))
	}
	i := 0
	next := func() string {
		if i < len(toks) {
			i++
			return toks[i-1]
		}
		return ""
	}
	expect := func(tok string) bool { return next() == tok }
	for i < len(toks) {
		key := next()
		if key == "," {
			continue
		}
		if !expect(":") {
			return bad("option %q needs a value (key:value)", key)
		}
		switch key {
		case "max_split_size_mb", "max_non_split_rounding_mb":
			v := next()
			n, err := strconv.ParseInt(v, 10, 64)
			// PyTorch: "must be > 20" in newer revisions, ">= 20" in older
			// ones; we accept 20 so settings from either era load. The top,
			// 2^40 MiB (1 EiB, a thousand times mem.MaxCapacity), is past
			// any device, so it means "never", and keeps n × MiB far from
			// overflowing.
			if err != nil || n < kLargeBuffer/mem.MiB || n > maxSplitMiB {
				return bad("%s:%s must be a whole number of MiB from 20 to %d (2^40)", key, v, int64(maxSplitMiB))
			}
			if key == "max_split_size_mb" {
				cfg.MaxSplitSize = n * mem.MiB
			} else {
				cfg.MaxNonSplitRounding = n * mem.MiB
			}
		case "garbage_collection_threshold", "per_process_memory_fraction":
			v := next()
			f, err := strconv.ParseFloat(v, 64)
			// Written so that NaN, which ParseFloat accepts and every
			// comparison rejects, fails too.
			if err != nil || !(f > 0 && f <= 1) || (key == "garbage_collection_threshold" && !(f < 1)) {
				return bad("%s:%s must be a number in (0, 1)", key, v)
			}
			if key == "garbage_collection_threshold" {
				cfg.GCThreshold = f
			} else {
				cfg.PerProcessMemoryFraction = f
			}
		case "expandable_segments", "release_lock_on_cudamalloc", "pinned_use_cuda_host_register",
			"pinned_use_background_threads", "graph_capture_record_stream_reuse":
			v := next()
			if v != "True" && v != "False" {
				return bad("%s:%s must be True or False", key, v)
			}
			if key == "expandable_segments" {
				cfg.ExpandableSegments = v == "True"
			}
		case "pinned_num_register_threads", "pinned_reserve_segment_size_mb":
			if _, err := strconv.Atoi(next()); err != nil {
				return bad("%s needs an integer", key)
			}
		case "backend":
			switch v := next(); v {
			case "native":
			case "cudaMallocAsync":
				return bad("backend:cudaMallocAsync bypasses the caching allocator; use the allocator spec \"async\" instead")
			default:
				return bad("backend:%s is unknown (native or cudaMallocAsync)", v)
			}
		case "roundup_power2_divisions":
			if err := parseRoundup(&cfg, toks, &i); err != nil {
				return bad("%v", err)
			}
		default:
			return bad("unknown option %q (known: max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions, "+
				"garbage_collection_threshold, expandable_segments, per_process_memory_fraction)", key)
		}
		if i < len(toks) && toks[i] != "," {
			return bad("expected ',' after option %q, got %q", key, toks[i])
		}
	}
	// A GC threshold without a memory fraction is accepted, as PyTorch does,
	// and has no effect.
	return cfg, nil
}

// lex splits at ',', ':', '[' and ']' (kept as tokens) and drops spaces, like
// CUDAAllocatorConfig::lexArgs.
func lex(s string) []string {
	var out []string
	var buf strings.Builder
	flush := func() {
		if buf.Len() > 0 {
			out = append(out, buf.String())
			buf.Reset()
		}
	}
	for _, r := range s {
		switch r {
		case ',', ':', '[', ']':
			flush()
			out = append(out, string(r))
		case ' ', '\t', '\n':
		default:
			buf.WriteRune(r)
		}
	}
	flush()
	return out
}

func isPow2(n int64) bool { return n > 0 && n&(n-1) == 0 }

// parseRoundup follows parseRoundUpPower2Divisions: either one number for
// every interval, or `[64:8,256:4,>:1]` where a key is an interval start in
// MiB (a power of two; interval index log2(key), clamped to 15), the first
// key also fills every lower interval, and `>` fills from the last key's
// interval to the end — including that interval itself, a quirk of the C++
// (std::fill from last_index) that we keep.
func parseRoundup(cfg *Config, toks []string, i *int) error {
	at := func() string {
		if *i < len(toks) {
			return toks[*i]
		}
		return ""
	}
	if at() != "[" {
		v := at()
		*i++
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || !isPow2(n) {
			return fmt.Errorf("roundup_power2_divisions:%s must be a power of two or a [interval:divisions,...] list", v)
		}
		for k := range cfg.RoundupDivisions {
			cfg.RoundupDivisions[k] = n
		}
		return nil
	}
	*i++ // '['
	first, last := true, 0
	for {
		key := at()
		*i++
		if key == "]" {
			return nil
		}
		if key == "" {
			return fmt.Errorf("roundup_power2_divisions: missing ']'")
		}
		if at() != ":" {
			return fmt.Errorf("roundup_power2_divisions: entry %q needs interval:divisions", key)
		}
		*i++
		v := at()
		*i++
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || (n != 0 && !isPow2(n)) {
			return fmt.Errorf("roundup_power2_divisions: divisions %q must be 0 or a power of two", v)
		}
		if key == ">" {
			for k := last; k < roundupIntervals; k++ {
				cfg.RoundupDivisions[k] = n
			}
		} else {
			mb, err := strconv.ParseInt(key, 10, 64)
			if err != nil || !isPow2(mb) {
				return fmt.Errorf("roundup_power2_divisions: interval %q must be a power of two (MiB)", key)
			}
			idx := min(bits.Len64(uint64(mb))-1, roundupIntervals-1)
			if first {
				for k := 0; k < idx; k++ {
					cfg.RoundupDivisions[k] = n
				}
				first = false
			}
			cfg.RoundupDivisions[idx] = n
			last = idx
		}
		switch at() {
		case ",":
			*i++
		case "]":
		default:
			return fmt.Errorf("roundup_power2_divisions: expected ',' or ']' after %s:%s", key, v)
		}
	}
}

// String is the canonical config text: the text as given when parsed, else
// the non-default settings.
func (c Config) String() string {
	if c.raw != "" {
		return c.raw
	}
	var parts []string
	if c.MaxSplitSize > 0 {
		parts = append(parts, fmt.Sprintf("max_split_size_mb:%d", c.MaxSplitSize/mem.MiB))
	}
	if c.MaxNonSplitRounding != 0 && c.MaxNonSplitRounding != kLargeBuffer {
		parts = append(parts, fmt.Sprintf("max_non_split_rounding_mb:%d", c.MaxNonSplitRounding/mem.MiB))
	}
	var rd []string
	for k, d := range c.RoundupDivisions {
		if d != 0 {
			rd = append(rd, fmt.Sprintf("%d:%d", int64(1)<<k, d))
		}
	}
	if len(rd) > 0 {
		parts = append(parts, "roundup_power2_divisions:["+strings.Join(rd, ",")+"]")
	}
	if c.GCThreshold > 0 {
		parts = append(parts, "garbage_collection_threshold:"+strconv.FormatFloat(c.GCThreshold, 'g', -1, 64))
	}
	if c.PerProcessMemoryFraction > 0 {
		parts = append(parts, "per_process_memory_fraction:"+strconv.FormatFloat(c.PerProcessMemoryFraction, 'g', -1, 64))
	}
	if c.ExpandableSegments {
		parts = append(parts, "expandable_segments:True")
	}
	return strings.Join(parts, ",")
}

// maxSplit is M as a comparable size: unlimited becomes MaxInt64.
func (c *Config) maxSplit() int64 {
	if c.MaxSplitSize <= 0 {
		return 1<<63 - 1
	}
	return c.MaxSplitSize
}

func (c *Config) nonSplitRounding() int64 {
	if c.MaxNonSplitRounding <= 0 {
		return kLargeBuffer
	}
	return c.MaxNonSplitRounding
}
