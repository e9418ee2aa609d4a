package calib

import "github.com/gpufrag/gpufrag/sim"

// Around is the band of metric m, for setup s and a run's mean batch,
// placed around the simulated value v (Band, then sim.Band.Around); nil
// when v is 0 or less (no request got the figure) or there is no band.
// simulate and advise give their figures bands through it.
func (b *Bands) Around(s BandSetup, m BandMetric, meanBatch, v float64) *sim.Band {
	if v <= 0 {
		return nil
	}
	band, ok := b.Band(s, m, meanBatch)
	if !ok {
		return nil
	}
	band = band.Around(v)
	return &band
}
