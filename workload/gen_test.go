package workload_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpufrag/gpufrag/workload"
)

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

// meanCV draws n gaps and returns their mean in seconds and their CV.
func meanCV(p workload.ArrivalProcess, n int) (mean, cv float64) {
	var sum, sq float64
	for i := 0; i < n; i++ {
		g := float64(p.Gap()) / 1e9
		sum += g
		sq += g * g
	}
	mean = sum / float64(n)
	return mean, math.Sqrt(sq/float64(n)-mean*mean) / mean
}

// TestArrivalRates checks the mean rate (and CV) of both processes over
// 20,000 gaps. With n gaps the standard error of the mean is cv/sqrt(n) of
// the mean: 0.7% at cv 1 and 2.1% at cv 3, so 10% is over four standard
// errors even at cv 3 (the CV estimate is looser at cv 3 because the
// fourth moment is large, hence its 30% tolerance).
func TestArrivalRates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		rate := rapid.Float64Range(0.01, 1000).Draw(t, "rate")
		cv := rapid.Float64Range(0.25, 3).Draw(t, "cv")
		const n = 20000
		p, err := workload.Poisson(rate, rng(seed))
		if err != nil {
			t.Fatal(err)
		}
		m, c := meanCV(p, n)
		if math.Abs(m*rate-1) > 0.1 || math.Abs(c-1) > 0.1 {
			t.Fatalf("Poisson(%v): mean gap %v s (want %v), cv %v", rate, m, 1/rate, c)
		}
		g, err := workload.Gamma(rate, cv, rng(seed))
		if err != nil {
			t.Fatal(err)
		}
		m, c = meanCV(g, n)
		if math.Abs(m*rate-1) > 0.1 || math.Abs(c/cv-1) > 0.3 {
			t.Fatalf("Gamma(%v, %v): mean gap %v s (want %v), cv %v", rate, cv, m, 1/rate, c)
		}
	})
}

func TestGeneratorErrors(t *testing.T) {
	for _, err := range []error{
		func() error { _, err := workload.Poisson(0, rng(1)); return err }(),
		func() error { _, err := workload.Poisson(math.NaN(), rng(1)); return err }(),
		func() error { _, err := workload.Gamma(1, 0, rng(1)); return err }(),
		func() error { _, err := workload.Gamma(math.Inf(1), 1, rng(1)); return err }(),
		workload.Bucket(&workload.Trace{}, 0),
		workload.VaryBeam(&workload.Trace{}, nil, rng(1)),
		workload.VaryBeam(&workload.Trace{}, []int{0}, rng(1)),
		workload.Rescale(&workload.Trace{}, 1),
		workload.AssignArrivals(&workload.Trace{Timed: true}, nil),
		func() error { _, err := workload.Sessions(workload.SessionConfig{}, rng(1)); return err }(),
	} {
		if !errors.Is(err, workload.ErrConfig) {
			t.Errorf("got %v, want ErrConfig", err)
		}
	}
}

func lengthTrace(t *rapid.T) *workload.Trace {
	n := rapid.IntRange(2, 200).Draw(t, "n")
	tr := &workload.Trace{Format: workload.Vidur}
	for i := 0; i < n; i++ {
		tr.Requests = append(tr.Requests, workload.Request{
			PromptTokens: rapid.IntRange(1, workload.MaxTokens).Draw(t, "prompt"),
			OutputTokens: rapid.IntRange(0, 4096).Draw(t, "output"),
			N:            1, Line: i + 2,
		})
	}
	return tr
}

// TestAssignAndRescale: assigned arrivals start at 0 and never decrease,
// the same seed gives the same arrivals, and Rescale hits the target rate
// exactly (up to rounding) while keeping the order.
func TestAssignAndRescale(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tr := lengthTrace(t)
		seed := rapid.Uint64().Draw(t, "seed")
		assign := func() []workload.Request {
			c := *tr
			c.Requests = append([]workload.Request(nil), tr.Requests...)
			p, _ := workload.Gamma(5, 2, rng(seed))
			if err := workload.AssignArrivals(&c, p); err != nil {
				t.Fatal(err)
			}
			return c.Requests
		}
		a, b := assign(), assign()
		if !reflect.DeepEqual(a, b) {
			t.Fatal("same seed, different arrivals")
		}
		if a[0].Arrival != 0 {
			t.Fatalf("first arrival %d", a[0].Arrival)
		}
		for i := 1; i < len(a); i++ {
			if a[i].Arrival < a[i-1].Arrival {
				t.Fatalf("arrivals decrease at %d", i)
			}
		}
		timed := &workload.Trace{Timed: true, Requests: a}
		if a[len(a)-1].Arrival == 0 {
			return // every gap rounded to 0: nothing to rescale
		}
		rate := rapid.Float64Range(0.01, 1e4).Draw(t, "rate")
		if err := workload.Rescale(timed, rate); err != nil {
			t.Fatal(err)
		}
		span := float64(a[len(a)-1].Arrival-a[0].Arrival) / 1e9
		if got := float64(len(a)-1) / span; math.Abs(got/rate-1) > 1e-6 && span > 1e-3 {
			t.Fatalf("rescaled rate %v, want %v", got, rate)
		}
		for i := 1; i < len(a); i++ {
			if a[i].Arrival < a[i-1].Arrival {
				t.Fatalf("rescaled arrivals decrease at %d", i)
			}
		}
	})
}

func TestBucket(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tr := lengthTrace(t)
		k := rapid.IntRange(1, 1<<16).Draw(t, "k")
		before := append([]workload.Request(nil), tr.Requests...)
		if err := workload.Bucket(tr, k); err != nil {
			t.Fatal(err)
		}
		for i, r := range tr.Requests {
			p := before[i].PromptTokens
			if r.PromptTokens < p || r.PromptTokens >= p+k || r.PromptTokens%k != 0 {
				t.Fatalf("k=%d: prompt %d became %d", k, p, r.PromptTokens)
			}
		}
	})
}

func TestVaryBeam(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tr := lengthTrace(t)
		widths := rapid.SliceOfN(rapid.IntRange(1, workload.MaxN), 1, 5).Draw(t, "widths")
		seed := rapid.Uint64().Draw(t, "seed")
		if err := workload.VaryBeam(tr, widths, rng(seed)); err != nil {
			t.Fatal(err)
		}
		first := append([]workload.Request(nil), tr.Requests...)
		_ = workload.VaryBeam(tr, widths, rng(seed))
		for i, r := range tr.Requests {
			if r.N != first[i].N {
				t.Fatal("same seed, different widths")
			}
			ok := false
			for _, w := range widths {
				ok = ok || r.N == w
			}
			if !ok {
				t.Fatalf("N %d not in %v", r.N, widths)
			}
		}
	})
}

// TestSessions: context grows turn by turn (prompt = previous prompt +
// previous output + new user tokens), full prefix blocks of the previous
// prompt keep their ids, output is sorted, and one seed gives one workload.
func TestSessions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := workload.SessionConfig{
			Sessions:     rapid.IntRange(1, 20).Draw(t, "sessions"),
			Rate:         rapid.Float64Range(0.01, 10).Draw(t, "rate"),
			MinTurns:     1,
			MaxTurns:     rapid.IntRange(1, 10).Draw(t, "maxTurns"),
			SystemTokens: rapid.IntRange(0, 2000).Draw(t, "system"),
			MinUser:      1,
			MaxUser:      rapid.IntRange(1, 3000).Draw(t, "maxUser"),
			MinOutput:    0,
			MaxOutput:    rapid.IntRange(0, 1000).Draw(t, "maxOutput"),
			ThinkSeconds: rapid.Float64Range(0, 300).Draw(t, "think"),
			MaxContext:   rapid.IntRange(0, 20000).Draw(t, "maxContext"),
		}
		seed := rapid.Uint64().Draw(t, "seed")
		reqs, err := workload.Sessions(cfg, rng(seed))
		if err != nil {
			t.Fatal(err)
		}
		again, _ := workload.Sessions(cfg, rng(seed))
		if !reflect.DeepEqual(reqs, again) {
			t.Fatal("same seed, different sessions")
		}
		last := map[string]workload.Request{}
		ids := map[string]bool{}
		for i, r := range reqs {
			if i > 0 && r.Arrival < reqs[i-1].Arrival {
				t.Fatalf("not sorted at %d", i)
			}
			if ids[r.ID] {
				t.Fatalf("duplicate id %s", r.ID)
			}
			ids[r.ID] = true
			if cfg.MaxContext > 0 && r.PromptTokens > cfg.MaxContext {
				t.Fatalf("prompt %d over MaxContext %d", r.PromptTokens, cfg.MaxContext)
			}
			if len(r.PrefixHashes) != (r.PromptTokens+511)/512 {
				t.Fatalf("%d hashes for %d tokens", len(r.PrefixHashes), r.PromptTokens)
			}
			p, ok := last[r.Session]
			if !ok {
				if r.Turn != 1 || r.PromptTokens <= cfg.SystemTokens {
					t.Fatalf("first turn %+v", r)
				}
			} else {
				if r.Turn != p.Turn+1 || r.PromptTokens <= p.PromptTokens+p.OutputTokens || r.Arrival < p.Arrival {
					t.Fatalf("turn %+v after %+v", r, p)
				}
				keep := p.PromptTokens / 512
				if !reflect.DeepEqual(r.PrefixHashes[:keep], p.PrefixHashes[:keep]) {
					t.Fatalf("prefix ids not kept: %v then %v", p.PrefixHashes, r.PrefixHashes)
				}
			}
			last[r.Session] = r
		}
	})
}

// A rate that would spread a trace past the simulation's clock is refused
// in hours, saying what to do, never as a negative or overflowed span.
func TestRescaleTooSlow(t *testing.T) {
	for _, rate := range []float64{1e-12, 1e-300} {
		tr := &workload.Trace{Name: "t.csv", Timed: true, Requests: []workload.Request{{Arrival: 0}, {Arrival: 1e9}, {Arrival: 2e9}}}
		err := workload.Rescale(tr, rate)
		if err == nil || !errors.Is(err, workload.ErrConfig) || !strings.Contains(err.Error(), "past the 1281024 hours a simulation can span: give a higher rate") ||
			strings.Contains(err.Error(), "over -") || strings.Contains(err.Error(), "Inf") {
			t.Errorf("rate %g: %v", rate, err)
		}
	}
}
