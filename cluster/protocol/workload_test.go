package protocol

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
)

// TestRankTree checks removal by rank against deleting from a slice, the
// way Workload trimmed its list before.
func TestRankTree(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 100, 1000} {
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		ref := make([]int, n)
		for i := range ref {
			ref[i] = i
		}
		tr := newRankTree(n)
		for len(ref) > 0 {
			k := rng.IntN(len(ref))
			if got := tr.remove(k); got != ref[k] {
				t.Fatalf("n=%d: remove(%d) = %d, want %d", n, k, got, ref[k])
			}
			ref = slices.Delete(ref, k, k+1)
			if tr.n != len(ref) {
				t.Fatalf("n=%d: %d left, want %d", n, tr.n, len(ref))
			}
		}
	}
}

// TestWorkloadTrimsLargeList trims a list far above the target (the
// quadratic case before the rank tree): the kept pods keep their shuffled
// order and the demand lands just under the target.
func TestWorkloadTrimsLargeList(t *testing.T) {
	pods := make([]cluster.Pod, 20000)
	for i := range pods {
		name := string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		pods[i] = cluster.Pod{Name: name, MilliCPU: 1000, MemoryMiB: 1024, NumGPU: 1, MilliGPU: cluster.MilliGPU}
	}
	w := Workload(pods, 100*cluster.MilliGPU, 1.3, false, rand.New(rand.NewPCG(1, 1)))
	if len(w) != 130 {
		t.Fatalf("%d pods kept, want 130 (1.3 x 100 GPUs of one-GPU pods)", len(w))
	}
	seen := map[string]bool{}
	for _, p := range w {
		if seen[p.Name] {
			t.Fatalf("pod %s kept twice", p.Name)
		}
		seen[p.Name] = true
	}
}
