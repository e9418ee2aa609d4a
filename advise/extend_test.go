package advise

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/kv/strategy"
)

// limitEval is a fake whose TPOT p99 is base plus a term that grows with
// the token budget (perToken seconds per batched token) and with the
// sequence limit (perSeq per sequence), and whose TTFT breaks above 3 rps:
// the shape that makes a smaller budget the TPOT knob.
func limitEval(base, perToken, perSeq float64) Evaluator {
	return func(s Settings, rate float64) (Outcome, error) {
		o := Outcome{Completed: 100, Total: 100, TTFTP99: 0.5,
			TPOTP99: base + perToken*float64(orValue(s.MaxBatchTokens, defaultBatchTokens)) + perSeq*float64(orValue(s.MaxSeqs, defaultSeqs))}
		if rate > 3 {
			o.TTFTP99 = 3
		}
		return o, nil
	}
}

// follow runs the default space under eval, then Follow with budget.
func follow(t *testing.T, sp Space, eval Evaluator, budget int) (Inputs, *Report) {
	t.Helper()
	cs, err := sp.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSearch()
	s.StartRPS = 1.7
	in := Inputs{Trace: TraceInfo{File: "fake.csv", SHA256: "00", Format: "azure", Requests: 100, NativeRPS: 1.7},
		Model: "llama-3.1-8b", GPU: "a100-80g", TP: 1, SLO: DefaultSLO(), Search: s, Space: sp, Candidates: cs}
	o := Options{SLO: in.SLO, Search: s, Workers: 2, Prune: true}
	rs, err := Run(cs, nil, eval, o)
	if err != nil {
		t.Fatal(err)
	}
	n := len(in.Candidates)
	in2, rs2, rep, err := Follow(in, rs, eval, o, budget, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Candidates) != n || len(rs) != n {
		t.Fatalf("Follow modified its inputs: %d candidates, %d results, want %d", len(in.Candidates), len(rs), n)
	}
	if len(rs2) != len(in2.Candidates) || len(in2.Candidates)-n > budget {
		t.Fatalf("%d results for %d candidates, %d added with a budget of %d", len(rs2), len(in2.Candidates), len(in2.Candidates)-n, budget)
	}
	for i := n; i < len(in2.Candidates); i++ {
		if c := in2.Candidates[i]; c.Group != groupExtend || !sp.InEngine(c.Settings.KV) || c.Experimental {
			t.Errorf("added candidate %d: %+v, want a stock setting of the engine in use, group extend", i, c)
		}
	}
	return in2, rep
}

// extended lists the token budgets and sequence limits the added
// candidates tried, in order.
func extended(rep *Report) (tokens, seqs []int) {
	for _, r := range rep.Candidates {
		if r.Group == groupExtend {
			tokens, seqs = append(tokens, r.Settings.MaxBatchTokens), append(seqs, r.Settings.MaxSeqs)
		}
	}
	return tokens, seqs
}

// Where nothing in the space meets TPOT p99 and the smallest token budget
// tried (2,048) came nearest, the search halves it as the advice says:
// once when 1,024 meets the objective (then recommended, saying it lies
// past the space), down to the floor vLLM allows (max_num_seqs, 256) when
// nothing does, and no further than the budget of candidates allows.
func TestFollowTokenBudget(t *testing.T) {
	// 2,048 tokens: 0.108 s; 1,024: 0.054 s.
	_, rep := follow(t, DefaultSpace(), limitEval(0, 1.0/19000, 0), DefaultExtend)
	toks, _ := extended(rep)
	if r := rep.Recommended; r == nil || !r.MeetsSLO || r.Group != groupExtend || r.Settings.MaxBatchTokens != 1024 || len(toks) != 1 {
		t.Fatalf("recommended %+v after trying %v; want the 1,024-token budget, found past the space", r, toks)
	}
	if !strings.Contains(rep.Reason, "it lies past the space") || !strings.Contains(rep.Reason, "max_num_batched_tokens 1024 (1 more candidate)") {
		t.Errorf("reason %q", rep.Reason)
	}

	// Out of reach: 0.09 s plus the budget's share misses at any budget.
	_, rep = follow(t, DefaultSpace(), limitEval(0.09, 1.0/19000, 0), DefaultExtend)
	toks, _ = extended(rep)
	if r := rep.Recommended; r == nil || r.MeetsSLO || r.Settings.MaxBatchTokens != 256 || !slices.Equal(toks, []int{1024, 512, 256}) {
		t.Fatalf("best effort %+v after trying %v; want 1,024, 512 and 256 tried, 256 the best effort", r, toks)
	}
	for _, want := range []string{"the search going on past the space to 1024, 512 and 256 (3 more candidates)",
		"256 is its floor here: vLLM needs max_num_batched_tokens >= max_num_seqs (256)"} {
		if !strings.Contains(rep.Advice, want) {
			t.Errorf("advice %q lacks %q", rep.Advice, want)
		}
	}

	// A budget of 2 stops at 512 and says so.
	_, rep = follow(t, DefaultSpace(), limitEval(0.09, 1.0/19000, 0), 2)
	toks, _ = extended(rep)
	if r := rep.Recommended; r == nil || r.Settings.MaxBatchTokens != 512 || !slices.Equal(toks, []int{1024, 512}) ||
		!strings.Contains(rep.Advice, "a smaller one may go further than --extend let the search go") {
		t.Errorf("budget 2: best effort %+v after %v, advice %q", r, toks, rep.Advice)
	}

	// Budget 0 is the sweep as it was.
	in, rep := follow(t, DefaultSpace(), limitEval(0.09, 1.0/19000, 0), 0)
	if toks, _ = extended(rep); len(toks) != 0 || rep.Recommended.Settings.MaxBatchTokens != 2048 ||
		!strings.HasSuffix(rep.Advice, "of the max_num_batched_tokens tried (2048 to 16384) the smallest came nearest: a smaller one may go further") {
		t.Errorf("budget 0: tried %v, best effort %+v, advice %q", toks, rep.Recommended, rep.Advice)
	}
	if len(in.Candidates) != 28 {
		t.Errorf("budget 0: %d candidates, want the space's 28", len(in.Candidates))
	}
}

// The sequence limit is followed the same way (fewer sequences), and a
// limit that does not move the objective is not followed, but for one
// probe below the token budgets tried where TPOT binds.
func TestFollowSeqs(t *testing.T) {
	// 128 sequences: 0.1028 s; 64: 0.0964 s.
	_, rep := follow(t, DefaultSpace(), limitEval(0.09, 0, 1.0/10000), DefaultExtend)
	_, seqs := extended(rep)
	if r := rep.Recommended; r == nil || !r.MeetsSLO || r.Settings.MaxSeqs != 64 || !slices.Equal(seqs, []int{64}) {
		t.Errorf("recommended %+v after trying max_num_seqs %v; want 64", r, seqs)
	}
	// Nothing moves TPOT: one probe of the token budget, no more.
	_, rep = follow(t, DefaultSpace(), limitEval(0.2, 0, 0), DefaultExtend)
	if toks, seqs := extended(rep); !slices.Equal(toks, []int{1024}) || !slices.Equal(seqs, []int{256}) ||
		!strings.Contains(rep.Advice, "max_num_batched_tokens does not move it (1024 to 16384 tried, all within 2%), the search going on past the space to 1024 (1 more candidate); max_num_seqs does not move it") {
		t.Errorf("flat: tried %v %v, advice %q", toks, seqs, rep.Advice)
	}
	// With --extend 0 the advice says what the probe would look for.
	_, rep = follow(t, DefaultSpace(), limitEval(0.2, 0, 0), 0)
	if !strings.Contains(rep.Advice, "max_num_batched_tokens does not move it (2048 to 16384 tried, all within 2%): the steps that set it may carry fewer tokens than that, and a smaller one may split those that carry prefills") {
		t.Errorf("flat, not followed: advice %q", rep.Advice)
	}
}

// Where the steps that set TPOT carry fewer tokens than every budget of
// the space (1,500 here), the budgets tried do not move it, and the probe
// below them finds that a smaller budget does; the search then goes on
// as for any direction.
func TestFollowProbe(t *testing.T) {
	eval := func(s Settings, rate float64) (Outcome, error) {
		o, err := limitEval(0.05, 0, 0)(s, rate)
		o.TPOTP99 += float64(min(orValue(s.MaxBatchTokens, defaultBatchTokens), 1500)) / 20000 // 2,048+: 0.125 s; 1,024: 0.101 s; 512: 0.0756 s
		return o, err
	}
	_, rep := follow(t, DefaultSpace(), eval, DefaultExtend)
	toks, _ := extended(rep)
	if r := rep.Recommended; r == nil || !r.MeetsSLO || r.Settings.MaxBatchTokens != 512 || !slices.Equal(toks, []int{1024, 512}) {
		t.Errorf("recommended %+v after trying %v; want 512 after 1,024", r, toks)
	}
}

// A report with candidates past the space reads back (the --refine file):
// its digest covers them and its ranking is the one their results give.
func TestFollowReportReadsBack(t *testing.T) {
	_, rep := follow(t, DefaultSpace(), limitEval(0.09, 1.0/19000, 0), DefaultExtend)
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(bytes.NewReader(b), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if back.Recommended.Index != rep.Recommended.Index || len(back.Candidates) != 31 {
		t.Errorf("read back: recommended %d of %d candidates, want %d of 31", back.Recommended.Index, len(back.Candidates), rep.Recommended.Index)
	}
}

// The best effort is always a setting of the engine in use: where a
// contiguous-KV candidate (another engine family) comes nearer the
// objective than any paged one, the best effort is still paged, and the
// contiguous ones say why they are not it. This fails on the ranking that
// took the nearest candidate of any family.
func TestBestEffortInEngine(t *testing.T) {
	paged := limitEval(0.09, 1.0/19000, 0)
	eval := func(s Settings, rate float64) (Outcome, error) {
		o, err := paged(s, rate)
		if s.KV.Family() == strategy.Contiguous {
			o.TPOTP99 -= 0.05 // smaller batches
		}
		return o, err
	}
	sp := stockSpace()
	_, rep := follow(t, sp, eval, 0)
	r := rep.Recommended
	if r == nil || r.MeetsSLO || r.Settings.KV.String() != "paged:16" || r.Settings.MaxBatchTokens != 2048 {
		t.Fatalf("best effort %+v; want paged:16 with 2,048 batched tokens", r)
	}
	nearer := 0
	for _, c := range rep.Candidates {
		if c.TPOTP99 < r.TPOTP99 {
			nearer++
			if sp.InEngine(c.Settings.KV) || c.Rank < r.Rank || !strings.Contains(c.Evidence, "another engine than the one in use (contiguous KV, not paged)") {
				t.Errorf("%s: TPOT %v nearer than the best effort's %v, rank %d, evidence %q", c.Settings, c.TPOTP99, r.TPOTP99, c.Rank, c.Evidence)
			}
		}
	}
	if nearer == 0 {
		t.Fatal("no candidate of another family came nearer: the test would pass vacuously")
	}
	// Followed, the search stays in the engine too.
	_, rep = follow(t, sp, eval, DefaultExtend)
	if toks, _ := extended(rep); rep.Recommended.Settings.KV.String() != "paged:16" || !slices.Equal(toks, []int{1024, 512, 256}) {
		t.Errorf("followed: best effort %s after %v", rep.Recommended.Settings, toks)
	}
}

// step keeps to vLLM's bounds: the token budget halves down to
// max_num_seqs, the sequence limit down to 1 and up to the token budget.
func TestLimitStep(t *testing.T) {
	s := Settings{KV: kv("paged:16"), MaxBatchTokens: 384, MaxSeqs: 256}
	tok, seqs := limits[0], limits[1]
	for _, c := range []struct {
		lim  limit
		s    Settings
		dir  int
		want int
		why  string
	}{
		{tok, s, -1, 256, ""},
		{tok, Settings{MaxBatchTokens: 256, MaxSeqs: 256}, -1, 0, "256 is its floor here"},
		{tok, Settings{MaxBatchTokens: 256}, -1, 0, "256 is its floor here"}, // 0: the base config's 256 sequences
		{tok, s, +1, 768, ""},
		{tok, Settings{MaxSeqs: 256}, -1, 0, ""}, // the base config's budget: unknown here
		{seqs, s, -1, 128, ""},
		{seqs, Settings{MaxBatchTokens: 8192, MaxSeqs: 1}, -1, 0, "1 is its floor"},
		{seqs, s, +1, 384, ""},
		{seqs, Settings{MaxBatchTokens: 512, MaxSeqs: 512}, +1, 0, "512 is its ceiling here"},
	} {
		got, why, ok := c.lim.step(c.s, c.dir)
		if got != c.want || ok != (c.want > 0) || !strings.HasPrefix(why, c.why) {
			t.Errorf("%s from %+v, dir %d: %d %q %v, want %d %q", c.lim.name, c.s, c.dir, got, why, ok, c.want, c.why)
		}
	}
}
