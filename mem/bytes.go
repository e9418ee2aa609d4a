package mem

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// Units in bytes. Binary units (KiB, MiB, GiB, TiB, PiB) are powers of 1024;
// decimal units (KB, MB, GB, TB, PB) are powers of 1000, as on GPU
// datasheets. PiB is MaxCapacity, the largest device the model takes.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
	PiB int64 = 1 << 50
)

// Bytes is a byte count that prints with binary units and parses the units a
// user types (`80GiB`, `512MiB`, `1.5GiB`, `4096`, `20MB`). It implements
// pflag.Value (Set, String, Type) so it can be used as a command-line flag;
// Set rounds a decimal size down to whole bytes (ParseBytesDown), so that
// a size the tool prints rounded ("79.65GiB") can be typed back.
type Bytes int64

// ErrBadSize is returned (wrapped) by ParseBytes for text that is not a size.
var ErrBadSize = errors.New("bad size")

var units = []struct {
	suffix string
	mult   int64
}{
	// Longest suffixes first so "MiB" is not read as "B".
	{"pib", PiB}, {"tib", TiB}, {"gib", GiB}, {"mib", MiB}, {"kib", KiB},
	{"pb", 1e15}, {"tb", 1e12}, {"gb", 1e9}, {"mb", 1e6}, {"kb", 1e3},
	{"p", PiB}, {"t", TiB}, {"g", GiB}, {"m", MiB}, {"k", KiB},
	{"b", 1},
}

// ParseBytes parses a size such as "80GiB", "512 MiB", "1.5g" or "4096".
// A bare number is bytes; single-letter suffixes (k, m, g, t, p) are binary, as
// in PYTORCH_CUDA_ALLOC_CONF's *_mb keys and most shells' tools. The number
// is decimal, with an optional fraction and exponent ("1.5GiB", "2e3MB"),
// read exactly: the result must be a whole number of bytes, and at most
// math.MaxInt64 (2^63 − 1), else the error says which.
func ParseBytes(s string) (int64, error) { return parseBytes(s, false) }

// ParseBytesDown is ParseBytes for a size that may be rounded, as people
// copy it from a report ("79.65GiB"): a fraction of a byte is dropped
// (rounded down) instead of refused. A positive size below one byte is
// still an error, not 0.
func ParseBytesDown(s string) (int64, error) { return parseBytes(s, true) }

// parseBytes is ParseBytes; down drops a fraction of a byte.
func parseBytes(s string, down bool) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	shown := untrusted.Quote(s) // echoed at most 64 bytes long, however long s is
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
	neg := strings.HasPrefix(t, "-")
	num, den, err := parseDecimal(strings.TrimPrefix(t, "-"))
	switch {
	case errors.Is(err, errNotDecimal):
		return 0, fmt.Errorf("%w: %s (want a number with an optional unit such as 512MiB or 80GiB)", ErrBadSize, shown)
	case errors.Is(err, errBelowByte) && down:
		return 0, fmt.Errorf("%w: %s is less than a byte", ErrBadSize, shown)
	case errors.Is(err, errBelowByte):
		return 0, fmt.Errorf("%w: %s is not a whole number of bytes", ErrBadSize, shown)
	case err != nil:
		return 0, fmt.Errorf("%w: %s %w", ErrBadSize, shown, err)
	}
	switch num.Mul(num, big.NewInt(mult)); {
	case num.Sign() == 0:
		return 0, nil
	case neg:
		return 0, fmt.Errorf("%w: %s is negative", ErrBadSize, shown)
	}
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	switch {
	case r.Sign() != 0 && down && q.Sign() == 0:
		return 0, fmt.Errorf("%w: %s is less than a byte", ErrBadSize, shown)
	case r.Sign() != 0 && !down:
		return 0, fmt.Errorf("%w: %s is not a whole number of bytes", ErrBadSize, shown)
	case !q.IsInt64():
		return 0, fmt.Errorf("%w: %s is too large: sizes stop at %d bytes (2^63 − 1)", ErrBadSize, shown, int64(math.MaxInt64))
	}
	return q.Int64(), nil
}

// maxDigits bounds the significant digits parseDecimal reads, so hostile
// text costs no time or memory: a size has at most 19, and 40 leave room
// for fractions that multiply out to whole bytes ("0.0009765625KiB").
// Exponents are bounded by what they can mean: a number of more than 20
// integer digits is above 2^63 whatever the unit, and one of fewer than
// −80 below a byte whatever the unit (at most 10^15) and digits (10^40).
const maxDigits = 40

var errNotDecimal = errors.New("not a decimal number")

// errBelowByte is a positive number too small to be a byte in any unit.
var errBelowByte = errors.New("below a byte")

// parseDecimal reads t, digits with an optional '+', fraction and
// exponent, as the exact fraction num/den.
func parseDecimal(t string) (num, den *big.Int, err error) {
	t = strings.TrimPrefix(t, "+")
	mant, exp, hasExp := strings.Cut(t, "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return nil, nil, errNotDecimal
	}
	e := 0
	if hasExp {
		v, err := strconv.Atoi(exp)
		if err != nil {
			return nil, nil, fmt.Errorf("has an exponent, %s, that is not a small whole number", untrusted.Quote(exp))
		}
		e = v
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return new(big.Int), big.NewInt(1), nil
	}
	eff := e - len(frac) // the value is digits × 10^eff
	switch {
	case len(digits) > maxDigits:
		return nil, nil, fmt.Errorf("has more than %d significant digits", maxDigits)
	case len(digits)+eff > 20:
		return nil, nil, fmt.Errorf("is too large: sizes stop at %d bytes (2^63 − 1)", int64(math.MaxInt64))
	case eff < -2*maxDigits:
		return nil, nil, errBelowByte
	}
	num, _ = new(big.Int).SetString(digits, 10)
	ten := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(eff, -eff))), nil)
	if eff >= 0 {
		return num.Mul(num, ten), big.NewInt(1), nil
	}
	return num, ten, nil
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
	n, err := ParseBytesDown(s)
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
