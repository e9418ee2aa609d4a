package sim

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/internal/invariants"
	"github.com/gpufrag/gpufrag/workload"
	"pgregory.net/rapid"
)

// Config.MaxConcurrency: the closed-loop client of vLLM's and SGLang's
// benchmarks (engine.go, client).

// TestClientCapOne: three requests at t=0 under a cap of one run one after
// the other, and each one's latencies count from when it was sent, not from
// t=0. On the tiny model and toy GPU (helpers_test.go) a step is bandwidth
// bound: weights 2 MiB + KV read and written at 8 KiB a token, at 0.8 TB/s,
// plus the roofline's 3 ms:
//
//	prefill of 10 tokens  2,097,152 + (10 + 10) × 8,192 B = 2,260,992 B → 2,826.24 ns → 3,002,827 ns
//	decode at context 10  2,097,152 + (10 + 1) × 8,192 B = 2,187,264 B → 2,734.08 ns → 3,002,735 ns
//	decode at context 11  2,195,456 B → 2,744.32 ns → 3,002,745 ns
//	decode at context 12  2,203,648 B → 2,754.56 ns → 3,002,755 ns
//
// so a request of 4 output tokens takes 12,011,062 ns, its TTFT is its own
// prefill, 3,002,827 ns, and the next one is sent when it completes.
func TestClientCapOne(t *testing.T) {
	const (
		prefill = 3_002_827
		e2e     = prefill + 3_002_735 + 3_002_745 + 3_002_755
	)
	c := tinyConfig(64 << 20)
	c.KV, c.Alloc, c.MaxConcurrency = kvOf("paged:16"), allocOf("caching"), 1
	reqs := make([]workload.Request, 3)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i+1), PromptTokens: 10, OutputTokens: 4, N: 1}
	}
	e, res := runEngine(t, c, reqs)
	for i, r := range e.reqs {
		if want := int64(i) * e2e; r.sent != want || r.first-r.sent != prefill || r.finish-r.sent != e2e {
			t.Errorf("%s: sent %d, first token %d, finish %d; want sent %d (the previous one's completion), TTFT %d, E2E %d",
				r.id, r.sent, r.first, r.finish, want, prefill, e2e)
		}
	}
	if res.Steps != 12 || res.BatchSizeMean != 1 || res.RequestsCompleted != 3 || res.SimulatedSeconds != 3*e2e/1e9 {
		t.Errorf("steps %d, mean batch %v, completed %d, simulated %v s; want 12 steps of one request, 3 completed, %v s",
			res.Steps, res.BatchSizeMean, res.RequestsCompleted, res.SimulatedSeconds, 3*e2e/1e9)
	}
	if want := (Latency{P50: prefill / 1e9, P99: prefill / 1e9}); res.TTFT != want {
		t.Errorf("TTFT %+v, want %+v: every request's own prefill", res.TTFT, want)
	}
	if want := (Latency{P50: e2e / 1e9, P99: e2e / 1e9}); res.E2E != want {
		t.Errorf("E2E %+v, want %+v", res.E2E, want)
	}
	// The vLLM paper's normalized latency: every request's E2E over its 4
	// output tokens.
	if want := e2e / 1e9 / 4.0; math.Abs(res.NormalizedLatencyMean-want) > 1e-15 {
		t.Errorf("normalized latency %v s/token, want %v", res.NormalizedLatencyMean, want)
	}

	// Open loop, the three share every step: all wait for the one prefill
	// of 30 tokens.
	c.MaxConcurrency = 0
	_, open := runEngine(t, c, reqs)
	if open.Steps != 4 || open.TTFT.P50 != open.TTFT.P99 || open.TTFT.P50 < prefill/1e9 {
		t.Errorf("open loop: %d steps, TTFT %+v; want 4 steps and one TTFT of at least %v s", open.Steps, open.TTFT, prefill/1e9)
	}
}

// TestClientRejectFreesSlot: a request rejected at its arrival frees its
// slot at once: the request held behind it is sent at the same time.
func TestClientRejectFreesSlot(t *testing.T) {
	c := tinyConfig(64 << 20)
	c.KV, c.Alloc, c.MaxConcurrency = kvOf("paged:16"), allocOf("caching"), 1
	c.MaxContext = 64
	reqs := []workload.Request{
		{ID: "r1", PromptTokens: 100, OutputTokens: 2, N: 1}, // longer than the context
		{ID: "r2", PromptTokens: 10, OutputTokens: 2, N: 1},
		{ID: "r3", PromptTokens: 10, OutputTokens: 2, N: 1},
	}
	e, res := runEngine(t, c, reqs)
	if res.RequestsRejected != 1 || res.RequestsCompleted != 2 {
		t.Fatalf("rejected %d, completed %d; want 1 and 2", res.RequestsRejected, res.RequestsCompleted)
	}
	if r2, r3 := e.reqs[1], e.reqs[2]; r2.sent != 0 || r3.sent != r2.finish || r3.sent == 0 {
		t.Errorf("r2 sent at %d (want 0: r1's slot freed at its rejection); r3 at %d (want r2's completion %d)", r2.sent, r3.sent, r2.finish)
	}
}

// TestClientSlotsInOrder: two slots free in one step, one when rB fails on
// its decode token (as the step is scheduled) and one when rA completes (at
// the step's end); the two held requests get them in that order, each sent
// at its slot's time. The paged pool holds 5 blocks of 16 tokens (655,360
// bytes at 8 KiB a token), one of them vLLM's null block: rA (16 + 1
// tokens) and rB (32 + 1) need 5 for their first decode, and under on-oom
// fail the later one, rB, fails.
func TestClientSlotsInOrder(t *testing.T) {
	c := tinyConfig(64 << 20)
	c.KV, c.Alloc, c.MaxConcurrency = kvOf("paged:16"), allocOf("caching"), 2
	c.Activations, c.OnOOM = false, OnOOMFail
	c.GPUMemoryUtilization = float64(2<<20+655_360) / (64 << 20) // weights + 5 blocks
	reqs := []workload.Request{
		{ID: "rA", PromptTokens: 16, OutputTokens: 2, N: 1},
		{ID: "rB", PromptTokens: 32, OutputTokens: 50, N: 1},
		{ID: "rC", PromptTokens: 16, OutputTokens: 1, N: 1},
		{ID: "rD", PromptTokens: 16, OutputTokens: 1, N: 1},
	}
	e, res := runEngine(t, c, reqs)
	if res.KVPoolBytes != 655_360 || res.RequestsFailedOOM != 1 || len(res.Events) != 1 || res.Events[0].Request != "rB" {
		t.Fatalf("pool %d bytes, %d failed, events %+v; want 655360, rB failed", res.KVPoolBytes, res.RequestsFailedOOM, res.Events)
	}
	rA, rC, rD := e.reqs[0], e.reqs[2], e.reqs[3]
	failedAt := int64(math.Round(res.Events[0].Time * 1e9))
	if failedAt != rA.first || rC.sent != failedAt || rD.sent != rA.finish || rA.finish <= rA.first {
		t.Errorf("rB failed at %d (want step 2's start, %d); rC sent at %d (want %d), rD at %d (want rA's completion, %d)",
			failedAt, rA.first, rC.sent, failedAt, rD.sent, rA.finish)
	}
}

// clientSpan is one request's time in flight, from the engine's books.
type clientSpan struct {
	id                string
	arrival, sent     int64
	end               int64 // completion, failure or rejection; MaxInt64 while unfinished
	wasHeld, finished bool
	completed         bool
}

// clientSpans returns every sent request's span: its end from its finish
// time, or from the event that ended it.
func clientSpans(t fataler, e *Engine, res Result) []clientSpan {
	t.Helper()
	ended := map[string]int64{}
	for _, ev := range res.Events {
		switch ev.Kind {
		case "reject", "oom", "activation_oom":
			ended[ev.Request] = int64(math.Round(ev.Time * 1e9))
		}
	}
	if len(res.Events) >= e.cfg.MaxEvents {
		t.Fatalf("events were cut at %d: the spans would be incomplete", e.cfg.MaxEvents)
	}
	var spans []clientSpan
	for _, r := range e.reqs[:e.next] {
		s := clientSpan{id: r.id, arrival: r.arrival, sent: r.sent, end: math.MaxInt64, wasHeld: r.sent > r.arrival}
		switch r.ph {
		case phaseDone:
			s.end, s.finished, s.completed = r.finish, true, true
		case phaseFailed, phaseRejected:
			at, ok := ended[r.id]
			if !ok {
				t.Fatalf("%s ended (phase %d) without an event", r.id, r.ph)
			}
			s.end, s.finished = at, true
		}
		spans = append(spans, s)
	}
	return spans
}

// TestClientCapProperty draws configurations (every OOM policy, time cuts,
// rejections) and request lists with a cap, and checks the client's
// contract from the engine's books: at no time are more than the cap in
// flight; requests are sent in arrival order, never before their arrival;
// a request is held only while every slot is taken, and is sent at the
// moment another one ended; and a cap of at least the number of requests
// changes nothing.
func TestClientCapProperty(t *testing.T) {
	var held, heldByFailure int
	rapid.Check(t, func(t *rapid.T) {
		c := drawConfig(t)
		reqs := drawRequests(t)
		c.MaxConcurrency = rapid.IntRange(1, 6).Draw(t, "max-concurrency")
		e, err := New(c, reqs)
		if err != nil {
			return
		}
		res, err := e.Run()
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if err := checkAccounting(e, res); err != nil {
			t.Fatalf("accounting: %v", err)
		}
		spans := clientSpans(t, e, res)
		type point struct {
			at    int64
			delta int // +1 sent, -1 ended; ends first at equal times
		}
		var pts []point
		ends := map[int64]bool{} // end times; true where a failure or rejection ended
		for i, s := range spans {
			if s.sent < s.arrival || (i > 0 && s.sent < spans[i-1].sent) {
				t.Fatalf("%s arrived at %d, sent at %d (the one before at %v): out of order", s.id, s.arrival, s.sent, spans[max(i-1, 0)].sent)
			}
			if s.end < s.sent {
				t.Fatalf("%s sent at %d, ended at %d", s.id, s.sent, s.end)
			}
			pts = append(pts, point{s.sent, 1})
			if s.finished {
				pts = append(pts, point{s.end, -1})
				ends[s.end] = ends[s.end] || !s.completed
			}
		}
		slices.SortStableFunc(pts, func(a, b point) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
		// inFlight[k] is the count from times[k] until the next time.
		var times []int64
		var inFlight []int
		n := 0
		for _, p := range pts {
			if n += p.delta; n > c.MaxConcurrency {
				t.Fatalf("%d requests in flight at %d ns, cap %d", n, p.at, c.MaxConcurrency)
			}
			if k := len(times) - 1; k >= 0 && times[k] == p.at {
				inFlight[k] = n
				continue
			}
			times, inFlight = append(times, p.at), append(inFlight, n)
		}
		// The client holds a request only while every slot is taken.
		for _, s := range spans {
			if !s.wasHeld {
				continue
			}
			for k, at := range times {
				if at < s.sent && (at >= s.arrival || (k+1 < len(times) && times[k+1] > s.arrival)) && inFlight[k] != c.MaxConcurrency {
					t.Fatalf("%s was held from %d to %d, yet only %d of %d slots were taken from %d ns", s.id, s.arrival, s.sent, inFlight[k], c.MaxConcurrency, at)
				}
			}
		}
		for _, s := range spans {
			if s.wasHeld {
				held++
				failed, ok := ends[s.sent]
				if !ok {
					t.Fatalf("%s was held from %d and sent at %d, when no request ended", s.id, s.arrival, s.sent)
				}
				if failed {
					heldByFailure++
				}
			}
		}

		// A cap no run can reach is no cap.
		wide := c
		wide.MaxConcurrency = len(reqs) + 1
		c.MaxConcurrency = 0
		_, open := runEngine(t, c, reqs)
		_, capped := runEngine(t, wide, reqs)
		if !reflect.DeepEqual(summary(open), summary(capped)) || !reflect.DeepEqual(open.Series, capped.Series) {
			t.Fatalf("a cap of %d over %d requests changed the run:\nopen   %+v\ncapped %+v", wide.MaxConcurrency, len(reqs), summary(open), summary(capped))
		}
	})
	// Under -short or the invariants build (20 small cases) a draw holds no
	// request until a failure or rejection about 1 time in 4 (15 of 60
	// seeds); TestClientSlotsInOrder (a slot freed by a failure) and
	// TestClientCapOne are the hand-made cases, so only the full run (0 of 30 seeds fail) insists.
	if (held == 0 || heldByFailure == 0) && !testing.Short() && !invariants.Enabled {
		t.Fatalf("%d requests were held at the client, %d of them until a failure or rejection: the property is vacuous", held, heldByFailure)
	}
}

// TestClientFastPaths: under a cap, the fast paths give exactly the plain
// engine's run, and an arrival held at the client does not stop a decode
// run (without that, three requests at t=0 under a cap of one would stop
// every run after one step, and the fast path would never engage).
func TestClientFastPaths(t *testing.T) {
	c := tinyConfig(64 << 20)
	c.KV, c.Alloc, c.MaxConcurrency = kvOf("paged:16"), allocOf("caching"), 1
	reqs := make([]workload.Request, 3)
	for i := range reqs {
		reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i+1), PromptTokens: 10, OutputTokens: 200, N: 1}
	}
	fast, _, ok := runBoth(t, c, reqs)
	if !ok {
		t.Fatal("cannot run")
	}
	// 199 decode steps a request; a run stops at each 1 s sample and
	// before the completing step: far more than half run in bulk.
	if fast.runs.steps < 3*150 {
		t.Fatalf("decode runs covered %d of %d steps", fast.runs.steps, 3*200)
	}

	var runs int64
	rapid.Check(t, func(t *rapid.T) {
		c := drawConfig(t)
		s := fastSetups[rapid.IntRange(0, len(fastSetups)-1).Draw(t, "fast-setup")]
		c.KV, c.Alloc = kvOf(s.kv), allocOf(s.alloc)
		c.MaxConcurrency = rapid.IntRange(1, 8).Draw(t, "max-concurrency")
		maxReqs, maxOut := 24, 400
		if testing.Short() || invariants.Enabled {
			maxReqs, maxOut = 8, 120
		}
		reqs := make([]workload.Request, rapid.IntRange(0, maxReqs).Draw(t, "requests"))
		var at int64
		for i := range reqs {
			at += int64(rapid.IntRange(0, 100).Draw(t, "gap-ms")) * int64(time.Millisecond)
			reqs[i] = workload.Request{ID: fmt.Sprintf("r%d", i), Arrival: at,
				PromptTokens: rapid.IntRange(1, 600).Draw(t, "prompt"),
				OutputTokens: rapid.IntRange(0, maxOut).Draw(t, "output"),
				N:            rapid.SampledFrom([]int{1, 1, 1, 2}).Draw(t, "n")}
		}
		if fast, _, ok := runBoth(t, c, reqs); ok {
			runs += fast.runs.steps
		}
	})
	// Under -short (20 small cases, as CI's race run draws them) a draw may
	// hold no decode run at all; the hand-made case above shows that runs
	// engage under a cap, so only the full run insists.
	if runs == 0 && !testing.Short() && !invariants.Enabled {
		t.Fatal("no decode run happened under a cap: the equivalence is vacuous")
	}
}

// TestMaxConcurrencyNegative: a negative cap is a config error naming the
// field.
func TestMaxConcurrencyNegative(t *testing.T) {
	c := tinyConfig(64 << 20)
	c.MaxConcurrency = -1
	if _, err := New(c, nil); err == nil || !reflect.DeepEqual(err.Error(), "bad config: max concurrency: -1 is negative (0: no cap, an open loop)") {
		t.Fatalf("New with MaxConcurrency -1: %v", err)
	}
}
