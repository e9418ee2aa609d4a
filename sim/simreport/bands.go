package simreport

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/sim"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// simulate's error bands (issue 24, item 6): each run's median TTFT,
// median TPOT and output throughput get the band calib.Bands gives for the
// step model that timed them, the GPU and the run's mean batch, and its
// ITL p99 the band of measured p99s (calib.ITLP99Band, joint model only); --json
// carries them beside the figures (ttft_s.p50_band...), the text report
// prints them after the service table.

// bandSetup says which step model timed o's runs (Timing absent: the
// roofline, as before profiles existed).
func bandSetup(o *scenario.Report) calib.BandSetup {
	s := calib.BandSetup{Model: sim.StepTimeRoofline, GPU: o.GPU}
	if t := o.Timing; t != nil && t.Profile != nil {
		s.Model = sim.StepTimeJoint
		if t.Profile.From != scenario.ProfileFromEmbedded {
			s.Model, s.Profile = calib.BandProfileFile, t.Profile.From
		}
	}
	return s
}

// AddBands sets the error bands of o's results (calib.EmbeddedBands, for
// the step model that timed them). A run with no steps, or a figure that
// is 0 (no request got one), gets none.
func AddBands(o *scenario.Report) error {
	bands, err := calib.EmbeddedBands()
	if err != nil {
		return err
	}
	setup := bandSetup(o)
	for i := range o.Results {
		r := &o.Results[i]
		if r.Steps == 0 {
			continue
		}
		r.TTFT.P50Band = bands.Around(setup, calib.BandTTFT, r.BatchSizeMean, r.TTFT.P50)
		r.TPOT.P50Band = bands.Around(setup, calib.BandTPOT, r.BatchSizeMean, r.TPOT.P50)
		// The per-token figures' pool (TPOT and ITL medians alike,
		// calib.BandTPOT) gives ITL's band too.
		r.ITL.P50Band = bands.Around(setup, calib.BandTPOT, r.BatchSizeMean, r.ITL.P50)
		r.OutputTokensPerSBand = bands.Around(setup, calib.BandThroughput, r.BatchSizeMean, r.OutputTokensPerS)
		// ITL's p99 has measured p99s to judge it, under the joint model.
		if setup.Model == sim.StepTimeJoint {
			b, ok, err := calib.ITLP99Band(r.ITL.P99)
			if err != nil {
				return err
			}
			if ok {
				r.ITL.P99Band = &b
			}
		}
	}
	return nil
}

// bandRange writes a band's bounds with f, "≥ lower" when it has no upper
// bound, "-" for none.
func bandRange(b *sim.Band, f func(float64) string) string {
	switch {
	case b == nil:
		return "-"
	case b.ErrLow <= -1:
		return "≥ " + f(b.Lower)
	}
	return f(b.Lower) + "–" + f(b.Upper)
}

// bandRel writes a band's bounds as shares of the simulated value.
func bandRel(b *sim.Band) string {
	if b.ErrLow <= -1 {
		return fmt.Sprintf("%+.0f%% or more", 100*b.RelLower)
	}
	return fmt.Sprintf("%+.0f%% to %+.0f%%", 100*b.RelLower, 100*b.RelUpper)
}

// indentedWidth is the Width of a table printed indented two spaces in a
// report width columns wide (0: no limit).
func indentedWidth(width int) int {
	if width <= 0 {
		return 0
	}
	return max(width-2, 1)
}

// writeBands prints the bands of o's results, if any: a table of each
// run's ranges, then per metric how far they reach and which held-out
// figures they come from (per group of runs when the runs' loads draw on
// different figures).
func writeBands(sb *strings.Builder, o *scenario.Report, width int) {
	q := 0.0
	for _, r := range o.Results {
		for _, b := range []*sim.Band{r.TTFT.P50Band, r.TPOT.P50Band, r.OutputTokensPerSBand} {
			if b != nil {
				q = b.Quantile
			}
		}
	}
	if q == 0 {
		return
	}
	tokens := func(x float64) string { return fmt.Sprintf("%.0f", x) }
	// ITL p99's column only where a run has its band (the joint model).
	p99 := slices.ContainsFunc(o.Results, func(r sim.Result) bool { return r.ITL.P99Band != nil })
	t := human.Table{Head: []string{"kv / allocator", "TTFT p50", "TPOT p50", "ITL p50", "tokens/s"}}
	if p99 {
		t.Head = slices.Insert(t.Head, 4, "ITL p99")
	}
	for _, r := range o.Results {
		row := []string{runName(r), bandRange(r.TTFT.P50Band, human.Seconds), bandRange(r.TPOT.P50Band, human.Seconds),
			bandRange(r.ITL.P50Band, human.Seconds), bandRange(r.OutputTokensPerSBand, tokens)}
		if p99 {
			row = slices.Insert(row, 4, bandRange(r.ITL.P99Band, human.Seconds))
		}
		t.Rows = append(t.Rows, row)
	}
	fmt.Fprintf(sb, "\nError bands: where the measured figure should fall, %.0f%% of the time, by the\nstep model's errors on figures it was not fitted to (docs/calibrate.md, \"Error\nbands\"):\n", 100*q)
	t.Width = indentedWidth(width)
	var tb strings.Builder
	t.Write(&tb)
	for _, line := range strings.SplitAfter(tb.String(), "\n") {
		if line != "" {
			sb.WriteString("  " + line)
		}
	}
	metrics := []struct {
		name string
		band func(sim.Result) *sim.Band
	}{
		{"TTFT", func(r sim.Result) *sim.Band { return r.TTFT.P50Band }},
		// ITL's band is TPOT's relative range (one pool of per-token figures).
		{"TPOT, ITL", func(r sim.Result) *sim.Band { return r.TPOT.P50Band }},
		{"ITL p99", func(r sim.Result) *sim.Band { return r.ITL.P99Band }},
		{"tokens/s", func(r sim.Result) *sim.Band { return r.OutputTokensPerSBand }},
	}
	for _, m := range metrics {
		// The runs that share a basis (and so the same relative band).
		var bases []string
		runs := map[string][]string{}
		rel := map[string]string{}
		for _, r := range o.Results {
			b := m.band(r)
			if b == nil {
				continue
			}
			if _, ok := runs[b.Basis]; !ok {
				bases = append(bases, b.Basis)
				rel[b.Basis] = bandRel(b)
			}
			runs[b.Basis] = append(runs[b.Basis], runName(r))
		}
		for _, basis := range bases {
			who := m.name
			if len(bases) > 1 {
				who += " (" + strings.Join(runs[basis], ", ") + ")"
			}
			sb.WriteString(human.WrapHang(fmt.Sprintf("  %s: %s of the simulated value, from %s", who, rel[basis], untrusted.Printable(basis)), 80, 4) + "\n")
		}
	}
}
