package sim_test

import (
	"testing"

	"github.com/gpufrag/gpufrag/sim"
)

// The engine's CPU cost with the Profile step-time model against the
// roofline's (BenchmarkDefaultScenario, BenchmarkAzureConv): the same runs
// with Config.Profile set to the GPU's embedded profile. Compare with
//
//	go test -run '^$' -bench 'AzureConv|DefaultScenario' -benchmem -count 6 ./sim/
//
// (the issue allows at most +20% CPU per simulated request).

// withProfiles sets every config's Profile to its GPU's embedded one.
func withProfiles(b *testing.B, cs []sim.Config) {
	b.Helper()
	for i := range cs {
		p, err := sim.DefaultProfile(cs[i].GPU.Name, cs[i].Engine, "")
		if err != nil {
			b.Fatal(err)
		}
		cs[i].Profile = p
	}
}

// BenchmarkDefaultScenarioProfile is BenchmarkDefaultScenario under the
// embedded h100-80g profile.
func BenchmarkDefaultScenarioProfile(b *testing.B) { benchDefaultScenario(b, withProfiles) }

// BenchmarkAzureConvProfile is BenchmarkAzureConv under the embedded
// h100-80g profile; skipped when the trace is not there.
func BenchmarkAzureConvProfile(b *testing.B) { benchAzureConv(b, withProfiles) }
