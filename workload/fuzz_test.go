package workload_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// FuzzRead checks, for every format and for detection, that Read never
// panics; that every error is an *Error naming a line and a kind (binary
// input, over-long lines and traces without requests included); that what
// Read accepts holds valid, sorted requests; that reading the same bytes
// again gives the same trace; and that the trace survives a round trip
// through WriteJSONL. The seed corpus is the testdata fixtures under each
// format (plus testdata/fuzz/FuzzRead, where go test -fuzz saves failures).
// Run longer with
//
//	go test ./workload -run '^$' -fuzz FuzzRead -fuzztime 60s -fuzzminimizetime 1s
//
// (without -fuzzminimizetime, minimizing each new input stalls the run for
// up to a minute at 0 execs/s)
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil || filepath.Ext(file) == ".md" {
			continue
		}
		for _, fm := range append(workload.Formats(), workload.Auto) {
			f.Add(uint8(fm), data)
		}
	}
	f.Add(uint8(workload.Azure), []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6800000,100,20\n2023-11-16 18:15:47.0000000,-5,20\n"))
	f.Add(uint8(workload.JSONL), []byte("\uFEFF{\"arrival_s\":1e-3,\"prompt_tokens\":1,\"output_tokens\":0,\"session\":\"s\"}\r\n"))
	// The hostile cases of issue 13: binary input, CR-only endings, a
	// duplicate column, every row bad, mostly untimed rows, numbers that are
	// no sane count or time, more prefix ids than tokens, a header alone.
	for _, seed := range []struct {
		f    workload.Format
		data string
	}{
		{workload.Auto, "\x00\x00\x00\x00"},
		{workload.Auto, "\x1f\x8b\x08\x00"},
		{workload.Auto, "\xff\xfeT\x00"},
		{workload.Auto, "TIMESTAMP,ContextTokens,GeneratedTokens\r2023-11-16 18:15:46.68,5,20\r2023-11-16 18:15:47,6,20\r"},
		{workload.Auto, "TIMESTAMP,ContextTokens,GeneratedTokens,ContextTokens\n2023-11-16 18:15:46.68,5,20,5\n"},
		{workload.Auto, "TIMESTAMP,ContextTokens,Generated\n"},
		{workload.Azure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,-5,20\nx,1,1\n"},
		{workload.FineServe, "input_length,output_length,latency,timestamp\n5,1,0.1,0\n5,1,0.1,\n5,1,0.1,\n"},
		{workload.BurstGPT, "Timestamp,Request tokens,Response tokens\nNaN,1,1\nInf,1,1\n1e308,1,1\n-0,1,1\n"},
		{workload.Vidur, "num_prefill_tokens,num_decode_tokens\n1000000000000000000,1\n1e18,1\n"},
		{workload.Mooncake, `{"timestamp":1e308,"input_length":2,"output_length":1,"hash_ids":[1,2,3]}`},
		{workload.JSONL, `{"arrival_s":1e400,"prompt_tokens":1,"output_tokens":1,"n":1000000000000000000}`},
		{workload.Vidur, "num_prefill_tokens,num_decode_tokens\n\n"},
		// Issue 28: random bytes after a header, a NUL on line 2, a quoted line break.
		{workload.Auto, "TIMESTAMP,ContextTokens,GeneratedTokens\n\x86\xad\x05\xdc\x98\x7f\x80b0"},
		{workload.Auto, "{\x86\xad\x05\xdc\x98\x7f\x80b0"},
		{workload.VLLMBench, "\x80\x04\x86\xad\x05\xdc\x98"},
		{workload.Azure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,5,20\x00\n"},
		{workload.Azure, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,\"37\n4\",30\n"},
	} {
		f.Add(uint8(seed.f), []byte(seed.data))
	}
	f.Fuzz(func(t *testing.T, fm uint8, data []byte) {
		format := workload.Format(int(fm) % (len(workload.Formats()) + 1))
		for _, skip := range []bool{false, true} {
			opts := workload.ReadOptions{SkipBadRows: skip}
			tr, err := workload.Read(bytes.NewReader(data), "fuzz", format, opts)
			if err != nil {
				var e *workload.Error
				if !errors.As(err, &e) || e.Line < 1 || e.Err == nil {
					t.Fatalf("error %v (%T) is not an *Error with a line and a kind", err, err)
				}
				continue
			}
			if len(tr.Warnings) > workload.MaxWarnings || tr.Format == workload.Auto {
				t.Fatalf("%d warnings, format %v", len(tr.Warnings), tr.Format)
			}
			for i, r := range tr.Requests {
				if r.PromptTokens < 1 || r.PromptTokens > workload.MaxTokens || r.OutputTokens < 0 ||
					r.OutputTokens > workload.MaxTokens || r.N < 1 || r.N > workload.MaxN || r.Arrival < 0 || r.Line < 1 || r.ID == "" {
					t.Fatalf("bad request %+v", r)
				}
				if !tr.Timed && r.Arrival != 0 {
					t.Fatalf("untimed trace with arrival %+v", r)
				}
				if i > 0 {
					p := tr.Requests[i-1]
					if p.Arrival > r.Arrival || p.Arrival == r.Arrival && p.Line >= r.Line {
						t.Fatalf("not sorted: %+v then %+v", p, r)
					}
				}
			}
			again, err := workload.Read(bytes.NewReader(data), "fuzz", format, opts)
			if err != nil || !reflect.DeepEqual(tr, again) {
				t.Fatalf("second read differs: %v", err)
			}
			roundTrip(t, tr)
		}
	})
}
