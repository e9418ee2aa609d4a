package mem

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Units in bytes. Binary units (KiB, MiB, GiB, TiB) are powers of 1024; decimal
// units (KB, MB, GB, TB) are powers of 1000, as on GPU datasheets.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
)

// Bytes is a byte count that prints with binary units and parses the units a
// user types (`80GiB`, `512MiB`, `1.5GiB`, `4096`, `20MB`). It implements
// pflag.Value (Set, String, Type) so it can be used as a command-line flag.
type Bytes int64

// ErrBadSize is returned (wrapped) by ParseBytes for text that is not a size.
var ErrBadSize = errors.New("mem: bad size")

var units = []struct {
	suffix string
	mult   int64
}{
	// Longest suffixes first so "MiB" is not read as "B".
	{"tib", TiB}, {"gib", GiB}, {"mib", MiB}, {"kib", KiB},
	{"tb", 1e12}, {"gb", 1e9}, {"mb", 1e6}, {"kb", 1e3},
	{"t", TiB}, {"g", GiB}, {"m", MiB}, {"k", KiB},
	{"b", 1},
}

// ParseBytes parses a size such as "80GiB", "512 MiB", "1.5g" or "4096".
// A bare number is bytes; single-letter suffixes (k, m, g, t) are binary, as
// in PYTORCH_CUDA_ALLOC_CONF's *_mb keys and most shells' tools. Fractions
// are allowed when the result is a whole number of bytes.
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("%w: empty", ErrBadSize)
	}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%w: %q is negative", ErrBadSize, s)
		}
		if n != 0 && mult > math.MaxInt64/n {
			return 0, fmt.Errorf("%w: %q overflows 64 bits", ErrBadSize, s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: %q (want a number with an optional unit such as 512MiB or 80GiB)", ErrBadSize, s)
	}
	if f < 0 {
		return 0, fmt.Errorf("%w: %q is negative", ErrBadSize, s)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("%w: %q overflows 64 bits", ErrBadSize, s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("%w: %q is not a whole number of bytes", ErrBadSize, s)
	}
	return int64(v), nil
}

// FormatBytes prints n for people with the largest binary unit that keeps
// it readable: exact values print without decimals ("20MiB"), others with
// two, rounded ("1.50GiB", and "1.00MiB" for 1 MiB + 512 B). Use
// FormatBytesExact where no byte may be hidden.
func FormatBytes(n int64) string {
	neg := ""
	u := n
	if n < 0 {
		neg, u = "-", -n
	}
	for _, x := range []struct {
		name string
		mult int64
	}{{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}} {
		if u >= x.mult {
			if u%x.mult == 0 {
				return neg + strconv.FormatInt(u/x.mult, 10) + x.name
			}
			return neg + strconv.FormatFloat(float64(u)/float64(x.mult), 'f', 2, 64) + x.name
		}
	}
	return neg + strconv.FormatInt(u, 10) + "B"
}

// FormatBytesExact prints n so that it parses back to exactly n: in the
// largest unit where at most two decimals are exact ("20MiB", "18.50MiB",
// "1024.50KiB"), else in bytes ("14680065B"). Layouts, specs and golden files use it.
func FormatBytesExact(n int64) string {
	neg := ""
	u := n
	if n < 0 {
		neg, u = "-", -n
	}
	us := []struct {
		name string
		mult int64
	}{{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}}
	for _, x := range us {
		switch {
		case u < x.mult:
		case u%x.mult == 0:
			return neg + strconv.FormatInt(u/x.mult, 10) + x.name
		case u <= math.MaxInt64/100 && (u*100)%x.mult == 0:
			return neg + strconv.FormatFloat(float64(u)/float64(x.mult), 'f', 2, 64) + x.name
		}
	}
	return neg + strconv.FormatInt(u, 10) + "B"
}

// String implements fmt.Stringer and pflag.Value.
func (b Bytes) String() string { return FormatBytes(int64(b)) }

// Set implements pflag.Value.
func (b *Bytes) Set(s string) error {
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*b = Bytes(n)
	return nil
}

// Type implements pflag.Value.
func (b *Bytes) Type() string { return "size" }

// RoundUp rounds n up to a multiple of unit (unit > 0).
func RoundUp(n, unit int64) int64 {
	if r := n % unit; r != 0 {
		return n + unit - r
	}
	return n
}

// RoundUpSat is RoundUp for n ≥ 0 that saturates instead of overflowing: a
// size within unit of math.MaxInt64 rounds down to the largest multiple of
// unit (an allocator fails such a request anyway, with its real size in the
// message).
func RoundUpSat(n, unit int64) int64 {
	if n > math.MaxInt64-(unit-1) {
		return math.MaxInt64 - math.MaxInt64%unit
	}
	return RoundUp(n, unit)
}
