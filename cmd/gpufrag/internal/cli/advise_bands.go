package cli

import (
	"github.com/gpufrag/gpufrag/advise"
	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/sim"
)

// addAdviseBands gives rep's candidates the error bands of the step model
// they ran under (calib.Bands, as simulate's) and says which candidates
// the simulation cannot tell from the recommendation. A report that does
// not name its step model (a shard of an older gpufrag) gets none.
func addAdviseBands(rep *advise.Report) error {
	model := rep.Inputs.StepTime
	if model != sim.StepTimeJoint && model != sim.StepTimeRoofline {
		return nil
	}
	bands, err := calib.EmbeddedBands()
	if err != nil {
		return err
	}
	setup := calib.BandSetup{Model: model, GPU: rep.Inputs.GPU}
	metrics := map[string]calib.BandMetric{advise.BandTTFT: calib.BandTTFT, advise.BandTPOT: calib.BandTPOT, advise.BandThroughput: calib.BandThroughput}
	advise.AddBands(rep, func(metric string, meanBatch, v float64) *sim.Band {
		m, ok := metrics[metric]
		if !ok || meanBatch <= 0 {
			return nil
		}
		return bands.Around(setup, m, meanBatch, v)
	})
	return nil
}
