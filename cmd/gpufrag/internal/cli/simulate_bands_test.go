package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/sim"
)

// TestSimulateBands: every run's median TTFT, median TPOT and output
// throughput carry the error band of the step model that timed them (the
// joint model by default, the roofline, a profile file's stand-in), for
// the run's GPU and mean batch, in --json beside the figure and in the
// text report after the service table.
func TestSimulateBands(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.csv")
	rows := "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
	for range 40 {
		rows += "1000,100,1100,10\n300,200,500,1.5\n"
	}
	if err := os.WriteFile(tr, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "mine.yaml")
	code, out, errs := run(t, "", "simulate", "--gpu", "a100-80g", "--print-profile")
	if code != 0 {
		t.Fatalf("--print-profile: exit %d: %s", code, errs)
	}
	if err := os.WriteFile(prof, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	bands, err := calib.EmbeddedBands()
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--trace", tr, "--rate", "4", "--model", "llama-3-8b", "--gpu", "a100-80g", "--kv", "paged:16,contiguous-max"}
	for _, c := range []struct {
		profile  []string
		setup    calib.BandSetup
		basis    string
		fallback bool
	}{
		{nil, calib.BandSetup{Model: sim.StepTimeJoint, GPU: "a100-80g"}, "of the joint model", false},
		{[]string{"--profile", "roofline"}, calib.BandSetup{Model: sim.StepTimeRoofline, GPU: "a100-80g"}, "of the roofline (never fitted)", false},
		{[]string{"--profile", prof}, calib.BandSetup{Model: calib.BandProfileFile, Profile: prof, GPU: "a100-80g"}, "stand-in: no held-out figures judge the profile " + prof, true},
	} {
		o, _ := simulateJSON(t, append(base, c.profile...)...)
		for _, r := range o.Results {
			for _, f := range []struct {
				metric calib.BandMetric
				v      float64
				got    *sim.Band
			}{
				{calib.BandTTFT, r.TTFT.P50, r.TTFT.P50Band},
				{calib.BandTPOT, r.TPOT.P50, r.TPOT.P50Band},
				{calib.BandTPOT, r.ITL.P50, r.ITL.P50Band}, // the per-token figures' pool
				{calib.BandThroughput, r.OutputTokensPerS, r.OutputTokensPerSBand},
			} {
				want, ok := bands.Band(c.setup, f.metric, r.BatchSizeMean)
				if !ok || f.got == nil {
					t.Fatalf("%v %s %v: band %v, want one (%v)", c.profile, r.KV, f.metric, f.got, ok)
				}
				want = want.Around(f.v)
				if *f.got != want || f.got.Quantile != calib.BandQuantile || f.got.N < calib.BandMinFigures ||
					!strings.Contains(f.got.Basis, c.basis) || c.fallback && !f.got.Fallback || f.got.Lower <= 0 || f.got.Upper <= f.got.Lower {
					t.Errorf("%v %s %v: band %+v\nwant %+v, basis with %q", c.profile, r.KV, f.metric, *f.got, want, c.basis)
				}
			}
			// ITL's p99: measured p99s judge it, under the joint model alone.
			want, ok, err := calib.ITLP99Band(r.ITL.P99)
			switch {
			case err != nil || !ok:
				t.Fatalf("ITL p99 band: %v %v", ok, err)
			case c.setup.Model == sim.StepTimeJoint && (r.ITL.P99Band == nil || *r.ITL.P99Band != want):
				t.Errorf("%s: ITL p99 band %+v, want %+v", r.KV, r.ITL.P99Band, want)
			case c.setup.Model != sim.StepTimeJoint && r.ITL.P99Band != nil:
				t.Errorf("%v %s: an ITL p99 band %+v where no measured p99 judges the model", c.profile, r.KV, r.ITL.P99Band)
			case r.TTFT.P99Band != nil || r.TPOT.P99Band != nil:
				t.Errorf("%s: p99 bands on TTFT or TPOT, which no measured p99 judges", r.KV)
			}
		}
	}
	code, text, errs := run(t, "", append([]string{"simulate"}, base...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	_, bandText, ok := strings.Cut(text, "\nError bands: where the measured figure should fall, 80% of the time")
	if !ok {
		t.Fatalf("no bands in the text report:\n%s", text)
	}
	// A profile file's name is the user's: it prints through untrusted.Printable.
	hostile := filepath.Join(dir, "mi\x1b[31mne.yaml")
	if err := os.WriteFile(hostile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	code, htext, errs := run(t, "", append([]string{"simulate", "--profile", hostile}, base...)...)
	if code != 0 || strings.Contains(htext, "\x1b") || !strings.Contains(htext, `mi\x1b[31mne.yaml, so the band`) {
		t.Errorf("a profile named with an escape: exit %d, %s\n%q", code, errs, htext)
	}
	for _, want := range []string{"  kv / allocator", "  paged:16 / caching ", "  contiguous-max / caching ", "  TTFT: ", "  TPOT, ITL: ", "ITL p50", "ITL p99", "  ITL p99: ", "measured ITL p99s", "  tokens/s: ",
		"held-out TTFT figures"} {
		if !strings.Contains(bandText, want) {
			t.Errorf("the bands lack %q:\n%s", want, bandText)
		}
	}
}
