package scenario

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
)

// TestRunAll: every config runs, results in the plan's order, the same
// whatever the number of workers, onDone once per run.
func TestRunAll(t *testing.T) {
	s := read(t, "model: llama-3.1-8b\ngpu: h100-80g\nseed: 7\nruns:\n  - {kv: \"paged:16\", alloc: caching}\n"+
		"  - {kv: contiguous-grow, alloc: caching}\n  - {kv: contiguous-max, alloc: arena}\n"+
		"workload:\n  requests: {rate: 4, count: 20, prompt: {dist: fixed, min: 500}, output: {dist: fixed, min: 50}}\n")
	p, err := Build(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var done atomic.Int64
	one, err := p.RunAll(context.Background(), 1, func() { done.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if done.Load() != 3 || len(one) != 3 {
		t.Fatalf("%d results, onDone %d times; want 3 and 3", len(one), done.Load())
	}
	for i, r := range one {
		if r.KV != p.Configs[i].KV.String() || r.RequestsCompleted == 0 {
			t.Errorf("result %d: %s on %s, %d done; want config %d's", i, r.KV, r.Allocator, r.RequestsCompleted, i)
		}
	}
	many, err := p.RunAll(context.Background(), 3, nil)
	if err != nil || !reflect.DeepEqual(one, many) {
		t.Errorf("3 workers gave other results (%v)", err)
	}
}

// TestRunAllSameError: a setting every run shares that no run accepts is
// said once, not once per run; runs that fail differently keep their own
// errors, each naming its KV strategy and allocator.
func TestRunAllSameError(t *testing.T) {
	// (Unquantized modules of 16-bit weights were the shared setting here;
	// Build refuses them now, naming the field.)
	s := read(t, "model: llama-3.1-8b\ngpu: h100-80g\nseed: 7\nengine: {gpu_memory_utilization: 0.1}\nruns:\n  - {kv: \"paged:16\", alloc: caching}\n"+
		"  - {kv: contiguous-grow, alloc: caching}\n  - {kv: contiguous-max, alloc: arena}\n"+
		"workload:\n  requests: {rate: 4, count: 20, prompt: {dist: fixed, min: 500}, output: {dist: fixed, min: 50}}\n")
	p, err := Build(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.RunAll(context.Background(), 2, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "every run (3): ") || strings.Count(err.Error(), "no memory left for the KV cache") != 1 ||
		!errors.Is(err, sim.ErrBadConfig) {
		t.Errorf("shared bad setting: %v", err)
	}
	err = sameForAll(errors.Join(&runError{"a", "b", errors.New("x")}, &runError{"c", "d", errors.New("y")}), 2)
	if err == nil || err.Error() != "run a on b: x\nrun c on d: y" {
		t.Errorf("different errors: %q", err)
	}
}
