package cli

import (
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/sim"
)

// TestAdviseBands: advise gives each candidate that held the error band
// of its sustainable rate (the output throughput's errors), of its p99s
// and of its throughput, for the step model it ran under, the GPU (l40s:
// one the joint model was never fitted to) and the candidate's mean
// batch; the text has the rate's band column and says which figures back
// the bands.
func TestAdviseBands(t *testing.T) {
	skipAdviseSims(t)
	bands, err := calib.EmbeddedBands()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		model string
		basis string
	}{
		{sim.StepTimeJoint, "of the joint model on GPUs the fit never saw"},
		{sim.StepTimeRoofline, "of the roofline (never fitted)"},
	} {
		rep, _, _ := runAdviceJSON(t, adviseArgs("--profile", c.model, "--json")...)
		n := 0
		for _, r := range rep.Candidates {
			if !r.Held {
				continue
			}
			n++
			want, ok := bands.Band(calib.BandSetup{Model: c.model, GPU: "l40s-48g"}, calib.BandThroughput, r.BatchSizeMean)
			if !ok || r.SustainableBand == nil || r.BatchSizeMean <= 0 {
				t.Fatalf("%s: candidate %d (mean batch %v): band %v", c.model, r.Index, r.BatchSizeMean, r.SustainableBand)
			}
			if want = want.Around(r.SustainableRPS); *r.SustainableBand != want || !strings.Contains(want.Basis, c.basis) {
				t.Errorf("%s: candidate %d: rate band %+v, want %+v with %q", c.model, r.Index, *r.SustainableBand, want, c.basis)
			}
			if r.TTFTP99Band == nil || r.TPOTP99Band == nil || r.OutputTokensPerSBand == nil || !strings.Contains(r.TTFTP99Band.Basis, "applied to the p99") {
				t.Errorf("%s: candidate %d: bands %v %v %v", c.model, r.Index, r.TTFTP99Band, r.TPOTP99Band, r.OutputTokensPerSBand)
			}
		}
		if n == 0 || rep.Recommended == nil || rep.Recommended.SustainableBand == nil {
			t.Fatalf("%s: %d candidates held; recommendation %+v", c.model, n, rep.Recommended)
		}
	}
	code, text, errs := run(t, "", adviseArgs()...)
	if code != 0 || !strings.Contains(text, "req/s band") || !strings.Contains(text, "  req/s: ") || !strings.Contains(text, "held-out output throughput figures") {
		t.Fatalf("exit %d: %s\n%s", code, errs, text)
	}
}
