package scenario

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
)

// FuzzRead feeds arbitrary bytes to Read: it must never panic, and every
// error must wrap ErrBadScenario. What it accepts must also survive Build
// without panicking (Build may refuse it; trace files are not opened: the
// opener always fails).
//
//	go test -run '^$' -fuzz FuzzRead -fuzztime 60s ./sim/scenario/
func FuzzRead(f *testing.F) {
	f.Add(DefaultYAML())
	f.Add([]byte("model: llama-3.1-8b\ngpu: h100-80g\nruns: [{kv: 'paged:16', alloc: caching}]\n" +
		"workload:\n  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 10}, output: {dist: uniform, min: 0, max: 5}}\n"))
	f.Add([]byte("model: qwen2.5-7b\ngpu: l40s-48g\nduration: 10s\nruns: [{kv: 'vmm:2MiB', alloc: 'vmm:2MiB'}]\n" +
		"workload:\n  sessions: {rate: 1, min_turns: 1, max_turns: 3, min_user: 1, max_user: 9}\n  bucket: 16\n  beam: [1, 2]\n"))
	f.Add([]byte("model: llama-3-8b\ngpu: a100-40g\nruns: [{kv: contiguous-grow, alloc: caching, on_oom: fail}]\n" +
		"workload:\n  trace: {file: x.csv, format: vidur, rate: 2}\n"))
	f.Add([]byte("model: llama-3.1-8b\ngpu: h200-141g\nprofile: h200-141g\nweight_dtype: fp8\nunquantized: self_attn,layers.0\nengine: {name: sglang, mixed_chunk: true}\n" +
		"runs: [{kv: 'paged:16', alloc: caching}]\n" +
		"workload:\n  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n  max_concurrency: 2\n"))
	f.Add([]byte("model: llama-3.1-8b\ngpu: h100-80g\nprofile: ./p.yaml\nruns: [{kv: 'paged:16', alloc: caching}]\n" +
		"workload:\n  trace: {file: b.json, format: vllm-bench, run: 2}\n"))
	f.Add([]byte("model: llama-3-8b\ngpu: h100-80g\nengine: {name: vllm-v0, version: 0.6.0, chunked_prefill: false, num_scheduler_steps: 10}\n" +
		"runs: [{kv: 'paged:16', alloc: caching}]\n" +
		"workload:\n  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n"))
	f.Add([]byte("name: a\n---\nname: b\n"))
	f.Add([]byte("duration: 5 parsecs\n"))
	f.Add([]byte("engine: {max_seqs: [1, 2]}\n"))
	f.Add([]byte("&a [*a]\n"))
	// Issue 28: what aliases multiply, too many runs, aliases in a second
	// document, a runs list that contains itself.
	f.Add([]byte("a: &a [1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n" +
		"d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d]\n"))
	f.Add([]byte("model: llama-3.1-8b\ngpu: h100-80g\nruns: [&r {kv: 'paged:16', alloc: caching}" + strings.Repeat(", *r", MaxRuns) + "]\n"))
	f.Add([]byte("name: a\n---\nb: &b [1, 2]\nc: [*b, *b]\n"))
	f.Add([]byte("runs: &r [*r]\n"))
	f.Add([]byte("model: llama-3.1-8b\ngpu: h100-80g\nruns: [{kv: 'paged:16', alloc: caching, on_oom: retry}]\n"))
	// Issue 26: a run's specs are parsed as the file is read.
	f.Add([]byte("model: llama-3.1-8b\ngpu: h100-80g\nruns: [{kv: 'vmm:lots', alloc: caching}, {kv: [1], alloc: {a: 1}}]\n"))
	f.Add([]byte("model: llama-3.1-8b\ngpu: h100-80g\nruns: [&r {kv: 'vmm:2MiB', alloc: 'VMM:2MiB,max_range:16GiB'}, {<<: *r, alloc: slab}]\n"))
	f.Add([]byte(""))
	// Issue 28: random bytes after a first key.
	f.Add([]byte("model: \x86\xad\x05\xdc\x98\x7f\x80b0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Read(bytes.NewReader(data), "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, ErrBadScenario) {
				t.Fatalf("error %v does not wrap ErrBadScenario", err)
			}
			return
		}
		if s == nil {
			t.Fatal("nil scenario without an error")
		}
		if !safeToBuild(s) {
			return
		}
		_, _ = Build(s, func(string) (io.ReadCloser, error) { return nil, errors.New("no files in fuzzing") })
	})
}

// safeToBuild keeps the fuzzer from generating millions of requests: Build
// is bounded (maxGenerated) but slow at the bound.
func safeToBuild(s *Scenario) bool {
	if r := s.Workload.Requests; r != nil && (r.Count > 10_000 || (r.Count == 0 && r.Rate*float64(s.Duration)/1e9 > 10_000)) {
		return false
	}
	if ss := s.Workload.Sessions; ss != nil && (ss.Count > 1000 || ss.MaxTurns > 100 || (ss.Count == 0 && ss.Rate*float64(s.Duration)/1e9 > 1000)) {
		return false
	}
	return true
}

// TestReadRandomBytes (issue 28, item 10): random bytes, bare or after a
// scenario's first key, are refused within the first 4 KiB (they were read
// to MaxScenarioBytes and refused as "larger than 1048576 bytes").
func TestReadRandomBytes(t *testing.T) {
	loctest.RefusesEarly(t, func(r io.Reader, name string) error {
		_, err := Read(r, name)
		return err
	}, "model: llama-3.1-8b\ngpu: ")
}
