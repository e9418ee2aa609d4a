// The error bands of calib's held-out residuals. See doc.go, "Error bands".

package advise

import (
	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/sim"
)

// AddCalibBands gives rep's candidates the error bands calib.Bands holds
// for the step model they ran under (as simulate's figures get theirs)
// and says which candidates the simulation cannot tell from the
// recommendation (AddBands). A report that does not name its step model
// (a shard of an older gpufrag) gets none.
func AddCalibBands(rep *Report) error {
	model := rep.Inputs.StepTime
	if model != sim.StepTimeJoint && model != sim.StepTimeRoofline {
		return nil
	}
	bands, err := calib.EmbeddedBands()
	if err != nil {
		return err
	}
	setup := calib.BandSetup{Model: model, GPU: rep.Inputs.GPU}
	metrics := map[string]calib.BandMetric{BandTTFT: calib.BandTTFT, BandTPOT: calib.BandTPOT, BandThroughput: calib.BandThroughput}
	AddBands(rep, func(metric string, meanBatch, v float64) *sim.Band {
		m, ok := metrics[metric]
		if !ok || meanBatch <= 0 || v <= 0 {
			return nil
		}
		b, ok := bands.Band(setup, m, meanBatch)
		if !ok {
			return nil
		}
		b = b.Around(v)
		return &b
	})
	return nil
}
