package advise

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func fakeReport(t *testing.T) *Report {
	t.Helper()
	in := fakeInputs(t)
	rep, err := NewReport(in, runFake(t, in, nil, 2))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// Refine crosses the best distinct eligible setups, in rank order, with
// every utilization and bucket.
func TestRefine(t *testing.T) {
	rep := fakeReport(t)
	sp := DefaultSpace()
	cs, err := Refine(rep, sp, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3*len(sp.Utils)*len(sp.Buckets) {
		t.Fatalf("%d candidates, want %d", len(cs), 3*len(sp.Utils)*len(sp.Buckets))
	}
	// The expected setups, straight from the ranks.
	type setup struct{ kv, alloc, defrag string }
	var want []setup
	for rank := 1; len(want) < 3; rank++ {
		for _, c := range rep.Candidates {
			s := setup{c.Settings.KV.String(), c.Settings.Alloc.String(), c.Settings.Defrag}
			if c.Rank == rank && c.Eligible && !slicesContains(want, s) {
				want = append(want, s)
			}
		}
	}
	seen := map[settingsKey]bool{}
	for i, c := range cs {
		s := want[i/(len(sp.Utils)*len(sp.Buckets))]
		if c.Group != "refine" || c.Settings.KV.String() != s.kv || c.Settings.Alloc.String() != s.alloc || c.Settings.Defrag != s.defrag || seen[c.Settings.key()] {
			t.Errorf("candidate %d: %+v, want setup %+v", i, c, s)
		}
		seen[c.Settings.key()] = true
	}
	if _, err := Refine(rep, sp, 0); !errors.Is(err, ErrBadSpace) {
		t.Errorf("top 0: %v", err)
	}
	none := *rep
	none.Candidates = nil
	if _, err := Refine(&none, sp, 3); err == nil || !strings.Contains(err.Error(), "no eligible candidate") {
		t.Errorf("nothing eligible: %v", err)
	}
}

func slicesContains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// A report reads back as written; edits are caught.
func TestReadReport(t *testing.T) {
	rep := fakeReport(t)
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadReport(bytes.NewReader(b), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if a, c := reportJSON(t, rep), reportJSON(t, got); a != c {
		t.Fatal("report does not read back unchanged")
	}
	// Edits inside the candidate list (the recommendation, written first,
	// repeats one of them).
	cands := strings.Index(string(b), `"candidates": [`)
	inCands := func(old, new string) string {
		return string(b[:cands]) + strings.Replace(string(b[cands:]), old, new, 1)
	}
	for _, c := range []struct{ name, text, want string }{
		{"empty", "", "empty file"},
		{"syntax", "{\n  \"reason\": ,", "byte 15"},
		{"none", `{"candidates": []}`, `field "candidates"`},
		{"tampered", inCands(`"preemptions": `, `"preemptions": 9`), ""},
		{"edited inputs", strings.Replace(string(b), `"gpu": "a100-80g"`, `"gpu": "h100-80g"`, 1), `field "digest"`},
		{"index", inCands(`"index": 1,`, `"index": 7,`), `field "candidates[1].index"`},
	} {
		_, err := ReadReport(strings.NewReader(c.text), c.name)
		if c.want == "" {
			// Results are not covered by the digest (only the inputs are):
			// an edited figure is read as written.
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadReport) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// FuzzReadReport: no input makes ReadReport panic, and an accepted report
// can be refined or rejected with an error, never a panic.
//
//	go test ./advise -run '^$' -fuzz FuzzReadReport -fuzztime 20s
func FuzzReadReport(f *testing.F) {
	in := Inputs{Model: "m", GPU: "g", TP: 1, SLO: DefaultSLO(), Search: Search{StartRPS: 1, BracketSteps: 1, BisectSteps: 1},
		Space: Space{KVs: kvs("paged:16"), Allocs: als("caching"), Utils: []float64{0.9}, Buckets: []int{0}, Defrags: []string{"off"}}}
	in.Candidates, _ = in.Space.Candidates()
	rep, err := NewReport(in, []Result{{Index: 0, Candidate: in.Candidates[0], SustainableRPS: 2, Held: true, Evaluations: 3}})
	if err != nil {
		f.Fatal(err)
	}
	b, _ := json.Marshal(rep)
	f.Add(b)
	f.Add([]byte(`{"candidates":[{"index":0,"rank":1}],"digest":""}`))
	// Issue 28: random bytes after "{", a syntax error in the first kilobytes.
	f.Add([]byte("{\x86\xad\x05\xdc\x98\x7f\x80b0"))
	f.Add([]byte(`{"format":"gpufrag-advise-shard/1",hello`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := ReadReport(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if !errors.Is(err, ErrBadReport) {
				t.Fatalf("error without ErrBadReport: %v", err)
			}
			return
		}
		if _, err := Refine(rep, DefaultSpace(), 2); err != nil && !errors.Is(err, ErrBadSpace) {
			t.Fatalf("refine: %v", err)
		}
	})
}
