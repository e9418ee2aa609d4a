package optrace_test

// Tests and benchmarks that replay traces through the real allocators
// (package alloc/registry); the rest of the tests use the toy allocator.

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/optrace"
	"github.com/gpufrag/gpufrag/optrace/synth"
)

// newOn80GiB builds allocators from specs on an 80 GiB device, as the
// command line does by default.
func newOn80GiB(s string) (alloc.Allocator, error) {
	return registry.New(s, mem.MustDevice(80*mem.GiB, 0))
}

// requireAllocators fails at once if an allocator cannot be built with
// default settings.
func requireAllocators(tb testing.TB) {
	tb.Helper()
	for _, name := range registry.Names() {
		if _, err := newOn80GiB(name); err != nil {
			tb.Fatalf("allocator %s cannot be built: %v", name, err)
		}
	}
}

// BenchmarkReplay replays a synthetic LLM-serving trace (package synth) of
// ops operations through every allocator (registry.Names) with default settings, the work
// of `gpufrag replay` on such a trace. Run as
//
//	go test ./optrace -run '^$' -bench BenchmarkReplay -benchmem -count 6
func BenchmarkReplay(b *testing.B) {
	requireAllocators(b)
	for _, n := range []int{10000} {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			c := synth.Llama3_8B()
			c.Ops = n
			ops, err := synth.GenerateServing(c)
			if err != nil {
				b.Fatal(err)
			}
			specs := registry.Names()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := optrace.ReplayAll(ops, specs, newOn80GiB); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRead parses a synthetic trace of ops operations from JSON Lines.
// Run as
//
//	go test ./optrace -run '^$' -bench BenchmarkRead -benchmem
func BenchmarkRead(b *testing.B) {
	for _, n := range []int{10000} {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			c := synth.Llama3_8B()
			c.Ops = n
			ops, err := synth.GenerateServing(c)
			if err != nil {
				b.Fatal(err)
			}
			var buf bytes.Buffer
			if err := optrace.Write(&buf, ops); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(buf.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := optrace.Read(bytes.NewReader(buf.Bytes()), "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReplayAllocators replays a synthetic serving trace through every
// allocator that exists, twice: the results must be equal (allocators are
// deterministic, which the peak metrics rely on) and consistent.
func TestReplayAllocators(t *testing.T) {
	c := synth.Llama3_8B()
	c.Ops = 3000
	ops, err := synth.GenerateServing(c)
	if err != nil {
		t.Fatal(err)
	}
	var specs []string
	for _, name := range append(registry.Names(), "caching:expandable_segments:True") {
		if _, err := newOn80GiB(name); err != nil {
			t.Logf("skipping %s: %v", name, err)
			continue
		}
		specs = append(specs, name)
	}
	first, err := optrace.ReplayAll(ops, specs, newOn80GiB)
	if err != nil {
		t.Fatal(err)
	}
	again, err := optrace.ReplayAll(ops, specs, newOn80GiB)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range first {
		if !reflect.DeepEqual(r, again[i]) {
			t.Errorf("%s: two replays differ:\n%+v\n%+v", r.Allocator, r, again[i])
		}
		if r.Allocator != specs[i] || r.Ops != len(ops) || r.AtPeak.Reserved != r.PeakReservedBytes ||
			r.End.Reserved != r.EndReservedBytes || r.End.Allocated != r.EndAllocatedBytes ||
			r.PeakAllocatedBytes < r.EndAllocatedBytes || r.PeakReservedBytes < r.EndReservedBytes ||
			(r.OOMs > 0) != (r.FirstOOM != nil) || r.SkippedOps > r.OOMs {
			t.Errorf("inconsistent result %+v", r)
		}
	}
}
