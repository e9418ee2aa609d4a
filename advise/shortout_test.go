package advise

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/sim"
)

// writeCodeTrace writes an Azure-format trace of n requests shaped like
// code completion (the Azure code trace: mostly short outputs, bursty
// arrivals) from a seeded generator: bursts of simultaneous requests
// (1 + an exponential number with mean burst, 0 to 2 ms apart) at a mean
// of 2.45 requests per second, prompts log-normal around promptMedian
// tokens (σ 0.9, 16 to 7,800), outputs 1 to 8 tokens for 55% of the
// requests, 9 to 40 for 30%, and log-normal around 100 (41 to 1,000) for
// the rest. It returns the file's path.
func writeCodeTrace(t testing.TB, seed uint64, n int, burst, promptMedian float64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("code_%d.csv", seed))
	if err := os.WriteFile(path, codeTrace(seed, n, burst, promptMedian), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// codeTrace is the file writeCodeTrace writes.
func codeTrace(seed uint64, n int, burst, promptMedian float64) []byte {
	r := rand.New(rand.NewPCG(seed, 24))
	var b strings.Builder
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	t0 := time.Date(2023, 11, 16, 18, 0, 0, 0, time.UTC)
	at, left := 0.0, 0
	for range n {
		if left == 0 {
			at += r.ExpFloat64() / (2.45 / (1 + burst))
			left = 1 + int(r.ExpFloat64()*burst)
		}
		left--
		at += r.Float64() * 0.002
		prompt := min(max(int(math.Exp(math.Log(promptMedian)+0.9*r.NormFloat64())), 16), 7800)
		var out int
		switch u := r.Float64(); {
		case u < 0.55:
			out = 1 + r.IntN(8)
		case u < 0.85:
			out = 9 + r.IntN(32)
		default:
			out = min(max(int(math.Exp(math.Log(100)+0.8*r.NormFloat64())), 41), 1000)
		}
		ts := t0.Add(time.Duration(at * 1e9))
		fmt.Fprintf(&b, "%s.%07d,%d,%d\n", ts.Format("2006-01-02 15:04:05"), ts.Nanosecond()/100, prompt, out)
	}
	return []byte(b.String())
}

// TestWriteCodeTrace writes the generated trace of docs/benchmarks.md
// ("advise: short outputs") to the file GPUFRAG_CODE_TRACE names: 8,819
// requests (the Azure code trace's count), seed 13, bursts of 110, prompts
// around 220 tokens. Skipped without it.
//
//	GPUFRAG_CODE_TRACE=/tmp/code13.csv go test ./advise -run TestWriteCodeTrace
func TestWriteCodeTrace(t *testing.T) {
	out := os.Getenv("GPUFRAG_CODE_TRACE")
	if out == "" {
		t.Skip("set GPUFRAG_CODE_TRACE=FILE to write the trace")
	}
	if err := os.WriteFile(out, codeTrace(13, 8819, 110, 220), 0o644); err != nil {
		t.Fatal(err)
	}
}

// codeSweep is the stock sweep (one bucket, prefix caching on) of the
// code-completion trace of seed 13 (2,000 requests, bursts of 110, prompts
// around 220 tokens) for Llama-3-8B on an A100 80GB under slo, run as the
// CLI runs it (early stops, reruns, pruning), with its report.
type codeSweep struct {
	base sim.Config
	w    *Workload
	in   Inputs
	eval Evaluator
	o    Options
	rs   []Result
	rep  *Report
}

func runCodeSweep(t *testing.T, slo SLO) codeSweep {
	t.Helper()
	base, w := traceSetup(t, writeCodeTrace(t, 13, 2000, 110, 220), 0, []int{0}, "llama-3-8b", "a100-80g")
	sp := stockSpace()
	sp.Buckets, sp.PrefixCaching = []int{0}, []string{"on"}
	cs, err := sp.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	srch := DefaultSearch()
	srch.StartRPS = w.NativeRPS
	c := codeSweep{base: base, w: w, in: Inputs{Model: base.Model.Name, GPU: base.GPU.Name, TP: 1, SLO: slo, Search: srch, Space: sp, Candidates: cs}}
	stopping := base
	stopping.EarlyStop = slo.earlyStop()
	c.eval = SimEvaluator(stopping, w)
	c.o = Options{SLO: slo, Search: srch, Workers: 2, Rerun: SimEvaluator(base, w), Prune: true}
	if c.rs, err = Run(cs, nil, c.eval, c.o); err != nil {
		t.Fatal(err)
	}
	if c.rep, err = NewReport(c.in, c.rs); err != nil {
		t.Fatal(err)
	}
	return c
}

// The case, on a generated code-completion trace: Llama-3-8B on an
// A100 80GB, nothing meets TPOT p99 at any rate, the smallest token budget
// of the space (2,048) comes nearest, and a contiguous-KV candidate
// (another engine: its reservations keep batches small) comes nearer than
// any paged one, so the ranking that took the nearest of any family made
// it the best effort and stopped at 2,048 tokens. Now the best effort is
// paged, the short outputs are named with figures, and the search follows
// the budget down until it meets the SLO.
//
// The generator's parameters and the choices they informed (the floor,
// the output-length splits, shortMost, DefaultExtend) were looked at on
// seed 1 (bursts of 140, prompts around 150 tokens), seed 3 (120, 200)
// and seed 9 (100, 250: there the first rule, that the longer requests
// alone meet the objective, found no split, as they miss it too, which
// led to the "for the most part" case); this test judges seed 13 (110,
// 220), whose split was not looked at before the rules were fixed.
func TestShortOutputsTrace(t *testing.T) {
	cs := runCodeSweep(t, DefaultSLO())
	base, w, in, rep := cs.base, cs.w, cs.in, cs.rep

	// The case: nothing meets the SLO, TPOT binds, and a contiguous
	// candidate is nearer than every paged one.
	b := rep.Recommended
	if b == nil || rep.MeetsSLO || b.Binding != "tpot_p99_s" {
		t.Fatalf("recommended %+v: want a best effort bound by TPOT p99 (the case of the issue)", b)
	}
	nearestPaged, nearestOther := math.Inf(1), math.Inf(1)
	for _, r := range rep.Candidates {
		if r.Settings.KV.Family() == strategy.Paged {
			nearestPaged = min(nearestPaged, r.TPOTP99)
		} else {
			nearestOther = min(nearestOther, r.TPOTP99)
		}
	}
	if !(nearestOther < nearestPaged) {
		t.Fatalf("TPOT p99 nearest %v on paged, %v on contiguous: the trace no longer has the issue's case", nearestPaged, nearestOther)
	}
	// The best effort keeps to paged and points to a smaller budget.
	if b.Settings.KV.String() != "paged:16" || b.Settings.MaxBatchTokens != 2048 ||
		!strings.Contains(rep.Advice, "of the max_num_batched_tokens tried (2048 to 16384) the smallest came nearest: a smaller one may go further") {
		t.Fatalf("best effort %s, advice %q", b.Settings, rep.Advice)
	}

	// Short outputs named, with figures.
	if err := ExplainShortOutputs(rep, base, w); err != nil {
		t.Fatal(err)
	}
	so := rep.ShortOutputs
	if so == nil || so.Share < 0.5 || !(so.TPOTP99Short > in.SLO.TPOTP99) || so.ShareOfOver < shortMost || so.RateRPS != b.LowestRateRPS ||
		so.LongMeets != (so.TPOTP99Long <= in.SLO.TPOTP99) {
		t.Fatalf("short outputs %+v (best effort TPOT p99 %v)", so, b.TPOTP99)
	}
	for _, want := range []string{"Short outputs set it", fmt.Sprintf("at most %d output tokens", so.MaxOutput),
		"(E2E − TTFT) ÷ (output tokens − 1)", "a smaller token budget shortens those steps"} {
		if !strings.Contains(rep.Advice, want) {
			t.Errorf("advice lacks %q: %q", want, rep.Advice)
		}
	}

	// Followed, the search halves the budget and finds a setting of the
	// engine in use that meets the SLO, saying it lies past the space.
	_, _, rep, err := Follow(in, cs.rs, cs.eval, cs.o, DefaultExtend, nil)
	if err != nil {
		t.Fatal(err)
	}
	toks, _ := extended(rep)
	r := rep.Recommended
	if len(toks) == 0 || toks[0] != 1024 || r == nil || !r.MeetsSLO || r.Group != groupExtend || r.Settings.KV.String() != "paged:16" || r.Settings.MaxBatchTokens >= 2048 {
		t.Fatalf("followed: tried %v, recommended %+v", toks, r)
	}
	if !strings.Contains(rep.Reason, "it lies past the space: no candidate of the sweep met the SLO, and the search followed its advice to max_num_batched_tokens 1024") {
		t.Errorf("reason %q", rep.Reason)
	}
	t.Logf("followed to %v; recommended %s at %.3g rps (TPOT p99 %.3gs); short outputs: %+v", toks, r.Settings, r.SustainableRPS, r.TPOTP99, so)
}

// splitShort names the smallest split at which the short requests miss
// the objective and the others meet it; where the others miss it too, the
// smallest at which the short ones are three quarters of those over it
// (and more than their share of all); none where they are not, or are too
// few to move a p99.
func TestSplitShort(t *testing.T) {
	var times []sim.RequestTime
	add := func(n, output int, tpot float64) {
		for range n {
			times = append(times, sim.RequestTime{Output: output, TPOT: tpot, HasTPOT: output > 1, HasTTFT: output > 0})
		}
	}
	add(100, 1, 0)
	add(300, 2, 0.2)
	add(200, 6, 0.15)
	add(400, 50, 0.05)
	so := splitShort(times, 0.1)
	if so == nil || so.MaxOutput != 8 || so.Requests != 600 || so.Share != 0.6 || so.TPOTP99Short != 0.2 || so.TPOTP99Long != 0.05 ||
		!so.LongMeets || so.Over != 500 || so.ShareOfOver != 1 {
		t.Fatalf("split %+v: want at 8 tokens, 600 requests (60%%), 200ms against 50ms", so)
	}
	// With 40ms every request misses: the short ones are no more of those
	// over it than of all.
	if so := splitShort(times, 0.04); so != nil {
		t.Errorf("every request misses 40ms, yet split %+v", so)
	}
	// 30 long requests over 100ms too: the short ones are 500 of 530.
	times = times[:len(times)-30]
	add(30, 50, 0.3)
	so = splitShort(times, 0.1)
	if so == nil || so.MaxOutput != 8 || so.LongMeets || so.Over != 530 || so.ShareOfOver != round6(500.0/530) {
		t.Fatalf("split %+v: want at 8 tokens for the most part", so)
	}
	if txt := so.text(Settings{MaxBatchTokens: 2048, MaxSeqs: 256}, 0.1); !strings.HasPrefix(txt, "Short outputs set it for the most part: 60% of the requests have at most 8 output tokens, and they are 94% of the 530 requests over the objective") ||
		strings.Contains(txt, "an objective held by") {
		t.Errorf("text %q", txt)
	}
	times = times[:0]
	add(5, 2, 0.3)
	add(995, 50, 0.05)
	if so := splitShort(times, 0.1); so != nil {
		t.Errorf("5 short requests of 1,000 cannot set a p99, yet split %+v", so)
	}
}
