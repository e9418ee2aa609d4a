package kube

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// suffixes of Kubernetes resource quantities and their multipliers.
var suffixes = []struct {
	s string
	m float64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50}, {"Ei", 1 << 60},
	{"n", 1e-9}, {"u", 1e-6}, {"m", 1e-3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
}

// Bounds of ParseQuantity: see there.
const (
	maxQuantityBytes = 64
	maxExponent      = 30
)

// ParseQuantity parses a Kubernetes resource quantity ("96", "500m",
// "384Gi", "1.5", "2e3") and returns its value times scale, rounded up, as
// Kubernetes rounds requests (scale 1000 gives millicores).
//
// A quantity is at most maxQuantityBytes long and its decimal exponent at
// most maxExponent in magnitude: Kubernetes quantities never exceed 2^63-1
// nor have more than 3 decimal places, and a big.Rat of "1e1000000" takes
// 0.2 s to build.
func ParseQuantity(q string, scale float64) (int64, error) {
	s := strings.TrimSpace(q)
	if s == "" {
		return 0, fmt.Errorf("empty quantity")
	}
	if len(s) > maxQuantityBytes {
		return 0, fmt.Errorf("%s is not a quantity (longer than %d bytes)", untrusted.Quote(q), maxQuantityBytes)
	}
	mult := 1.0
	for _, sf := range suffixes {
		if strings.HasSuffix(s, sf.s) && !strings.ContainsAny(s[:len(s)-len(sf.s)], "KMGTPEkmunie") {
			s, mult = s[:len(s)-len(sf.s)], sf.m
			break
		}
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		if e, err := strconv.Atoi(s[i+1:]); err != nil || e > maxExponent || e < -maxExponent {
			return 0, fmt.Errorf("%s is not a quantity (want an exponent from -%d to %d)", untrusted.Quote(q), maxExponent, maxExponent)
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		return 0, fmt.Errorf("%s is not a non-negative quantity", untrusted.Quote(q))
	}
	f, _ := r.Float64()
	v := math.Ceil(f*mult*scale - 1e-9)
	if math.IsInf(v, 0) || v > math.MaxInt64/2 {
		return 0, fmt.Errorf("%s is too large", untrusted.Quote(q))
	}
	return int64(v), nil
}
