package advise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// fakeEval is a deterministic fake of the simulator: each setting has a
// rate limit derived from its fields, breaking above it by the SLO, except
// that contiguous-grow on async OOMs at every rate and paged:32 OOMs above
// its limit. Fragmentation and memory vary by setting for the tie-breaks.
func fakeEval(s Settings, rate float64) (Outcome, error) {
	k := len(s.KV.String())*7 + len(s.Alloc.String())*3 + int(s.GPUMemoryUtilization*100) + s.Bucket/16 + len(s.Defrag)
	limit := 1 + float64(k%13)*0.37
	o := Outcome{Completed: 100, Total: 100, TTFTP99: 0.5, TPOTP99: 0.05,
		FragRate: FragRate{P99: float64(k%5) / 10}, PeakReservedBytes: int64(k%3) << 30}
	switch {
	case s.KV.String() == "contiguous-grow" && s.Alloc.String() == "async":
		o.OOMs, o.TTFTP99 = 7, 0.1 // fast, but fails requests
	case rate > limit && s.KV.String() == "paged:32":
		o.OOMs = 2
	case rate > limit:
		o.TTFTP99 = 3
	}
	o.Completed -= o.OOMs // every request ends one way (ReadPartial checks)
	return o, nil
}

// stockSpace is DefaultSpace with both contiguous families beside paged
// (the default space before it kept to the engine in use): stock
// settings of three engine families, none experimental.
func stockSpace() Space {
	sp := DefaultSpace()
	sp.KVs = append(sp.KVs, kvs("contiguous-grow", "contiguous-max")...)
	return sp
}

func fakeInputs(t *testing.T) Inputs {
	t.Helper()
	sp := stockSpace()
	cs, err := sp.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSearch()
	s.StartRPS = 1.7
	return Inputs{Trace: TraceInfo{File: "fake.csv", SHA256: "00", Format: "azure", Requests: 100, NativeRPS: 1.7},
		Model: "llama-3.1-8b", GPU: "a100-80g", TP: 1, SLO: DefaultSLO(), Search: s, Space: sp, Candidates: cs}
}

func reportJSON(t *testing.T, r *Report) string {
	t.Helper()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func runFake(t *testing.T, in Inputs, which []int, workers int) []Result {
	t.Helper()
	rs, err := Run(in.Candidates, which, fakeEval, Options{SLO: in.SLO, Search: in.Search, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// Results do not depend on the number of workers.
func TestRunWorkersIdentical(t *testing.T) {
	in := fakeInputs(t)
	r1, err := NewReport(in, runFake(t, in, nil, 1))
	if err != nil {
		t.Fatal(err)
	}
	r4, err := NewReport(in, runFake(t, in, nil, 4))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := reportJSON(t, r1), reportJSON(t, r4); a != b {
		t.Fatalf("1 and 4 workers differ:\n%s\n---\n%s", a, b)
	}
}

// A candidate that OOMs is never recommended, however fast it is, and the
// recommendation is an eligible candidate within the tie tolerance of the
// highest rate, with the fewest changes from the defaults among those.
func TestOOMNeverRecommended(t *testing.T) {
	in := fakeInputs(t)
	rep, err := NewReport(in, runFake(t, in, nil, 2))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Recommended == nil || rep.RunnerUp == nil {
		t.Fatalf("no recommendation: %s", rep.Reason)
	}
	best := 0.0
	sawOOM := false
	for _, c := range rep.Candidates {
		if c.Settings.KV.String() == "contiguous-grow" && c.Settings.Alloc.String() == "async" {
			sawOOM = true
			if c.Eligible || c.Held || c.OOMs == 0 || !strings.Contains(c.Evidence, "OOM") {
				t.Errorf("OOMing candidate: eligible %v held %v ooms %d evidence %q", c.Eligible, c.Held, c.OOMs, c.Evidence)
			}
		}
		if c.Eligible {
			if c.OOMs != 0 {
				t.Errorf("%s eligible with %d OOMs", c.Settings, c.OOMs)
			}
			best = max(best, c.SustainableRPS)
		}
	}
	if !sawOOM {
		t.Fatal("the fake has no OOMing candidate; the test would pass vacuously")
	}
	r := rep.Recommended
	if r.OOMs != 0 || !r.MeetsSLO || !rep.MeetsSLO || r.SustainableRPS*rep.TieTolerance < best*(1-1e-9) || r.Rank != 1 || rep.RunnerUp.Rank != 2 {
		t.Errorf("recommended %+v, best eligible rate %v, tolerance %v", r, best, rep.TieTolerance)
	}
	tiedBest := false
	for _, c := range rep.Candidates {
		if c.Eligible && c.SustainableRPS*rep.TieTolerance >= best*(1-1e-9) {
			if len(c.Changes) < len(r.Changes) {
				t.Errorf("%s ties the recommendation with %d changes, the recommendation has %d", c.Settings, len(c.Changes), len(r.Changes))
			}
			tiedBest = tiedBest || c.SustainableRPS == best
		}
	}
	if !tiedBest {
		t.Errorf("no candidate at the best rate %v counts as tied", best)
	}
	if rep.RunnerUp.SustainableRPS > r.SustainableRPS && rep.RunnerUp.SustainableRPS*rep.TieTolerance < r.SustainableRPS {
		t.Errorf("runner-up faster than the recommendation beyond the tolerance")
	}
}

func mkResult(i int, s Settings, rate, frag float64, peak int64, rej int) Result {
	return Result{Index: i, Candidate: Candidate{Settings: s, Group: "setup"}, SustainableRPS: rate, Held: rate > 0,
		Outcome: Outcome{FragRate: FragRate{P99: frag}, PeakReservedBytes: peak, Rejected: rej}, FailReason: "SLO"}
}

// Ties on the rate go to lower fragmentation, then lower memory, then the
// candidate index; more rejections or an oracle strategy disqualify.
func TestRankTieBreaks(t *testing.T) {
	s := func(text string) Settings {
		return Settings{KV: kv(text), Alloc: al("caching"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 0, MaxSeqs: 0, PrefixCaching: ""}
	}
	rs := []Result{
		mkResult(0, s("paged:1"), 3, 0.5, 10, 0),
		mkResult(1, s("paged:2"), 3, 0.2, 20, 0),
		mkResult(2, s("paged:3"), 3, 0.2, 15, 0),
		mkResult(3, s("paged:4"), 5, 0.9, 99, 1), // fastest, but rejects a request the others serve
		mkResult(4, s("contiguous-max:oracle"), 9, 0, 0, 0),
		mkResult(5, s("paged:6"), 3, 0.2, 15, 0),
	}
	in := Inputs{}
	for _, r := range rs {
		in.Candidates = append(in.Candidates, r.Candidate)
	}
	rep, err := NewReport(in, rs)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for rank := 1; rank <= len(rs); rank++ {
		for _, c := range rep.Candidates {
			if c.Rank == rank {
				order = append(order, fmt.Sprintf("%s:%v", c.Settings.KV, c.Eligible))
			}
		}
	}
	want := "paged:3:true paged:6:true paged:2:true paged:1:true contiguous-max:oracle:false paged:4:false"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("order %s, want %s", got, want)
	}
	if rep.Recommended.Settings.KV.String() != "paged:3" || rep.RunnerUp.Settings.KV.String() != "paged:6" || !strings.Contains(rep.Reason, "first in the sweep") {
		t.Errorf("recommended %s, runner-up %s, reason %q", rep.Recommended.Settings, rep.RunnerUp.Settings, rep.Reason)
	}
	if !strings.Contains(rep.Candidates[3].Evidence, "rejects 1 request that") {
		t.Errorf("evidence %q", rep.Candidates[3].Evidence)
	}
}

// Merging the partial results of 3 shards gives the unsharded report, byte
// for byte, whatever order the files come in.
func TestShardMerge(t *testing.T) {
	in := fakeInputs(t)
	whole, err := NewReport(in, runFake(t, in, nil, 3))
	if err != nil {
		t.Fatal(err)
	}
	var parts []*Partial
	var names []string
	for _, i := range []int{2, 0, 1} {
		p := NewPartial(in, i, 3, runFake(t, in, ShardIndices(len(in.Candidates), i, 3), 2))
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("shard-%d.json", i)
		q, err := ReadPartial(&buf, name)
		if err != nil {
			t.Fatal(err)
		}
		parts, names = append(parts, q), append(names, name)
	}
	merged, err := Merge(parts, names)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := reportJSON(t, whole), reportJSON(t, merged); a != b {
		t.Fatalf("merge differs from the unsharded run")
	}
	var ta, tb bytes.Buffer
	if err := WriteText(&ta, whole); err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&tb, merged); err != nil {
		t.Fatal(err)
	}
	if ta.String() != tb.String() || !strings.Contains(ta.String(), "Recommended: ") {
		t.Fatalf("text differs or has no recommendation:\n%s", ta.String())
	}

	// Errors name the problem and the files.
	other := in
	other.SLO.TTFTP99 = 1
	foreign := NewPartial(other, 1, 3, runFake(t, other, ShardIndices(len(other.Candidates), 1, 3), 1))
	for _, c := range []struct {
		parts []*Partial
		names []string
		want  string
	}{
		{parts[:2], names[:2], "missing shard(s) 1/3"},
		{[]*Partial{parts[0], parts[1], parts[0]}, []string{"x", "y", "z"}, "x and z are both shard 2/3"},
		{[]*Partial{parts[0], parts[1], foreign}, []string{"x", "y", "z"}, "x and z come from different inputs"},
		{nil, nil, "no shard files"},
	} {
		_, err := Merge(c.parts, c.names)
		if !errors.Is(err, ErrBadShard) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	two := NewPartial(in, 0, 2, runFake(t, in, ShardIndices(len(in.Candidates), 0, 2), 1))
	if _, err := Merge([]*Partial{parts[0], two}, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "split the sweep the same way") {
		t.Errorf("different shard counts: %v", err)
	}
}

// ReadPartial rejects damaged files with the file, byte offset or field.
func TestReadPartialErrors(t *testing.T) {
	in := fakeInputs(t)
	p := NewPartial(in, 1, 3, runFake(t, in, ShardIndices(len(in.Candidates), 1, 3), 1))
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.String()
	for _, c := range []struct {
		name, text, want string
	}{
		{"empty", "", "empty file"},
		{"binary", "\x00\x00\x00", "byte 0x00 where a JSON object should start"},
		{"array", " [1]", "byte 0x5b where a JSON object should start"},
		{"syntax", `{"format": }`, "syntax: byte 12"},
		{"type", `{"shard": "one"}`, `field "shard"`},
		{"unknown", `{"extra": 1}`, `byte 1: field "extra": unknown field`},
		{"format", strings.Replace(good, PartialFormat, "other/1", 1), `field "format"`},
		{"tampered", strings.Replace(good, `"ttft_p99_s": 2`, `"ttft_p99_s": 3`, 1), `field "digest"`},
		{"index", strings.Replace(good, `"index": 1,`, `"index": 2,`, 1), `field "results[0].index": 2 does not belong to shard 1/3`},
		{"two values", good + "{}", "more than one JSON value"},
	} {
		_, err := ReadPartial(strings.NewReader(c.text), c.name)
		if !errors.Is(err, ErrBadShard) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, c := range []struct {
		s    string
		i, n int
		ok   bool
	}{{"0/1", 0, 1, true}, {"2/4", 2, 4, true}, {"4/4", 0, 0, false}, {"-1/4", 0, 0, false}, {"1/0", 0, 0, false},
		{"1", 0, 0, false}, {"a/b", 0, 0, false}, {"1/4x", 0, 0, false}, {"01/4", 0, 0, false}} {
		i, n, err := ParseShard(c.s)
		if (err == nil) != c.ok || i != c.i || n != c.n {
			t.Errorf("%q: got %d %d %v", c.s, i, n, err)
		}
	}
}

// A shard's digest covers its inputs, not its results: a result edited by
// hand or damaged was merged as it stood, and a sustainable rate of 1e308
// (or a negative one) was recommended. ReadPartial now refuses results no
// search under the file's inputs could have written, naming the field.
func TestReadPartialImplausibleResults(t *testing.T) {
	in := fakeInputs(t)
	results := runFake(t, in, ShardIndices(len(in.Candidates), 1, 3), 1)
	held := -1
	for k, r := range results {
		if r.Held {
			held = k
			break
		}
	}
	if held < 0 {
		t.Fatal("no result held in the fake sweep")
	}
	for _, c := range []struct {
		name string
		edit func(*Result)
		want string
	}{
		{"huge rate", func(r *Result) { r.SustainableRPS, r.Multiplier = 1e308, round6(1e308/in.Search.StartRPS) }, "sustainable_rate_rps\": 1e+308 rps is outside the rates the search tries"},
		{"negative rate", func(r *Result) { r.SustainableRPS = -3 }, "sustainable_rate_rps\": -3 rps is outside"},
		{"multiplier", func(r *Result) { r.Multiplier *= 2 }, "rate_multiplier"},
		{"held without a rate", func(r *Result) { r.SustainableRPS, r.Multiplier = 0, 0 }, "held\": true with a sustainable rate of 0"},
		{"health above 1", func(r *Result) { r.HealthMin = 2 }, "health_min\": 2: want a share from 0 to 1"},
		{"negative ooms", func(r *Result) { r.OOMs = -1 }, "ooms\": -1: must not be negative"},
		{"more outcomes than requests", func(r *Result) { r.Completed = r.Total + 1 }, "fewer than ooms + rejected + unfinished + completed"},
		{"evaluations", func(r *Result) { r.Evaluations = 99 }, "evaluations\": 99: want 0 to 10"},
		// Issue 28: advise merge printed a held candidate with TPOT 1e308 s
		// and 2 OOMs. A held candidate's figures are those of a rate that
		// held; its rates are rates the search tries.
		{"held with OOMs and TPOT 1e308", func(r *Result) { r.OOMs, r.Completed, r.TPOTP99 = 2, r.Completed-2, 1e308 },
			"results[0].ooms\": the candidate held, but its figures at the sustainable rate do not: 2 OOM failures at"},
		{"held with TPOT 1e308", func(r *Result) { r.TPOTP99 = 1e308 }, "tpot_p99_s\": the candidate held, but its figures at the sustainable rate do not: SLO broken at"},
		{"held with unfinished requests", func(r *Result) { r.Unfinished, r.Completed = 1, r.Completed-1 }, "unfinished\": the candidate held"},
		{"a rate the search never tries", func(r *Result) {
			r.SustainableRPS *= 1.01
			r.Multiplier = round6(r.SustainableRPS / in.Search.StartRPS)
		}, "sustainable_rate_rps\": "},
		{"broke at the rate that held", func(r *Result) { r.FailedAtRPS, r.FailReason = r.SustainableRPS, "x" }, "failed_at_rps\": "},
		{"nothing held, nothing broke", func(r *Result) {
			r.Held, r.SustainableRPS, r.Multiplier, r.FailedAtRPS, r.FailReason = false, 0, 0, 0, ""
		}, "failed_at_rps\": 0, but nothing held"},
		{"broke without a reason", func(r *Result) { r.FailedAtRPS, r.FailReason = 2*r.SustainableRPS, "" }, "fail_reason\": "},
	} {
		rs := slices.Clone(results)
		c.edit(&rs[held])
		var buf bytes.Buffer
		if err := NewPartial(in, 1, 3, rs).Write(&buf); err != nil {
			t.Fatal(err)
		}
		_, err := ReadPartial(&buf, "s.json")
		if !errors.Is(err, ErrBadShard) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadShard saying %q", c.name, err, c.want)
		}
	}
}

// Within the search's resolution a setting with fewer changes from the
// engine's defaults beats a slightly faster one; beyond it, the faster wins.
func TestTieFewerChanges(t *testing.T) {
	base := Settings{KV: kv("paged:16"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 8192, MaxSeqs: 256, PrefixCaching: "on"}
	tuned := base
	tuned.Alloc, tuned.MaxSeqs = al("caching:expandable_segments:True"), 512
	in := Inputs{Search: DefaultSearch()}
	for _, c := range []struct {
		tunedRate float64
		want      string
	}{{3.1, base.Alloc.String()}, {3.3, tuned.Alloc.String()}} { // 3.1/3 = 1.033 (tied), 3.3/3 = 1.1
		rs := []Result{mkResult(0, tuned, c.tunedRate, 0.1, 10, 0), mkResult(1, base, 3, 0.5, 20, 0)}
		in.Candidates = []Candidate{rs[0].Candidate, rs[1].Candidate}
		rep, err := NewReport(in, rs)
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.Recommended.Settings.Alloc.String(); got != c.want {
			t.Errorf("tuned at %v rps: recommended %s, want %s (reason %q)", c.tunedRate, got, c.want, rep.Reason)
		}
		if c.want == base.Alloc.String() && (!strings.Contains(rep.Reason, "tie") || !strings.Contains(rep.Reason, "the engine's defaults")) {
			t.Errorf("tie reason %q", rep.Reason)
		}
	}
}

// With no candidate meeting the SLO, the recommendation is the best effort:
// the one nearest the binding objective, with what binds, the value it
// reached and at what rate, and advice that names the setting to change.
func TestBestEffort(t *testing.T) {
	mk := func(i int, s Settings, tpot float64) Result {
		return Result{Index: i, Candidate: Candidate{Settings: s, Group: "setup"}, FailedAtRPS: 0.05,
			FailReason: fmt.Sprintf("SLO broken at 0.05 rps: TPOT p99 %gs > 0.1s", tpot),
			Outcome:    Outcome{Completed: 10, Total: 10, TTFTP99: 0.4, TPOTP99: tpot}}
	}
	base := Settings{KV: kv("paged:16"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, Bucket: 0, Defrag: "off", MaxBatchTokens: 8192, MaxSeqs: 256, PrefixCaching: "on"}
	small := base
	small.MaxBatchTokens = 2048
	oom := base
	oom.KV = kv("contiguous-grow")
	rs := []Result{mk(0, base, 0.30), mk(1, small, 0.13), mk(2, oom, 0.05)}
	rs[2].OOMs, rs[2].Completed = 3, 7
	in := Inputs{Search: DefaultSearch(), SLO: DefaultSLO()}
	for _, r := range rs {
		in.Candidates = append(in.Candidates, r.Candidate)
	}
	rep, err := NewReport(in, rs)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Recommended
	if r == nil || rep.MeetsSLO || r.MeetsSLO || !r.Settings.Equal(small) || r.Binding != "tpot_p99_s" || r.BestValue != 0.13 || r.LowestRateRPS != 0.05 {
		t.Fatalf("best effort %+v", r)
	}
	if !strings.Contains(rep.Advice, "--slo-tpot-p99 to 130ms") || !strings.Contains(rep.Advice, "max_num_batched_tokens") {
		t.Errorf("advice %q", rep.Advice)
	}
	if rep.Candidates[2].Binding != "ooms" || rep.Candidates[2].Rank != 3 {
		t.Errorf("OOMing candidate: binding %q rank %d", rep.Candidates[2].Binding, rep.Candidates[2].Rank)
	}
	if b, _ := json.Marshal(rep); !bytes.Contains(b, []byte(`"meets_slo":false`)) || !bytes.Contains(b, []byte(`"recommended":{`)) {
		t.Errorf("JSON lacks the best effort: %.300s", b)
	}
}

// Coarse-to-fine (Options.Prune) recommends what a full search does, with
// the same runner-up, for any start rate and bisection depth, and runs no
// more simulations; every candidate it bisected is reported as the full
// search reports it.
func TestPruneSameAdvice(t *testing.T) {
	in := fakeInputs(t)
	saved := 0
	rapid.Check(t, func(rt *rapid.T) {
		in := in
		in.Search.StartRPS = rapid.Float64Range(0.05, 20).Draw(rt, "start")
		in.Search.BisectSteps = rapid.IntRange(1, 6).Draw(rt, "bisect")
		run := func(prune bool) (*Report, int) {
			rs, err := Run(in.Candidates, nil, fakeEval, Options{SLO: in.SLO, Search: in.Search, Prune: prune, Workers: 2})
			if err != nil {
				rt.Fatal(err)
			}
			rep, err := NewReport(in, rs)
			if err != nil {
				rt.Fatal(err)
			}
			n := 0
			for _, r := range rs {
				n += r.Evaluations
			}
			return rep, n
		}
		full, nFull := run(false)
		pruned, nPruned := run(true)
		idx := func(r *Result) int {
			if r == nil {
				return -1
			}
			return r.Index
		}
		if idx(full.Recommended) != idx(pruned.Recommended) || idx(full.RunnerUp) != idx(pruned.RunnerUp) {
			rt.Fatalf("full search recommends %d (runner-up %d), pruned %d (%d)", idx(full.Recommended), idx(full.RunnerUp),
				idx(pruned.Recommended), idx(pruned.RunnerUp))
		}
		if nPruned > nFull {
			rt.Fatalf("pruned ran %d simulations, the full search %d", nPruned, nFull)
		}
		saved += nFull - nPruned
		for i, a := range full.Candidates {
			b := pruned.Candidates[i]
			if b.Evaluations == a.Evaluations && (a.SustainableRPS != b.SustainableRPS || a.FailedAtRPS != b.FailedAtRPS) {
				rt.Fatalf("%s bisected in both, but reported differently", a.Settings)
			}
		}
	})
	if saved == 0 {
		t.Error("pruning never saved a simulation: the comparison is vacuous")
	}
}

// Drains: below 80% of what the rate offers, a run drained the trace
// after its arrivals ended; an unknown offer (0) never drains.
func TestOutcomeDrains(t *testing.T) {
	for _, c := range []struct {
		out, offered float64
		want         bool
	}{{1606, 5529, true}, {686, 768, false}, {790, 1000, true}, {100, 0, false}} {
		if got := (Outcome{OutputTokensPerS: c.out, OfferedTokensPerS: c.offered}).Drains(); got != c.want {
			t.Errorf("%v of %v offered: drains %v; want %v", c.out, c.offered, got, c.want)
		}
	}
}

// A rate that held at every rate tried is only the search's upper limit:
// the reason, the recommendation's line and the table say "at least" it
// and how to search further (they said "both sustain about 114 req/s").
func TestUpperLimitRate(t *testing.T) {
	base := Settings{KV: kv("paged:16"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, Defrag: "off", MaxBatchTokens: 8192, MaxSeqs: 256, PrefixCaching: "on"}
	other := base
	other.MaxBatchTokens = 4096
	rs := []Result{mkResult(0, base, 114, 0.5, 10, 0), mkResult(1, other, 114, 0.5, 10, 0)}
	rs[0].FailReason, rs[1].FailReason = "", ""
	in := Inputs{Search: DefaultSearch(), Candidates: []Candidate{rs[0].Candidate, rs[1].Candidate}}
	rep, err := NewReport(in, rs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Reason, "both sustain at least 114 req/s") || !strings.Contains(rep.Reason, "the search's upper limit: a higher --start-rate") {
		t.Errorf("reason %q", rep.Reason)
	}
	var sb strings.Builder
	if err := WriteText(&sb, rep); err != nil {
		t.Fatal(err)
	}
	text := sb.String()
	if !strings.Contains(text, "(at least 114 req/s, the engine's defaults)") || !strings.Contains(text, "  ≥ 114  ") ||
		!strings.Contains(text, "≥: held at every rate tried, the search's upper limit") {
		t.Errorf("text:\n%s", text)
	}
	rs[0].FailReason, rs[0].FailedAtRPS = "SLO broken at 120 rps", 120
	if rep, err = NewReport(in, rs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Reason, "both sustain about 114 req/s") || strings.Contains(rep.Reason, "upper limit") {
		t.Errorf("a rate that broke above: reason %q", rep.Reason)
	}
}

// The header says where the arrivals come from: the trace's own, Poisson
// at 1 req/s for a trace without times, or drawn at a benchmark run's
// request_rate (it said "as recorded" for all three).
func TestHeaderArrivals(t *testing.T) {
	s := Settings{KV: kv("paged:16"), Alloc: al("caching"), GPUMemoryUtilization: 0.9, Defrag: "off"}
	rs := []Result{mkResult(0, s, 1.2, 0.5, 10, 0)}
	for _, c := range []struct {
		arrivals string
		rate     float64
		want     string
	}{
		{"", 0, "(vidur, 1 request, 1.1 req/s as recorded)"},
		{"assigned", 0, "(vidur, 1 request, arrivals assigned: Poisson at 1 req/s, the trace has no times)"},
		{"drawn", 1, "(vidur, 1 request, arrivals drawn at the run's request_rate 1: 1.1 req/s)"},
	} {
		in := Inputs{Search: DefaultSearch(), Candidates: []Candidate{rs[0].Candidate},
			Trace: TraceInfo{Format: "vidur", Requests: 1, NativeRPS: 1.1, Arrivals: c.arrivals, RequestRate: c.rate}}
		rep, err := NewReport(in, rs)
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		if err := WriteText(&sb, rep); err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(sb.String(), "\n"); !strings.Contains(first, c.want) {
			t.Errorf("arrivals %q: header %q; want %q", c.arrivals, first, c.want)
		}
	}
}
