package advise

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
)

// FuzzReadPartial: no input makes ReadPartial panic; what it accepts
// writes back to a file it accepts again, and a complete single shard
// merges into a report.
//
//	go test ./advise -run '^$' -fuzz FuzzReadPartial -fuzztime 20s
func FuzzReadPartial(f *testing.F) {
	in := Inputs{Model: "m", GPU: "g", TP: 1, SLO: DefaultSLO(), Search: Search{StartRPS: 1, BracketSteps: 1, BisectSteps: 1},
		Space: Space{KVs: kvs("paged:16"), Allocs: als("caching"), Utils: []float64{0.9}, Buckets: []int{0}, Defrags: []string{"off"}}}
	in.Candidates, _ = in.Space.Candidates()
	res := []Result{{Index: 0, Candidate: in.Candidates[0], SustainableRPS: 2, Held: true, Evaluations: 3}}
	var buf bytes.Buffer
	if err := NewPartial(in, 0, 1, res).Write(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	// Issue 28: a held candidate with 2 OOMs and a TPOT of 1e308 s, and
	// one at a rate the search never tries.
	for _, edit := range []func(r *Result){
		func(r *Result) { r.OOMs, r.Total, r.TPOTP99 = 2, 2, 1e308 },
		func(r *Result) { r.SustainableRPS, r.Multiplier = 2.02, 2.02 },
	} {
		bad := []Result{res[0]}
		edit(&bad[0])
		buf.Reset()
		if err := NewPartial(in, 0, 1, bad).Write(&buf); err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.Clone(buf.Bytes()))
	}
	f.Add([]byte(`{"format":"gpufrag-advise-shard/1","shards":1}`))
	f.Add([]byte(`{"results":[{"index":-1}]}`))
	// Issue 28: random bytes after "{", a syntax error in the first kilobytes.
	f.Add([]byte("{\x86\xad\x05\xdc\x98\x7f\x80b0"))
	f.Add([]byte(`{"format":"gpufrag-advise-shard/1",hello`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadPartial(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if !errors.Is(err, ErrBadShard) {
				t.Fatalf("error without ErrBadShard: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := p.Write(&out); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadPartial(&out, "again.json"); err != nil {
			t.Fatalf("accepted file does not read back: %v", err)
		}
		if p.Shards == 1 {
			if _, err := Merge([]*Partial{p}, []string{"fuzz.json"}); err != nil && !errors.Is(err, ErrBadSpace) {
				t.Fatalf("merge of a complete shard: %v", err)
			}
		}
	})
}

// TestRandomBytes (issue 28, item 10): random bytes, bare or after the
// start of a shard, are refused by both readers within the first 4 KiB,
// not read to their 64 MiB limit (100 MB after "{" took advise merge
// 0.50 s and 202 MB).
func TestRandomBytes(t *testing.T) {
	for name, read := range map[string]func(io.Reader, string) error{
		"ReadPartial": func(r io.Reader, n string) error { _, err := ReadPartial(r, n); return err },
		"ReadReport":  func(r io.Reader, n string) error { _, err := ReadReport(r, n); return err },
	} {
		t.Run(name, func(t *testing.T) {
			loctest.RefusesEarly(t, read, `{"format": "gpufrag-advise-shard/1", "inputs": {"`)
		})
	}
}

// FuzzSpaceText: any flag text either parses into a valid space or is an
// error naming the flag (never a panic), and a space that parses writes
// back (KVList, AllocList) as text that parses into the same space.
//
//	go test ./advise -run '^$' -fuzz FuzzSpaceText -fuzztime 20s
func FuzzSpaceText(f *testing.F) {
	for _, s := range [][2]string{{"paged:16,paged:32", "caching,async"}, {"vmm:2MiB", "vmm:2MiB"},
		{"contiguous-max:pow2, contiguous-grow", "caching:expandable_segments:True,max_split_size_mb:128,sizeclass:8MiB/64MiB"},
		{"PAGED:16,,", "cachng"}, {"vmm:1000", "arena:0.5,buddy:0.9,min:4KiB"}, {"paged:0", ""}} {
		f.Add(s[0], s[1])
	}
	def := DefaultSpace()
	f.Fuzz(func(t *testing.T, kvs, allocs string) {
		st := SpaceText{KVs: []string{kvs}, Allocs: []string{allocs}, Utils: def.Utils, Buckets: def.Buckets, Defrags: def.Defrags}
		sp, err := st.Space(nil)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--kv") && !strings.HasPrefix(err.Error(), "--alloc") && !errors.Is(err, ErrBadSpace) {
				t.Fatalf("%q %q: error %v names no flag", kvs, allocs, err)
			}
			return
		}
		again, err := SpaceText{KVs: []string{sp.KVList()}, Allocs: []string{sp.AllocList()}, Utils: def.Utils, Buckets: def.Buckets, Defrags: def.Defrags}.Space(nil)
		if err != nil || !reflect.DeepEqual(again.KVs, sp.KVs) || again.AllocList() != sp.AllocList() {
			t.Fatalf("%q %q: parsed %s | %s, written back: %v", kvs, allocs, sp.KVList(), sp.AllocList(), err)
		}
	})
}
