package scenario

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/gpufrag/gpufrag/workload"
)

// TestTraceAt: the requests TraceAt makes are those Build makes for a
// workload.trace section with the same rate, bucket and seed, for a timed
// trace (rescaled) and an untimed one (Poisson arrivals from the seed's
// arrival stream), and the trace it reads is left as it was.
func TestTraceAt(t *testing.T) {
	timed := "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
		"2023-11-16 18:15:46.0000000,374,44\n" +
		"2023-11-16 18:15:47.5000000,1200,10\n" +
		"2023-11-16 18:15:49.0000000,80,3\n"
	untimed := "num_prefill_tokens,num_decode_tokens\n374,44\n1200,10\n80,3\n511,7\n"
	open := memOpener(map[string]string{"conv.csv": timed, "len.csv": untimed})
	for _, c := range []struct {
		file, format string
		rate         float64
		bucket       int
		seed         uint64
	}{
		{"conv.csv", "azure", 0, 0, 0},
		{"conv.csv", "azure", 3.5, 0, 0},
		{"conv.csv", "azure", 0.25, 256, 7},
		{"len.csv", "vidur", 1, 0, 1},
		{"len.csv", "vidur", 2.5, 64, 42},
	} {
		name := fmt.Sprintf("%s rate %v bucket %d seed %d", c.file, c.rate, c.bucket, c.seed)
		doc := fmt.Sprintf("model: llama-3.1-8b\ngpu: h100-80g\nseed: %d\nruns: [{kv: 'paged:16', alloc: caching}]\n"+
			"workload:\n  bucket: %d\n  trace: {file: %s, format: %s, rate: %v}\n", c.seed, c.bucket, c.file, c.format, c.rate)
		p, err := Build(read(t, doc), open)
		if err != nil {
			t.Fatalf("%s: Build: %v", name, err)
		}
		tr, _, err := ReadTrace(&Trace{File: c.file, Format: c.format}, open)
		if err != nil {
			t.Fatal(err)
		}
		before := slices.Clone(tr.Requests)
		got, err := TraceAt(tr, c.rate, c.bucket, c.seed)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, p.Requests) {
			t.Errorf("%s: TraceAt %+v, Build %+v", name, got, p.Requests)
		}
		if !reflect.DeepEqual(tr.Requests, before) {
			t.Errorf("%s: the trace read was modified", name)
		}
	}
	// Drawn once at 1 rps and rescaled: the same as rescaling the drawn
	// trace by hand (what advise does with an untimed trace).
	tr, _, err := ReadTrace(&Trace{File: "len.csv", Format: "vidur"}, open)
	if err != nil {
		t.Fatal(err)
	}
	once, err := TraceAt(tr, 1, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	drawn := &workload.Trace{Name: "len.csv", Timed: true, Requests: once}
	got, err := TraceAt(drawn, 4, 64, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := &workload.Trace{Name: "len.csv", Timed: true, Requests: slices.Clone(once)}
	if err := workload.Bucket(want, 64); err != nil {
		t.Fatal(err)
	}
	if err := workload.Rescale(want, 4); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want.Requests) {
		t.Errorf("drawn then rescaled: %+v, want %+v", got, want.Requests)
	}
	for _, c := range []struct {
		rate   float64
		bucket int
	}{{-1, 0}, {1, -5}} {
		if _, err := TraceAt(tr, c.rate, c.bucket, 1); err == nil {
			t.Errorf("rate %v bucket %d: no error", c.rate, c.bucket)
		}
	}
}
