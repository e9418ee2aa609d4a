package workload_test

import (
	"math"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// TestLowRates: a low rate's gaps are drawn whole. They were cut at 2^42
// ns (73 minutes), so that Poisson(0.0001) had a mean gap of 3,560 s, not
// 10,000, and every rate below about 0.0002 was simulated as another.
func TestLowRates(t *testing.T) {
	for _, rate := range []float64{1e-3, 1e-4, 1e-6} {
		p, err := workload.Poisson(rate, rng(7))
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := meanCV(p, 20000); math.Abs(m*rate-1) > 0.05 {
			t.Errorf("Poisson(%v): mean gap %.4g s, want %.4g", rate, m, 1/rate)
		}
		g, err := workload.Gamma(rate, 2, rng(7))
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := meanCV(g, 20000); math.Abs(m*rate-1) > 0.1 {
			t.Errorf("Gamma(%v, 2): mean gap %.4g s, want %.4g", rate, m, 1/rate)
		}
	}
}

// TestArrivalsStopAtTheClock: gaps no arrival can have (a rate of 1e-300,
// a think time of 1e300 s) put the arrivals at MaxArrival, in order,
// without overflowing into negative times.
func TestArrivalsStopAtTheClock(t *testing.T) {
	p, err := workload.Poisson(1e-300, rng(1))
	if err != nil {
		t.Fatal(err)
	}
	tr := &workload.Trace{Name: "t", Requests: make([]workload.Request, 50)}
	if err := workload.AssignArrivals(tr, p); err != nil {
		t.Fatal(err)
	}
	last := int64(0)
	for i, r := range tr.Requests {
		if r.Arrival < last || r.Arrival > workload.MaxArrival {
			t.Fatalf("request %d arrives at %d after %d (MaxArrival %d)", i, r.Arrival, last, workload.MaxArrival)
		}
		last = r.Arrival
	}
	if last != workload.MaxArrival {
		t.Errorf("the last arrival is at %d, want MaxArrival %d", last, workload.MaxArrival)
	}
	reqs, err := workload.Sessions(workload.SessionConfig{Sessions: 20, Rate: 1e-300, MinTurns: 5, MaxTurns: 5, MinUser: 1, MaxUser: 2,
		MinOutput: 1, MaxOutput: 2, ThinkSeconds: 1e300}, rng(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if r.Arrival < 0 || r.Arrival > workload.MaxArrival {
			t.Fatalf("session turn %s arrives at %d", r.ID, r.Arrival)
		}
	}
}
