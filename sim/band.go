// Error bands: how far a simulated latency or throughput may be from what
// an engine measures, as the step model's held-out errors say. sim only
// carries them (calib derives them from calib/residuals.yaml); a result
// holds none unless a command asked for them.

package sim

import (
	"slices"

	"github.com/gpufrag/gpufrag/internal/stats"
)

// Band is the range a measured figure is expected to fall in, given the
// simulated one and the out-of-sample errors of the step model that timed
// it. An error is (simulated − measured) ÷ measured, so with errors
// between RelLow and RelHigh for Quantile of the held-out figures, the
// measured value lies between simulated ÷ (1 + RelHigh) and simulated ÷
// (1 + RelLow) about as often.
type Band struct {
	// Lower and Upper bound the measured value, in the figure's unit.
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
	// RelLower and RelUpper are the bounds as a share of the simulated
	// value, minus 1 (−0.2 and +0.5: 20% below to 50% above).
	RelLower float64 `json:"rel_lower"`
	RelUpper float64 `json:"rel_upper"`
	// Quantile is the central share of held-out errors the band spans
	// (0.8: from the 10th to the 90th percentile).
	Quantile float64 `json:"quantile"`
	// N is how many held-out figures the band rests on; Basis says which
	// (step model, GPUs, load) and, with Fallback, why fewer-matched ones
	// were pooled.
	N        int    `json:"n"`
	Basis    string `json:"basis"`
	Fallback bool   `json:"fallback"`
	// ErrLow and ErrHigh are the held-out errors at the band's edges.
	ErrLow  float64 `json:"err_low"`
	ErrHigh float64 `json:"err_high"`
}

// Around returns the band for the simulated value v: b's errors, its
// bounds computed for v. An error of −1 or less (a simulated zero) leaves
// the upper bound unbounded, which Upper writes as 0 and RelUpper as −1:
// read it as "no upper bound".
func (b Band) Around(v float64) Band {
	b.Lower, b.Upper, b.RelLower, b.RelUpper = 0, 0, -1, -1
	if b.ErrHigh > -1 {
		b.RelLower = 1/(1+b.ErrHigh) - 1
		b.Lower = v / (1 + b.ErrHigh)
	}
	if b.ErrLow > -1 {
		b.RelUpper = 1/(1+b.ErrLow) - 1
		b.Upper = v / (1 + b.ErrLow)
	}
	return b
}

// Contains reports whether x lies in b (an unbounded upper end holds any
// x above Lower).
func (b Band) Contains(x float64) bool {
	if x < b.Lower {
		return false
	}
	return b.ErrLow <= -1 || x <= b.Upper
}

// ArrivalDraws is how a run's figures move over draws of a benchmark run's
// arrivals (gpufrag simulate --arrival-draws): a client that drew its
// Poisson (or gamma) arrivals and saved no send times ran one draw of
// many, and near a queue's knee another draw moves a median TTFT by a
// factor of several. Each draw replays the same requests and setup with
// its arrivals drawn from one seed: FirstSeed, FirstSeed+1, ... (the
// first is the run's own, or --arrival-seed's).
type ArrivalDraws struct {
	Draws            int    `json:"draws"`
	FirstSeed        uint64 `json:"first_seed"`
	TTFTP50          Spread `json:"ttft_p50_s"`
	TPOTP50          Spread `json:"tpot_p50_s"`
	ITLP50           Spread `json:"itl_p50_s"`
	OutputTokensPerS Spread `json:"output_tokens_per_s"`
}

// Spread is a figure over draws: the smallest, the median (NumPy's: the
// mean of the two middle values of an even count) and the largest.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// SpreadOf returns the spread of xs (at least one value; xs is not
// changed).
func SpreadOf(xs []float64) Spread {
	v := slices.Clone(xs)
	slices.Sort(v)
	return Spread{Min: v[0], Median: stats.Median(v), Max: v[len(v)-1]}
}
