package caching

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/mem"
)

func mustConfig(t *testing.T, s string) Config {
	t.Helper()
	c, err := ParseConfig(s)
	if err != nil {
		t.Fatalf("ParseConfig(%q): %v", s, err)
	}
	return c
}

func TestRoundSize(t *testing.T) {
	def := mustConfig(t, "")
	div4 := mustConfig(t, "roundup_power2_divisions:4")
	for _, tc := range []struct {
		cfg  Config
		in   int64
		want int64
	}{
		{def, 1, 512},
		{def, 511, 512},
		{def, 512, 512},
		{def, 513, 1024},
		{def, 1200, 1536},
		{def, 5*mem.MiB + 1, 5*mem.MiB + 512},
		// With 4 divisions, sizes above 512·4 = 2048 round to quarter steps
		// between powers of two: 5 MiB + 1 lies in [4, 8) MiB, steps of 1 MiB.
		{div4, 5*mem.MiB + 1, 6 * mem.MiB},
		{div4, 4 * mem.MiB, 4 * mem.MiB}, // a power of two stays
		{div4, 1200, 1536},               // 1200 ≤ 2048: plain 512 rounding
		{div4, 3000, 3072},               // [2048, 4096) in steps of 512
		{div4, 2049, 2560},
	} {
		if got := tc.cfg.roundSize(tc.in); got != tc.want {
			t.Errorf("roundSize(%d) with %q = %d, want %d", tc.in, tc.cfg.String(), got, tc.want)
		}
	}
	// roundup_power2_next_division on its own: the note's example.
	if got := roundupPower2NextDivision(1200, 4); got != 1280 {
		t.Errorf("roundupPower2NextDivision(1200, 4) = %d, want 1280", got)
	}
	// step 0: divisions larger than the power of two double it.
	if got := roundupPower2NextDivision(3, 4); got != 4 {
		t.Errorf("roundupPower2NextDivision(3, 4) = %d, want 4", got)
	}
}

func TestAllocationSize(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{512, 2 * mem.MiB},
		{mem.MiB, 2 * mem.MiB},
		{mem.MiB + 512, 20 * mem.MiB},
		{10*mem.MiB - 512, 20 * mem.MiB},
		{10 * mem.MiB, 10 * mem.MiB},
		{10*mem.MiB + 512, 12 * mem.MiB},
		{19 * mem.MiB, 20 * mem.MiB},
	} {
		if got := allocationSize(tc.in); got != tc.want {
			t.Errorf("allocationSize(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	c := mustConfig(t, " max_split_size_mb:128 , expandable_segments:True,garbage_collection_threshold:0.6,per_process_memory_fraction:0.9")
	if c.MaxSplitSize != 128*mem.MiB || !c.ExpandableSegments || c.GCThreshold != 0.6 || c.PerProcessMemoryFraction != 0.9 {
		t.Errorf("parsed %+v", c)
	}
	// Bracket form: the first key fills the lower intervals; '>' fills from
	// the last key's interval to the end, overwriting it (the C++ quirk).
	c = mustConfig(t, "roundup_power2_divisions:[64:8,256:4,>:1]")
	want := [roundupIntervals]int64{8, 8, 8, 8, 8, 8, 8, 0, 1, 1, 1, 1, 1, 1, 1, 1}
	if c.RoundupDivisions != want {
		t.Errorf("divisions %v, want %v", c.RoundupDivisions, want)
	}
	c = mustConfig(t, "roundup_power2_divisions:[1:2,8:8]")
	want = [roundupIntervals]int64{2, 0, 0, 8}
	if c.RoundupDivisions != want {
		t.Errorf("divisions %v, want %v", c.RoundupDivisions, want)
	}
	for _, bad := range []string{
		"max_split_size_mb:10", "max_split_size_mb:x", "max_split_size_mb",
		"expandable_segments:true", "garbage_collection_threshold:1", "garbage_collection_threshold:0",
		"roundup_power2_divisions:3", "roundup_power2_divisions:[64:3]", "roundup_power2_divisions:[63:4]",
		"roundup_power2_divisions:[64:4", "bogus:1", "backend:cudaMallocAsync", "backend:nope",
		"max_split_size_mb:128 expandable_segments:True",
	} {
		if _, err := ParseConfig(bad); !errors.Is(err, alloc.ErrBadSpec) {
			t.Errorf("ParseConfig(%q) = %v, want ErrBadSpec", bad, err)
		}
	}
	for _, ok := range []string{"", "backend:native", "release_lock_on_cudamalloc:True", "max_split_size_mb:20"} {
		if _, err := ParseConfig(ok); err != nil {
			t.Errorf("ParseConfig(%q): %v", ok, err)
		}
	}
}

func TestSpecRoundTrip(t *testing.T) {
	for _, s := range []string{"", "expandable_segments:True,max_split_size_mb:128"} {
		a, err := New(mem.MustDevice(mem.GiB, 0), mustConfig(t, s))
		if err != nil {
			t.Fatal(err)
		}
		c := Config{MaxSplitSize: 128 * mem.MiB, ExpandableSegments: true}
		if s == "" {
			c = Config{}
		}
		if a.Spec() != "caching"+map[bool]string{true: "", false: ":" + s}[s == ""] {
			t.Errorf("Spec() = %q", a.Spec())
		}
		back := mustConfig(t, c.String())
		if back.MaxSplitSize != c.MaxSplitSize || back.ExpandableSegments != c.ExpandableSegments {
			t.Errorf("String() %q does not round-trip", c.String())
		}
	}
}

// hostileConfigs are settings that once slipped through or could overflow:
// NaN passes every "out of range" comparison, huge or negative sizes in
// MiB, and powers of two at the top of int64.
var hostileConfigs = []string{
	"garbage_collection_threshold:NaN,per_process_memory_fraction:0.5",
	"per_process_memory_fraction:NaN", "per_process_memory_fraction:nan",
	"garbage_collection_threshold:1e308", "per_process_memory_fraction:-0", "per_process_memory_fraction:1e-400",
	"max_split_size_mb:9999999999999999999", "max_split_size_mb:1099511627777", "max_split_size_mb:-1",
	"max_split_size_mb:1e308", "max_non_split_rounding_mb:9223372036854775807",
	"roundup_power2_divisions:4611686018427387904",
	"roundup_power2_divisions:[9223372036854775807:4]", "roundup_power2_divisions:[4611686018427387904:4611686018427387904,>:0]",
}

func TestHostileConfigs(t *testing.T) {
	for _, s := range hostileConfigs {
		c, err := ParseConfig(s)
		if err == nil {
			if e := configInRange(c); e != nil {
				t.Errorf("ParseConfig(%q) accepted %v", s, e)
			}
			continue
		}
		if !errors.Is(err, alloc.ErrBadSpec) {
			t.Errorf("ParseConfig(%q): %v, want ErrBadSpec", s, err)
		}
	}
}

// configInRange reports a field outside the range ParseConfig promises.
func configInRange(c Config) error {
	switch {
	case c.MaxSplitSize < 0 || c.MaxSplitSize > maxSplitMiB*mem.MiB:
		return fmt.Errorf("max split %d", c.MaxSplitSize)
	case c.MaxNonSplitRounding < 0 || c.MaxNonSplitRounding > maxSplitMiB*mem.MiB:
		return fmt.Errorf("max non-split rounding %d", c.MaxNonSplitRounding)
	case !(c.GCThreshold >= 0 && c.GCThreshold < 1):
		return fmt.Errorf("GC threshold %v", c.GCThreshold)
	case !(c.PerProcessMemoryFraction >= 0 && c.PerProcessMemoryFraction <= 1):
		return fmt.Errorf("memory fraction %v", c.PerProcessMemoryFraction)
	}
	for _, d := range c.RoundupDivisions {
		if d < 0 || (d > 1 && !isPow2(d)) {
			return fmt.Errorf("divisions %d", d)
		}
	}
	return nil
}

// FuzzParseConfig: no input panics, and every accepted config is in range,
// builds an allocator on a small and on the largest device, and serves a
// small and a huge request.
//
//	go test ./alloc/caching/ -run '^$' -fuzz FuzzParseConfig -fuzztime 20s
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"", "max_split_size_mb:128", "roundup_power2_divisions:[64:8,256:4,>:1]",
		"expandable_segments:True,garbage_collection_threshold:0.5", "[:,]"} {
		f.Add(s)
	}
	for _, s := range hostileConfigs {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConfig(s)
		if err != nil {
			return
		}
		if e := configInRange(c); e != nil {
			t.Fatalf("ParseConfig(%q): %v", s, e)
		}
		for _, capacity := range []int64{mem.GiB, mem.MaxCapacity} {
			a, err := New(mem.MustDevice(capacity, 0), c)
			if err != nil {
				t.Fatalf("New with %q: %v", s, err)
			}
			for _, size := range []int64{1, 3 * mem.MiB, capacity, math.MaxInt64} {
				if _, err := a.Alloc(size, 0); err != nil && !errors.Is(err, alloc.ErrOutOfMemory) {
					t.Fatalf("%q: Alloc(%d): %v", s, size, err)
				}
			}
		}
	})
}
