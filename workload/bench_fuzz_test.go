package workload_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// FuzzReadBench checks that ReadBench never panics; that every error is an
// *Error naming the file, a line and a kind; that the runs it returns are
// numbered and in file order, with finite metrics and bounded arrays; that
// each run's Trace either fails the same way or holds valid requests in
// arrival order, the same twice, that survive a round trip through
// WriteJSONL; and that Read with ReadOptions.Run gives that trace. The seed
// corpus is testdata/bench and testdata/fuzz/FuzzReadBench (hand-written
// cases: Python's literals, pretty-printed and CR-only files, several runs,
// arrays of arrays). Run longer with
//
//	go test ./workload -run '^$' -fuzz FuzzReadBench -fuzztime 60s -fuzzminimizetime 1s
func FuzzReadBench(f *testing.F) {
	files, _ := filepath.Glob("testdata/bench/*")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runs, err := workload.ReadBench(bytes.NewReader(data), "fuzz")
		if err != nil {
			checkBenchErr(t, err)
			return
		}
		if len(runs) == 0 {
			t.Fatal("no runs and no error")
		}
		for i, r := range runs {
			if r.Run != i+1 || r.Runs != len(runs) || r.Line < 1 || i > 0 && r.Line < runs[i-1].Line || r.File != "fuzz" {
				t.Fatalf("run %d: numbered %d of %d on line %d", i+1, r.Run, r.Runs, r.Line)
			}
			for m, v := range r.Metrics {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("run %d: metric %v is %v", r.Run, m, v)
				}
			}
			if math.IsNaN(r.RequestRate) || r.RequestRate < 0 || !(r.Burstiness > 0) || r.MaxConcurrency < 0 {
				t.Fatalf("run %d: setup %+v", r.Run, r)
			}
			for _, q := range r.Requests {
				if q.InputTokens < 0 || q.InputTokens > workload.MaxTokens || q.OutputTokens < 0 || q.OutputTokens > workload.MaxTokens ||
					math.IsNaN(q.TTFT) || q.TTFT < 0 {
					t.Fatalf("run %d: request %+v", r.Run, q)
				}
			}
			tr, err := r.Trace()
			again, err2 := r.Trace()
			if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
				t.Fatalf("run %d: two traces differ: %v, %v", r.Run, err, err2)
			}
			read, err3 := workload.Read(bytes.NewReader(data), "fuzz", workload.VLLMBench, workload.ReadOptions{Run: r.Run})
			if err != nil {
				checkBenchErr(t, err)
				if err3 == nil || err3.Error() != err.Error() {
					t.Fatalf("run %d: Trace: %v; Read: %v", r.Run, err, err3)
				}
				continue
			}
			if err3 != nil || !reflect.DeepEqual(tr.Requests, read.Requests) || !reflect.DeepEqual(tr, again) {
				t.Fatalf("run %d: Read gives another trace (%v)", r.Run, err3)
			}
			if tr.Format != workload.VLLMBench || !tr.Timed || tr.MaxConcurrency != r.MaxConcurrency || len(tr.Warnings) > workload.MaxWarnings {
				t.Fatalf("run %d: trace %v, timed %v, cap %d, %d warnings", r.Run, tr.Format, tr.Timed, tr.MaxConcurrency, len(tr.Warnings))
			}
			for j, q := range tr.Requests {
				if q.PromptTokens < 1 || q.PromptTokens > workload.MaxTokens || q.OutputTokens < 0 || q.OutputTokens > workload.MaxTokens ||
					q.N != 1 || q.Arrival < 0 || q.Line < 1 || q.ID == "" {
					t.Fatalf("run %d: bad request %+v", r.Run, q)
				}
				if j > 0 {
					p := tr.Requests[j-1]
					if p.Arrival > q.Arrival || p.Arrival == q.Arrival && p.Line >= q.Line {
						t.Fatalf("run %d: not sorted: %+v then %+v", r.Run, p, q)
					}
				}
			}
			roundTrip(t, tr)
		}
	})
}

func checkBenchErr(t *testing.T, err error) {
	t.Helper()
	var e *workload.Error
	if !errors.As(err, &e) || e.Line < 1 || e.Err == nil || e.File != "fuzz" {
		t.Fatalf("error %v (%T) is not an *Error with the file, a line and a kind", err, err)
	}
}
