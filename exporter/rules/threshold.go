package rules

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Options control Derive. The zero value is not useful: start from
// DefaultOptions.
type Options struct {
	// Quantile q of fragmentation that is normal for an instance (0.5 < q < 1);
	// the threshold starts from quantile(1 − q) of health.
	Quantile float64
	// Margin is subtracted from that quantile so that ordinary dips to it do
	// not alert (0 ≤ Margin < 1).
	Margin float64
	// Min and Max clamp the threshold (0 ≤ Min ≤ Max ≤ 1).
	Min, Max float64
	// Window is how far back from each group's last point to look, in
	// seconds; 0 uses every point.
	Window float64
	// MinPoints is the fewest points in the window for a derived threshold;
	// groups with fewer get Fallback.
	MinPoints int
	// Fallback is the threshold of groups with too little history.
	Fallback float64
	// MaxInstances caps the (instance, model) groups, each of which makes
	// two rules (0: DefaultMaxInstances); more is ErrTooManyInstances.
	MaxInstances int
}

// DefaultMaxInstances is Options.MaxInstances' default. Each instance makes
// a recording rule and an alert, about 1 KB of YAML (49 MB for 50,000):
// 10,000 instances make 20,000 rules in one group, which Prometheus
// evaluates one after the other every evaluation interval, and a 10 MB
// rules file. Larger fleets are better split into several files (one
// history query per part of the fleet).
const DefaultMaxInstances = 10000

// ErrTooManyInstances: the history has more (instance, model) groups than
// Options.MaxInstances.
var ErrTooManyInstances = errors.New("rules: too many instances")

// DefaultOptions are the values `gpufrag rules` uses: the p95 of
// fragmentation over the last 7 days, a 0.05 margin, clamped to [0.1, 0.9],
// at least 60 points, falling back to the fleet convention 0.5.
func DefaultOptions() Options {
	return Options{Quantile: 0.95, Margin: 0.05, Min: 0.1, Max: 0.9, Window: 7 * 24 * 3600, MinPoints: 60, Fallback: 0.5,
		MaxInstances: DefaultMaxInstances}
}

// OptionError is an option out of range: Option names it as Options'
// documentation does ("quantile", "margin", "min", "max", "window", "min
// points", "fallback", "max instances"), so a command can name its flag.
type OptionError struct {
	Option string
	Msg    string // "0.3: must be above 0.5 and below 1 (...)"
}

func (e *OptionError) Error() string { return e.Option + " " + e.Msg }

// Validate reports the first option out of range, as an *OptionError.
func (o Options) Validate() error {
	bad := func(opt, format string, a ...any) error {
		return &OptionError{Option: opt, Msg: fmt.Sprintf(format, a...)}
	}
	switch {
	case !(o.Quantile > 0.5 && o.Quantile < 1):
		return bad("quantile", "%v: must be above 0.5 and below 1 (0.95 is the p95 of fragmentation)", o.Quantile)
	case !(o.Margin >= 0 && o.Margin < 1):
		return bad("margin", "%v: must be in [0, 1)", o.Margin)
	case !(o.Min >= 0 && o.Min <= 1):
		return bad("min", "%v: must be in [0, 1]", o.Min)
	case !(o.Max >= o.Min && o.Max <= 1):
		return bad("max", "%v: must be in [min, 1] (min is %v)", o.Max, o.Min)
	case !(o.Window >= 0) || math.IsInf(o.Window, 0):
		return bad("window", "%v: must be 0 or a positive number of seconds", o.Window)
	case o.MinPoints < 1:
		return bad("min points", "%d: must be at least 1", o.MinPoints)
	case !(o.Fallback >= 0 && o.Fallback <= 1):
		return bad("fallback", "%v: must be in [0, 1]", o.Fallback)
	case o.MaxInstances < 0:
		return bad("max instances", "%d: must be positive (0: the default %d)", o.MaxInstances, DefaultMaxInstances)
	}
	return nil
}

// Threshold is the derived alert threshold of one (instance, model).
type Threshold struct {
	Instance string `json:"instance"`
	Model    string `json:"model"`
	Series   int    `json:"series"` // series (GPUs, pools) pooled into the group
	// Points in the window, and the window's first and last timestamps.
	Points int     `json:"points"`
	From   float64 `json:"from"`
	To     float64 `json:"to"`
	// LowHealth is quantile(1 − q) of health over the window;
	// FragQuantile = 1 − LowHealth is the q-quantile of fragmentation.
	LowHealth    float64 `json:"low_health"`
	FragQuantile float64 `json:"fragmentation_quantile"`
	// Threshold is the alert fires below it: clamp(LowHealth − margin,
	// min, max) floored to 0.001, or the fallback.
	Threshold float64 `json:"threshold"`
	// Clamped is "min" or "max" when a clamp applied, "" otherwise.
	Clamped string `json:"clamped,omitempty"`
	// Fallback is true when the group had fewer than MinPoints points.
	Fallback bool `json:"fallback"`
}

// Derive computes one threshold per (instance, model) of h, sorted by
// instance then model (see the package doc for the derivation).
func Derive(h *History, o Options) ([]Threshold, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	type group struct {
		series int
		pts    []Point
	}
	groups := map[key]*group{}
	for _, s := range h.Series {
		if len(s.Points) == 0 {
			continue
		}
		g := groups[s.key()]
		if g == nil {
			g = &group{}
			groups[s.key()] = g
		}
		g.series++
		g.pts = append(g.pts, s.Points...)
	}
	if len(groups) == 0 {
		return nil, errors.New("rules: the history has no points")
	}
	limit := o.MaxInstances
	if limit == 0 {
		limit = DefaultMaxInstances
	}
	if len(groups) > limit {
		return nil, fmt.Errorf("%w: the history has %d (instance, model) pairs, over the limit of %d (--max-instances); "+
			"each makes two rules: split the fleet into several histories (a query per part, e.g. {instance=~\"a.*\"}) "+
			"and write one rules file each, or raise the limit to %d", ErrTooManyInstances, len(groups), limit, len(groups))
	}
	out := make([]Threshold, 0, len(groups))
	for k, g := range groups {
		last := math.Inf(-1)
		for _, p := range g.pts {
			last = max(last, p.Time)
		}
		from := math.Inf(-1)
		if o.Window > 0 {
			from = last - o.Window
		}
		var hs []float64
		first := last
		for _, p := range g.pts {
			if p.Time >= from {
				hs = append(hs, p.Health)
				first = min(first, p.Time)
			}
		}
		low := Quantile(1-o.Quantile, hs)
		t := Threshold{
			Instance: k.instance, Model: k.model, Series: g.series,
			Points: len(hs), From: first, To: last,
			LowHealth: low, FragQuantile: 1 - low,
		}
		switch v := low - o.Margin; {
		case len(hs) < o.MinPoints:
			t.Threshold, t.Fallback = o.Fallback, true
		case v < o.Min:
			t.Threshold, t.Clamped = floor3(o.Min), "min"
		case v > o.Max:
			t.Threshold, t.Clamped = floor3(o.Max), "max"
		default:
			t.Threshold = floor3(v)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Threshold) int {
		return cmp.Or(cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Model, b.Model))
	})
	return out, nil
}

// floor3 rounds v down to a multiple of 0.001, tolerating the binary error of
// values that are already such multiples (0.29*1000 = 289.99999999999994).
func floor3(v float64) float64 {
	return math.Floor(v*1000+1e-6) / 1000
}

// Quantile returns the φ-quantile of xs (0 ≤ φ ≤ 1) by linear interpolation
// between the order statistics at rank φ·(n−1), as Prometheus'
// quantile_over_time and numpy's default do. xs is not modified; NaN for an
// empty xs.
func Quantile(phi float64, xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := phi * float64(len(s)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(s)-1)
	w := rank - float64(lo)
	return s[lo]*(1-w) + s[hi]*w
}
