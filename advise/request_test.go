package advise

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// smallRequest is a request of two candidates (paged:16 and paged:32 on
// the caching allocator) on the first 30 rows of testdata/small_azure.csv,
// with a short search.
func smallRequest(t *testing.T) Request {
	t.Helper()
	path := filepath.Join("testdata", "small_azure.csv")
	base, _ := traceSetup(t, path, 30, nil, "llama-2-13b", "l40s-48g")
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	tr, err := workload.Read(fh, "small_azure.csv", workload.Auto, workload.ReadOptions{MaxRows: 30})
	if err != nil {
		t.Fatal(err)
	}
	sp := Space{KVs: kvs("paged:16", "paged:32"), Allocs: als("caching"), Utils: []float64{0.9}, Buckets: []int{0},
		Defrags: []string{"off"}, PrefixCaching: []string{"on", "off"}}
	return Request{
		Trace: tr,
		Inputs: Inputs{Trace: TraceInfo{File: "small_azure.csv", SHA256: "abc"}, Model: "llama-2-13b", GPU: "l40s-48g", TP: 1,
			SLO: DefaultSLO(), Search: Search{BracketSteps: 2, BisectSteps: 1}, Space: sp},
		Base: base,
	}
}

// TestAdvise: Advise draws the candidates (prefix caching off left out on
// a trace without prefix ids, unless the user gave it), searches them and
// returns the report; with PartialOnly it hands the shard's partial result
// to the hook and returns no report; bad requests and refinements of
// another run come back as their error types.
func TestAdvise(t *testing.T) {
	req := smallRequest(t)
	var planned Inputs
	var run []int
	var done atomic.Int32 // Done is called from the worker goroutines
	rep, err := Advise(req, Hooks{Planned: func(in Inputs, r []int) { planned, run = in, r }, Done: func() { done.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(planned.Candidates) != 2 || !slices.Equal(run, []int{0, 1}) || done.Load() != 2 {
		t.Fatalf("planned %d candidates, ran %v, %d done; want 2, [0 1], 2", len(planned.Candidates), run, done.Load())
	}
	if got := rep.Inputs.Space.PrefixCaching; !slices.Equal(got, []string{"on"}) {
		t.Errorf("prefix caching %v on a trace without prefix ids, want [on]", got)
	}
	if rep.Inputs.Trace.Requests != 30 || !(rep.Inputs.Search.StartRPS > 0) || rep.Inputs.Search.StartRPS != rep.Inputs.Trace.NativeRPS {
		t.Errorf("inputs not filled from the trace: %+v, search %+v", rep.Inputs.Trace, rep.Inputs.Search)
	}

	given := req
	given.PrefixCachingGiven = true
	given.Inputs.Search.StartRPS = 1
	var gin Inputs
	if _, err := Advise(given, Hooks{Planned: func(in Inputs, _ []int) { gin = in }}); err != nil {
		t.Fatal(err)
	}
	if len(gin.Candidates) != 4 || gin.Search.StartRPS != 1 {
		t.Errorf("with prefix caching given: %d candidates, start %v; want 4 (off for each KV too), 1", len(gin.Candidates), gin.Search.StartRPS)
	}

	shard := req
	shard.Shard, shard.Shards, shard.PartialOnly = 1, 2, true
	var part *Partial
	rep, err = Advise(shard, Hooks{Partial: func(p *Partial) error { part = p; return nil }})
	if err != nil || rep != nil {
		t.Fatalf("PartialOnly: report %v, error %v; want neither", rep, err)
	}
	if part == nil || part.Shard != 1 || part.Shards != 2 || len(part.Results) != 1 {
		t.Fatalf("partial result %+v, want shard 1/2 with one result", part)
	}

	bad := req
	bad.Inputs.Search.BisectSteps = 99
	var be *BadRequestError
	if _, err := Advise(bad, Hooks{}); !errors.As(err, &be) {
		t.Errorf("bisect steps 99: error %v, want a BadRequestError", err)
	}

	other := req
	other.Refine = &Report{Inputs: Inputs{Trace: TraceInfo{File: "other.csv", SHA256: "def"}, Model: "llama-2-13b", GPU: "l40s-48g", TP: 1}}
	var re *RefineError
	if _, err := Advise(other, Hooks{}); !errors.As(err, &re) || !strings.Contains(err.Error(), "advice for other.csv") {
		t.Errorf("refining another trace's advice: error %v, want a RefineError naming it", err)
	}
}
