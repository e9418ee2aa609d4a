package report

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// Unit formats axis ticks: UnitNone, UnitBytes (KiB/MiB/GiB binary),
// UnitSeconds, UnitShare (0..1 shown as %), UnitRatio (0..1 shown as is).
type Unit int

// Units for LineChart.XUnit and LineChart.YUnit.
const (
	// UnitNone: plain numbers; 10 000 and above get SI suffixes (k, M, G, T).
	UnitNone Unit = iota
	// UnitBytes: binary prefixes, B, KiB, MiB, GiB, TiB, PiB.
	UnitBytes
	// UnitSeconds: ns, µs, ms, s, min or h, chosen from the axis range.
	UnitSeconds
	// UnitShare: a fraction (0..1) shown as a percentage.
	UnitShare
	// UnitRatio: a fraction (0..1) shown as is, 0.25, for a metric that
	// the text reports print as a ratio (health, fragmentation rate).
	UnitRatio
)

func (u Unit) valid() bool { return u >= UnitNone && u <= UnitRatio }

// fromZero reports whether a Y axis in u starts at 0 for non-negative data.
func (u Unit) fromZero() bool { return u == UnitBytes || u == UnitShare || u == UnitRatio }

// String returns the unit's name.
func (u Unit) String() string {
	switch u {
	case UnitNone:
		return "none"
	case UnitBytes:
		return "bytes"
	case UnitSeconds:
		return "seconds"
	case UnitShare:
		return "share"
	case UnitRatio:
		return "ratio"
	}
	return "Unit(" + strconv.Itoa(int(u)) + ")"
}

// scale returns the divisor and suffix used for values whose largest
// magnitude is maxAbs.
func (u Unit) scale(maxAbs float64) (div float64, suffix string) {
	switch u {
	case UnitBytes:
		names := []string{" B", " KiB", " MiB", " GiB", " TiB", " PiB", " EiB"}
		div = 1
		i := 0
		for maxAbs >= div*1024 && i < len(names)-1 {
			div *= 1024
			i++
		}
		return div, names[i]
	case UnitSeconds:
		switch {
		case maxAbs == 0:
			return 1, " s"
		case maxAbs < 1e-6:
			return 1e-9, " ns"
		case maxAbs < 1e-3:
			return 1e-6, " µs"
		case maxAbs < 1:
			return 1e-3, " ms"
		case maxAbs < 120:
			return 1, " s"
		case maxAbs < 7200:
			return 60, " min"
		default:
			return 3600, " h"
		}
	case UnitShare:
		return 0.01, "%"
	case UnitRatio:
		return 1, ""
	default:
		names := []string{"", "k", "M", "G", "T", "P", "E"}
		if maxAbs < 1e4 {
			return 1, ""
		}
		div = 1
		i := 0
		for maxAbs >= div*1000 && i < len(names)-1 {
			div *= 1000
			i++
		}
		return div, names[i]
	}
}

// Format formats v in unit u the way axis ticks show it, e.g.
// UnitBytes.Format(3<<30) == "3 GiB" and UnitShare.Format(0.25) == "25%".
// It is handy for table cells next to a chart.
func (u Unit) Format(v float64) string {
	if !finite(v) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	div, suffix := u.scale(math.Abs(v))
	x := v / div
	s := strconv.FormatFloat(x, 'f', 2, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s + suffix
}

// unitTicker places about n ticks at round steps (1, 2, 2.5 or 5 times a
// power of ten) of the scaled unit, so steps are round in GiB, ms, % ...,
// and labels them with the unit's suffix.
type unitTicker struct {
	u Unit
	n int
}

func (t unitTicker) Ticks(lo, hi float64) []plot.Tick {
	div, suffix := t.u.scale(math.Max(math.Abs(lo), math.Abs(hi)))
	a, b := lo/div, hi/div
	if !(b > a) || !finite(a) || !finite(b) {
		return []plot.Tick{{Value: lo, Label: t.u.Format(lo)}}
	}
	step := niceStep((b - a) / float64(max(t.n, 2)))
	dec := decimals(step)
	k0 := math.Ceil(a/step - 1e-9)
	var ticks []plot.Tick
	for k := k0; ; k++ {
		v := k * step
		if v > b+step*1e-9 || len(ticks) > 100 {
			break
		}
		l := strconv.FormatFloat(v, 'f', dec, 64)
		if strings.Trim(l, "-0.") == "" {
			l = strings.TrimPrefix(l, "-")
		}
		ticks = append(ticks, plot.Tick{Value: v * div, Label: l + suffix})
		// Unlabelled minor tick halfway to the next one.
		if m := v + step/2; m <= b {
			ticks = append(ticks, plot.Tick{Value: m * div})
		}
	}
	if m := k0*step - step/2; m >= a {
		ticks = append(ticks, plot.Tick{Value: m * div})
	}
	return ticks
}

// niceStep rounds raw to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	f := raw / mag
	switch {
	case f < 1.5:
		f = 1
	case f < 2.25:
		f = 2
	case f < 3.5:
		f = 2.5
	case f < 7.5:
		f = 5
	default:
		f = 10
	}
	return f * mag
}

// decimals is the number of decimals needed to print multiples of step.
func decimals(step float64) int {
	for d := 0; d < 12; d++ {
		x := step * math.Pow(10, float64(d))
		if math.Abs(x-math.Round(x)) <= 1e-6*x {
			return d
		}
	}
	return 12
}
