package advise

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/sim"
)

// With an ITL objective (--slo-itl-p99), an outcome breaks on its ITL p99
// (and on a run stopped early on it), the binding objective of a best
// effort is the one its p99 is furthest over, and the advice names the
// flag; without one, ITL is not judged and the SLO's JSON is as before.
func TestITLObjective(t *testing.T) {
	slo := SLO{TTFTP99: 2, TPOTP99: 0.1, ITLP99: 0.05}
	o := Outcome{RateRPS: 1, TTFTP99: 1, TPOTP99: 0.08, ITLP99: 0.12}
	if field, why := o.breaks(slo); field != "itl_p99_s" || !strings.Contains(why, "ITL p99 0.12s > 0.05s") {
		t.Errorf("breaks: %q, %q", field, why)
	}
	if field, _ := o.breaks(DefaultSLO()); field != "" {
		t.Errorf("no ITL objective, yet broken on %q", field)
	}
	stopped := o
	stopped.ITLP99, stopped.StoppedEarly = 0.01, "itl_p99"
	if field, why := stopped.breaks(slo); field != "itl_p99_s" || !strings.Contains(why, "more than 1% of inter-token gaps over it") {
		t.Errorf("stopped early on ITL: %q, %q", field, why)
	}
	// The largest p99 over its objective binds: ITL's 2.4 against TPOT's 0.8.
	r := &Result{Outcome: o, FailedAtRPS: 1}
	if field, v, _ := binding(r, slo, 0); field != "itl_p99_s" || v != 0.12 {
		t.Errorf("binding %q %v, want itl_p99_s 0.12", field, v)
	}
	r.TPOTP99 = 0.3 // 3 against 2.4: TPOT binds
	if field, _, _ := binding(r, slo, 0); field != "tpot_p99_s" {
		t.Errorf("binding %q, want tpot_p99_s", field)
	}
	r.TPOTP99 = 0.08
	r.Binding, r.BestValue, r.LowestRateRPS = "itl_p99_s", 0.12, 1
	if a := advice(r, []Result{*r}, slo); !strings.Contains(a, "ITL p99 binds: the best reached is 120ms") || !strings.Contains(a, "Relax --slo-itl-p99 to 120ms") {
		t.Errorf("advice %q", a)
	}
	// The early stop carries the objective to the simulator.
	if es := slo.earlyStop(); es.ITLP99 != 0.05 || es.TPOTP99 != 0.1 || es.TTFTP99 != 2 || !es.OnFailure {
		t.Errorf("early stop %+v", es)
	}
	for _, tc := range []struct {
		slo  SLO
		want string
	}{{DefaultSLO(), `{"ttft_p99_s":2,"tpot_p99_s":0.1}`}, {slo, `{"ttft_p99_s":2,"tpot_p99_s":0.1,"itl_p99_s":0.05}`}} {
		if b, _ := json.Marshal(tc.slo); string(b) != tc.want {
			t.Errorf("%+v: %s, want %s", tc.slo, b, tc.want)
		}
	}
	if err := CheckLimits(1, SLO{TTFTP99: 2, TPOTP99: 0.1, ITLP99: -1}, false, false, 1, 0); err == nil || !strings.Contains(err.Error(), "--slo-itl-p99") {
		t.Errorf("a negative ITL objective: %v", err)
	}
}

// The code-completion trace (TestShortOutputsTrace's seed 13)
// under an ITL objective and a lax TPOT one (500 ms): the best effort of
// the sweep meets TPOT p99 at the lowest rate tried, but the steps that
// carry other requests' prefills stall the decodes, so ITL binds, and the
// search follows the token budget down. At 60 ms it finds a budget that
// meets the SLO; at 50 ms the budget that meets ITL breaks TTFT, and the
// advice says that the two objectives pull the budget apart. The text
// shows the objective and the column.
func TestITLObjectiveTrace(t *testing.T) {
	follow := func(itl float64) (sweep, followed *Report, tried []int) {
		cs := runCodeSweep(t, SLO{TTFTP99: 2, TPOTP99: 0.5, ITLP99: itl})
		_, _, followed, err := Follow(cs.in, cs.rs, cs.eval, cs.o, DefaultExtend, nil)
		if err != nil {
			t.Fatal(err)
		}
		tried, _ = extended(followed)
		return cs.rep, followed, tried
	}

	sweep, rep, tried := follow(0.06)
	b := sweep.Recommended
	if b == nil || sweep.MeetsSLO || b.Binding != "itl_p99_s" || !(b.TPOTP99 <= 0.5) || !(b.ITLP99 > 0.06) {
		t.Fatalf("the sweep's recommendation %+v: want a best effort bound by ITL p99 with TPOT p99 met", b)
	}
	if !strings.Contains(sweep.Advice, "ITL p99 binds") || !strings.Contains(sweep.Advice, "Relax --slo-itl-p99 to") ||
		!strings.Contains(sweep.Advice, "the smallest came nearest: a smaller one may go further") {
		t.Fatalf("advice %q", sweep.Advice)
	}
	r := rep.Recommended
	if len(tried) == 0 || r == nil || !r.MeetsSLO || r.Group != groupExtend || r.Settings.KV.String() != "paged:16" ||
		r.Settings.MaxBatchTokens >= 2048 || !(r.ITLP99 > 0 && r.ITLP99 <= 0.06) {
		t.Fatalf("followed at 60 ms: tried %v, recommended %+v", tried, r)
	}
	var sb bytes.Buffer
	if err := WriteText(&sb, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TTFT p99 ≤ 2s, TPOT p99 ≤ 500ms and ITL p99 ≤ 60ms", "TPOT p99  ITL p99  changes"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, sb.String())
		}
	}
	t.Logf("60 ms: followed to %v; recommended %s at %.3g rps (TPOT p99 %.3gs, ITL p99 %.3gs)", tried, r.Settings, r.SustainableRPS, r.TPOTP99, r.ITLP99)

	_, rep, tried = follow(0.05)
	r = rep.Recommended
	if r == nil || rep.MeetsSLO || r.Binding != "itl_p99_s" || len(tried) == 0 {
		t.Fatalf("followed at 50 ms: tried %v, recommended %+v", tried, r)
	}
	smaller := slices.Min(tried)
	for _, want := range []string{"max_num_batched_tokens cannot bring it nearer without breaking another requirement",
		fmt.Sprintf("%d brings ITL p99 to", smaller), "but TTFT p99 to", "against 2s; relax one of the two"} {
		if !strings.Contains(rep.Advice, want) {
			t.Errorf("advice at 50 ms lacks %q: %q", want, rep.Advice)
		}
	}
	t.Logf("50 ms: %s", rep.Advice)
}

// Without an ITL objective the text has neither the objective nor the
// column, as before it existed.
func TestITLColumnOnlyWithObjective(t *testing.T) {
	rep := &Report{Inputs: Inputs{SLO: DefaultSLO()}, Candidates: []Result{{Outcome: Outcome{ITLP99: 0.3}}}}
	var sb bytes.Buffer
	if err := WriteText(&sb, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sb.String(), "ITL") {
		t.Errorf("ITL in a report without the objective:\n%s", sb.String())
	}
}

// A budget beside the best effort's that brings the binding objective
// nearer but misses on another objective, or on memory, makes the limit a
// trade-off: the advice names what it breaks, and the search neither
// probes nor follows a direction (the case a review found, where the
// only neighbour was 47% better on ITL and the advice called the budget
// flat and probed below it). A neighbour with no figures (it cannot run)
// or within limitEffect of the best effort is no clash.
func TestLimitClash(t *testing.T) {
	slo := SLO{TTFTP99: 2, TPOTP99: 0.5, ITLP99: 0.05}
	set := func(tokens int) Settings {
		return Settings{KV: kv("paged:16"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, Defrag: "off", MaxBatchTokens: tokens, MaxSeqs: 128, PrefixCaching: "on"}
	}
	best := Result{Candidate: Candidate{Settings: set(512)}, Outcome: Outcome{TTFTP99: 1.7, TPOTP99: 0.05, ITLP99: 0.054}, Binding: "itl_p99_s"}
	smaller := Result{Candidate: Candidate{Settings: set(256)}, Outcome: Outcome{TTFTP99: 2.39, TPOTP99: 0.03, ITLP99: 0.0288}, Binding: "ttft_p99_s"}
	larger := Result{Candidate: Candidate{Settings: set(1024)}, Outcome: Outcome{TTFTP99: 1.3, TPOTP99: 0.1, ITLP99: 0.105}, Binding: "itl_p99_s"}
	cannot := Result{Candidate: Candidate{Settings: set(384)}, Binding: "cannot_run"}
	tokens := limits[0]
	check := func(all []Result, want string) {
		t.Helper()
		if h := limitHint(&best, all, tokens, slo); h != want {
			t.Errorf("hint %q\nwant %q", h, want)
		}
		tr, _ := limitTrend(&best, all, tokens)
		if _, ok := tr.next(best.Settings, tokens); ok && strings.Contains(want, "requirement") {
			t.Errorf("a trade-off, yet the search would go on (%+v)", tr)
		}
	}
	check([]Result{best, smaller}, "max_num_batched_tokens cannot bring it nearer without breaking another requirement (256 to 512 tried, 512 nearest): "+
		"256 brings ITL p99 to 28.8ms but TTFT p99 to 2.39s against 2s; relax one of the two")
	check([]Result{best, larger, cannot, smaller}, "max_num_batched_tokens cannot bring it nearer without breaking another requirement (256 to 1024 tried, 512 nearest): "+
		"256 brings ITL p99 to 28.8ms but TTFT p99 to 2.39s against 2s; relax one of the two")
	smaller.Binding = "ooms"
	check([]Result{best, smaller}, "max_num_batched_tokens cannot bring it nearer without breaking another requirement (256 to 512 tried, 512 nearest): "+
		"256 brings ITL p99 to 28.8ms but fails requests out of memory")
	// Within limitEffect: no clash, and the budget does not move it.
	smaller.Binding, smaller.ITLP99 = "ttft_p99_s", 0.0535
	check([]Result{best, smaller}, "max_num_batched_tokens does not move it (256 to 512 tried, all within 2%): "+
		"the steps that set it may carry fewer tokens than that, and a smaller one may split those that carry prefills")
	// Only a larger budget, worse: the smallest came nearest.
	check([]Result{best, larger}, "of the max_num_batched_tokens tried (512 to 1024) the smallest came nearest: a smaller one may go further")
}

// AddCalibBands gives an ITL p99 the band of measured p99s under the joint
// model (calib.ITLP99Band) and none under the roofline; there a best
// effort's ranked figure still has a band when TTFT or TPOT binds (ITL
// counts at its value), and none when ITL binds.
func TestCalibITLBand(t *testing.T) {
	slo := SLO{TTFTP99: 2, TPOTP99: 0.1, ITLP99: 0.05}
	mk := func(model string) *Report {
		return &Report{Inputs: Inputs{StepTime: model, GPU: "a100-80g", SLO: slo}, Candidates: []Result{{
			Outcome: Outcome{TTFTP99: 3, TPOTP99: 0.05, ITLP99: 0.04, OutputTokensPerS: 100, BatchSizeMean: 8}, Binding: "ttft_p99_s"}}}
	}
	rep := mk(sim.StepTimeJoint)
	if err := AddCalibBands(rep); err != nil {
		t.Fatal(err)
	}
	want, ok, err := calib.ITLP99Band(0.04)
	if c := rep.Candidates[0]; err != nil || !ok || c.ITLP99Band == nil || *c.ITLP99Band != want || c.TTFTP99Band == nil {
		t.Fatalf("joint: ITL p99 band %+v, want %+v (%v %v)", c.ITLP99Band, want, ok, err)
	}
	rep = mk(sim.StepTimeRoofline)
	if err := AddCalibBands(rep); err != nil {
		t.Fatal(err)
	}
	c := &rep.Candidates[0]
	if c.ITLP99Band != nil || c.TTFTP99Band == nil || c.TPOTP99Band == nil {
		t.Fatalf("roofline: bands %+v %+v %+v", c.ITLP99Band, c.TTFTP99Band, c.TPOTP99Band)
	}
	v, b, ok := rankedFigure(c, slo, false)
	if !ok || v != 1.5 || b == nil || !(b.Lower <= 1.5 && b.Upper >= 1.5) || b.Lower < 0.04/0.05 {
		t.Errorf("TTFT binds, no ITL band: %v %+v %v", v, b, ok)
	}
	c.Binding = "itl_p99_s"
	if _, _, ok := rankedFigure(c, slo, false); ok {
		t.Error("ITL binds with no band, yet a ranked band")
	}
}
