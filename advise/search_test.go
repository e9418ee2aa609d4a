package advise

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/sim/scenario"
)

// threshold is a monotone fake: it holds at rates up to limit, and breaks
// above it with an SLO violation (or OOMs when oom is set).
func threshold(limit float64, oom bool, calls *[]float64) func(float64) (Outcome, error) {
	return func(rate float64) (Outcome, error) {
		if calls != nil {
			*calls = append(*calls, rate)
		}
		o := Outcome{TTFTP99: 1, TPOTP99: 0.05, Completed: 10, Total: 10}
		if rate > limit {
			if oom {
				o.OOMs = 3
			} else {
				o.TTFTP99 = 5
			}
		}
		return o, nil
	}
}

// The search finds a known threshold to within the documented resolution,
// never above it, in at most MaxEvaluations simulations.
func TestFindSustainableThreshold(t *testing.T) {
	s := Search{StartRPS: 4, BracketSteps: 5, BisectSteps: 4}
	res := math.Pow(2, 1/math.Pow(2, float64(s.BisectSteps))) // bracket factor after bisecting [r, 2r]
	for _, limit := range []float64{0.2, 0.9, 3.99, 4, 4.01, 5, 7.3, 11, 63, 127} {
		var calls []float64
		f, err := FindSustainable(threshold(limit, false, &calls), DefaultSLO(), s)
		if err != nil {
			t.Fatal(err)
		}
		got := f.Sustainable.RateRPS
		if !f.Held || got > limit || got*res < limit*(1-1e-12) {
			t.Errorf("limit %v: sustainable %v (held %v), want in [%v, %v]", limit, got, f.Held, limit/res, limit)
		}
		if f.Failed == nil || f.Failed.RateRPS <= limit || f.Failed.RateRPS > got*res*(1+1e-12) {
			t.Errorf("limit %v: failed at %+v, want just above %v", limit, f.Failed, got)
		}
		if f.Evaluations != len(calls) || f.Evaluations > s.MaxEvaluations() {
			t.Errorf("limit %v: %d evaluations (%d calls), max %d", limit, f.Evaluations, len(calls), s.MaxEvaluations())
		}
		if f.Why == "" {
			t.Errorf("limit %v: no reason for the failure", limit)
		}
	}
}

// Beyond the bracket: a candidate that never breaks reports the highest
// rate tried and no failure; one that never holds reports Held false with
// the lowest failure.
func TestFindSustainableLimits(t *testing.T) {
	s := Search{StartRPS: 1, BracketSteps: 3, BisectSteps: 2}
	f, err := FindSustainable(threshold(1e9, false, nil), DefaultSLO(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Held || f.Sustainable.RateRPS != 8 || f.Failed != nil || f.Evaluations != 4 {
		t.Errorf("never breaks: %+v", f)
	}
	f, err = FindSustainable(threshold(1e-9, true, nil), DefaultSLO(), s)
	if err != nil {
		t.Fatal(err)
	}
	if f.Held || f.Sustainable.RateRPS != 0 || f.Failed == nil || f.Failed.RateRPS != 0.125 || f.Sustainable.OOMs != 3 {
		t.Errorf("never holds: %+v failed %+v", f, f.Failed)
	}
}

// The same outcomes give the same rates: the search is a pure function of
// its evaluator.
func TestFindSustainableDeterministic(t *testing.T) {
	s := Search{StartRPS: 2.5, BracketSteps: 5, BisectSteps: 6}
	var a, b []float64
	fa, _ := FindSustainable(threshold(6.1, true, &a), DefaultSLO(), s)
	fb, _ := FindSustainable(threshold(6.1, true, &b), DefaultSLO(), s)
	if len(a) != len(b) || fa.Sustainable != fb.Sustainable {
		t.Fatalf("two searches differ: %v vs %v", a, b)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("rate %d: %v vs %v", i, a[i], b[i])
		}
	}
}

func TestFindSustainableErrors(t *testing.T) {
	boom := errors.New("boom")
	_, err := FindSustainable(func(float64) (Outcome, error) { return Outcome{}, boom }, DefaultSLO(), Search{StartRPS: 1, BracketSteps: 1})
	if !errors.Is(err, boom) || !errors.Is(err, ErrEvaluate) {
		t.Errorf("evaluator error: got %v", err)
	}
	for _, s := range []Search{{StartRPS: 0}, {StartRPS: math.Inf(1)}, {StartRPS: 1, BracketSteps: -1}, {StartRPS: 1, BisectSteps: 31}} {
		if _, err := FindSustainable(threshold(1, false, nil), DefaultSLO(), s); !errors.Is(err, ErrBadSpace) {
			t.Errorf("%+v: got %v, want ErrBadSpace", s, err)
		}
	}
}

func TestOutcomeCheck(t *testing.T) {
	slo := SLO{TTFTP99: 2, TPOTP99: 0.1}
	for _, c := range []struct {
		o    Outcome
		ok   bool
		want string
	}{
		{Outcome{TTFTP99: 2, TPOTP99: 0.1}, true, ""},
		{Outcome{OOMs: 1, RateRPS: 3}, false, "1 OOM failures at 3 rps"},
		{Outcome{ActivationOOMs: 2, RateRPS: 3}, false, "2 activation OOMs at 3 rps"},
		{Outcome{Unfinished: 4, RateRPS: 3}, false, "4 requests unfinished at 3 rps"},
		{Outcome{TTFTP99: 2.5, RateRPS: 3}, false, "SLO broken at 3 rps: TTFT p99 2.5s > 2s"},
		{Outcome{TPOTP99: 0.2, RateRPS: 3}, false, "SLO broken at 3 rps: TPOT p99 0.2s > 0.1s"},
		{Outcome{Rejected: 5, TTFTP99: 1}, true, ""},
	} {
		ok, why := c.o.Check(slo)
		if ok != c.ok || why != c.want {
			t.Errorf("%+v: got %v %q, want %v %q", c.o, ok, why, c.ok, c.want)
		}
	}
}

// TestWorkloadAt: the requests of a bucket at a rate are scenario.TraceAt's
// of the trace with its arrivals drawn, shared by the runs at that rate
// (one copy, not one a run), and the cache of them stays within its
// bounds however many rates the search tries.
func TestWorkloadAt(t *testing.T) {
	_, w := smallSetup(t, []int{0, 256})
	for i := range 3 * maxCachedRuns {
		rate := w.NativeRPS * math.Pow(2, float64(i%20-10)/4)
		b := []int{0, 256}[i%2]
		got, err := w.at(b, rate)
		if err != nil {
			t.Fatal(err)
		}
		want, err := scenario.TraceAt(&w.trace, rate, b, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("bucket %d at %v rps: not TraceAt's requests", b, rate)
		}
		again, _ := w.at(b, rate)
		if &again[0] != &got[0] {
			t.Errorf("bucket %d at %v rps: a second copy, not the one cached", b, rate)
		}
		if len(w.cached) > maxCachedRuns {
			t.Fatalf("%d runs cached, more than %d", len(w.cached), maxCachedRuns)
		}
	}
	if _, err := w.at(64, w.NativeRPS); !errors.Is(err, ErrBadSpace) {
		t.Errorf("a bucket not prepared: %v", err)
	}
}
