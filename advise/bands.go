// Error bands on the candidates' figures (issue 24, item 6), which the CLI
// adds after the sweep from calib's held-out residuals, and whether the
// best candidates are within each other's band. See doc.go for the
// overview.

package advise

import (
	"fmt"

	"github.com/gpufrag/gpufrag/sim"
)

// The figures a BandFunc is asked about.
const (
	BandTTFT       = "ttft"
	BandTPOT       = "tpot"
	BandThroughput = "output_throughput"
	// BandITLP99 asks for the band of an ITL p99 itself: measured p99s
	// judge it (calib.ITLP99Band), not medians.
	BandITLP99 = "itl_p99"
)

// BandFunc returns the error band of a simulated value v of metric
// (BandTTFT, BandTPOT, BandThroughput, BandITLP99) at a run's mean batch,
// nil when it has none.
type BandFunc func(metric string, meanBatch, v float64) *sim.Band

// p99Note is added to the basis of a p99's band: the residuals judge
// medians.
const p99Note = "; judged on medians, applied to the p99"

// AddBands sets every candidate's bands (and the recommendation's and the
// runner-up's): TTFT and TPOT p99 get the band of the median's errors, ITL
// p99 the band of measured ITL p99s (BandITLP99), output throughput its own, and the sustainable rate the throughput's (a
// step model x% fast overstates the rate a GPU sustains by about x%).
// Then it says which candidates the simulation cannot tell from the
// recommended one (Report.WithinBand, BandNote).
func AddBands(r *Report, band BandFunc) {
	for i := range r.Candidates {
		c := &r.Candidates[i]
		p99 := func(metric string, v float64) *sim.Band {
			b := band(metric, c.BatchSizeMean, v)
			if b != nil {
				b.Basis += p99Note
			}
			return b
		}
		c.TTFTP99Band = p99(BandTTFT, c.TTFTP99)
		c.TPOTP99Band = p99(BandTPOT, c.TPOTP99)
		c.ITLP99Band = band(BandITLP99, c.BatchSizeMean, c.ITLP99)
		c.OutputTokensPerSBand = band(BandThroughput, c.BatchSizeMean, c.OutputTokensPerS)
		if c.Held {
			c.SustainableBand = band(BandThroughput, c.BatchSizeMean, c.SustainableRPS)
		}
	}
	for _, p := range []*Result{r.Recommended, r.RunnerUp} {
		if p != nil {
			c := r.Candidates[p.Index]
			p.TTFTP99Band, p.TPOTP99Band, p.ITLP99Band, p.OutputTokensPerSBand, p.SustainableBand = c.TTFTP99Band, c.TPOTP99Band, c.ITLP99Band, c.OutputTokensPerSBand, c.SustainableBand
		}
	}
	r.WithinBand, r.BandNote = withinBand(r)
}

// rankedFigure is what the ranking compares between two candidates of the
// recommendation's class, with its band: the sustainable rate for
// candidates that meet the SLO; for a best effort, how near the SLO the
// candidate came (its p99s over their objectives, the larger), the bands
// of the p99s carried over.
func rankedFigure(c *Result, slo SLO, meets bool) (v float64, b *sim.Band, ok bool) {
	if meets {
		if !c.Eligible || c.SustainableBand == nil {
			return 0, nil, false
		}
		return c.SustainableRPS, c.SustainableBand, true
	}
	if c.Eligible || !latencyBinding(c.Binding) {
		return 0, nil, false
	}
	// An objective with no band (ITL p99 under the roofline, which no
	// measured p99 judges) counts at its value; the binding one must have
	// a band.
	var band sim.Band
	for i, ob := range slo.objectives() {
		b := ob.band(c)
		if !(ob.goal > 0) || b == nil && ob.field == c.Binding {
			return 0, nil, false
		}
		if b == nil {
			v := ob.value(&c.Outcome)
			b = &sim.Band{Lower: v, Upper: v}
		}
		if i == 0 {
			band = sim.Band{Lower: b.Lower / ob.goal, Upper: b.Upper / ob.goal, ErrLow: b.ErrLow}
			continue
		}
		band.Lower, band.Upper, band.ErrLow = max(band.Lower, b.Lower/ob.goal), max(band.Upper, b.Upper/ob.goal), min(band.ErrLow, b.ErrLow)
	}
	near, _ := slo.nearness(&c.Outcome)
	return near, &band, true
}

// withinBand lists, best ranked first, the candidates whose ranked figure
// lies in the recommendation's band while the recommendation's lies in
// theirs, and says so.
func withinBand(r *Report) ([]int, string) {
	best := r.Recommended
	if best == nil {
		return nil, ""
	}
	slo := r.Inputs.SLO
	bv, bb, ok := rankedFigure(&r.Candidates[best.Index], slo, best.MeetsSLO)
	if !ok {
		return nil, ""
	}
	var idx []int
	for rank := 2; rank <= len(r.Candidates); rank++ {
		for i := range r.Candidates {
			c := &r.Candidates[i]
			if c.Rank != rank {
				continue
			}
			if v, b, ok := rankedFigure(c, slo, best.MeetsSLO); ok && bb.Contains(v) && b.Contains(bv) {
				idx = append(idx, i)
			}
		}
	}
	if len(idx) == 0 {
		return nil, ""
	}
	what := "sustainable rates"
	if !best.MeetsSLO {
		what = "p99s at the lowest rate tried"
	}
	first := &r.Candidates[idx[0]]
	note := fmt.Sprintf("%s and %s (rank %d) are within each other's band (%s): the simulation cannot rank them; measure them on the engine before choosing",
		best.Settings, first.Settings, first.Rank, what)
	if more := len(idx) - 1; more > 0 {
		are := "candidates are"
		if more == 1 {
			are = "candidate is"
		}
		note += fmt.Sprintf("; %d more %s within the recommendation's band too (within_band in --json)", more, are)
	}
	return idx, note
}
