// The error bands of calib's held-out residuals. See doc.go, "Error bands".

package advise

import (
	"cmp"

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
	var itlErr error
	AddBands(rep, func(metric string, meanBatch, v float64) *sim.Band {
		if metric == BandITLP99 {
			// Measured under the joint model only.
			if model != sim.StepTimeJoint {
				return nil
			}
			b, ok, err := calib.ITLP99Band(v)
			if err != nil || !ok {
				itlErr = cmp.Or(itlErr, err)
				return nil
			}
			return &b
		}
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
	return itlErr
}
