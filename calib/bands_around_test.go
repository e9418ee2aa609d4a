package calib

import (
	"testing"

	"github.com/gpufrag/gpufrag/sim"
)

// TestBandsAround: a positive value gets Band's band placed around it; 0
// and a GPU without figures get none.
func TestBandsAround(t *testing.T) {
	b, err := EmbeddedBands()
	if err != nil {
		t.Fatal(err)
	}
	s := BandSetup{Model: sim.StepTimeJoint, GPU: "a100-80g"}
	want, ok := b.Band(s, BandTTFT, 8)
	if !ok {
		t.Fatal("no TTFT band for the joint model on a100-80g")
	}
	want = want.Around(0.2)
	if got := b.Around(s, BandTTFT, 8, 0.2); got == nil || *got != want {
		t.Errorf("Around = %+v, want %+v", got, want)
	}
	if got := b.Around(s, BandTTFT, 8, 0); got != nil {
		t.Errorf("Around of 0 = %+v, want nil", got)
	}
}
