package advise

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
)

// relBand is a BandFunc of fixed errors ±e.
func relBand(e float64) BandFunc {
	return func(metric string, meanBatch, v float64) *sim.Band {
		b := sim.Band{Quantile: 0.8, N: 30, Basis: "30 figures of " + metric, ErrLow: -e, ErrHigh: e}.Around(v)
		return &b
	}
}

// TestAddBands: every candidate that held gets a band on its sustainable
// rate and its figures; the candidates whose rate and the recommendation's
// are each within the other's band are listed, best ranked first, and
// the text says the simulation cannot rank them. The expected set is
// computed here from the rates: r within [b/(1+e), b/(1−e)] and b within
// r's.
func TestAddBands(t *testing.T) {
	in := fakeInputs(t)
	results := runFake(t, in, nil, 1)
	for _, e := range []float64{0.01, 0.2, 0.6} {
		rep, err := NewReport(in, results)
		if err != nil {
			t.Fatal(err)
		}
		AddBands(rep, relBand(e))
		best := rep.Recommended
		if best == nil || !best.MeetsSLO {
			t.Fatal("the fake sweep has no recommendation")
		}
		in := func(x, v float64) bool { return x >= v/(1+e)*(1-1e-12) && x <= v/(1-e)*(1+1e-12) }
		var want []int
		byRank := slices.Clone(rep.Candidates)
		slices.SortFunc(byRank, func(a, b Result) int { return a.Rank - b.Rank })
		for _, c := range byRank {
			if c.Index != best.Index && c.Eligible && in(c.SustainableRPS, best.SustainableRPS) && in(best.SustainableRPS, c.SustainableRPS) {
				want = append(want, c.Index)
			}
		}
		t.Logf("±%.0f%%: %d of %d candidates within the recommendation's band", 100*e, len(want), len(rep.Candidates))
		if !slices.Equal(rep.WithinBand, want) {
			t.Errorf("±%.0f%%: within band %v, want %v", 100*e, rep.WithinBand, want)
		}
		for _, c := range rep.Candidates {
			if c.Held != (c.SustainableBand != nil) || c.TTFTP99Band == nil || !strings.HasSuffix(c.TTFTP99Band.Basis, p99Note) ||
				c.OutputTokensPerSBand == nil || strings.HasSuffix(c.OutputTokensPerSBand.Basis, p99Note) {
				t.Fatalf("candidate %d: bands %+v %+v %+v", c.Index, c.SustainableBand, c.TTFTP99Band, c.OutputTokensPerSBand)
			}
		}
		if best.SustainableBand == nil || *best.SustainableBand != *rep.Candidates[best.Index].SustainableBand {
			t.Errorf("the recommendation's band %+v is not its candidate's", best.SustainableBand)
		}
		var out bytes.Buffer
		if err := WriteText(&out, rep); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		if !strings.Contains(text, "req/s band") || !strings.Contains(text, "  TTFT p99: -") {
			t.Errorf("±%.0f%%: no bands in the text:\n%s", 100*e, text)
		}
		if got := strings.Contains(text, "are within each other's band (sustainable rates): the simulation cannot rank them"); got != (len(want) > 0) || got != (rep.BandNote != "") {
			t.Errorf("±%.0f%%: %d within band, note %q, text says so: %v", 100*e, len(want), rep.BandNote, got)
		}
		more := ""
		switch n := len(want) - 1; {
		case n == 1:
			more = "; 1 more candidate is within the recommendation's band too (within_band in --json)"
		case n > 1:
			more = fmt.Sprintf("; %d more candidates are within the recommendation's band too (within_band in --json)", n)
		}
		if more != "" && !strings.HasSuffix(rep.BandNote, more) || more == "" && strings.Contains(rep.BandNote, "more candidate") {
			t.Errorf("±%.0f%%: note %q, want it to end %q", 100*e, rep.BandNote, more)
		}
	}
	// Without bands (a report of an older shard), the table has no band column.
	rep, err := NewReport(in, results)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteText(&out, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "band") {
		t.Errorf("no bands added, yet:\n%s", out.String())
	}
}

// TestWithinBandBestEffort: with nothing meeting the SLO, the best effort
// and the next candidates are compared by how near the SLO their p99s
// came, within the p99s' bands.
func TestWithinBandBestEffort(t *testing.T) {
	slo := SLO{TTFTP99: 1, TPOTP99: 0.1}
	mk := func(i, rank int, ttft float64) Result {
		return Result{Index: i, Rank: rank, Binding: "ttft_p99_s", Outcome: Outcome{TTFTP99: ttft, TPOTP99: 0.05}}
	}
	rep := &Report{Inputs: Inputs{SLO: slo}, Candidates: []Result{mk(0, 1, 3), mk(1, 2, 3.2), mk(2, 3, 6), {Index: 3, Rank: 4, Binding: "ooms"}}}
	first := rep.Candidates[0]
	rep.Recommended = &first
	AddBands(rep, relBand(0.1))
	if !slices.Equal(rep.WithinBand, []int{1}) || !strings.Contains(rep.BandNote, "(p99s at the lowest rate tried)") {
		t.Errorf("within band %v, note %q; want candidate 1 (3.2 s against 3 s, ±10%%), not 2 (6 s) nor 3 (OOMs)", rep.WithinBand, rep.BandNote)
	}
}
