package kube

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
)

func readFixture(t *testing.T) *Snapshot {
	t.Helper()
	f, err := os.Open("testdata/cluster.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Read(f, "cluster.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRead(t *testing.T) {
	s := readFixture(t)
	if len(s.Nodes) != 4 || len(s.Pods) != 6 { // done-0 (Succeeded) is left out
		t.Fatalf("%d nodes, %d pods", len(s.Nodes), len(s.Pods))
	}
	// Sorted by name: cpu-a, gpu-a, gpu-b, gpu-c.
	a := s.Nodes[1]
	if a.Name != "gpu-a" || a.MilliCPU != 64000 || a.MemoryMiB != 262144 || a.GPUs != 4 || a.Model != "A100" {
		t.Errorf("gpu-a: %+v", a)
	}
	if b := s.Nodes[2]; b.GPUs != 2 || b.Model != "T4" || b.MilliCPU != 32000 {
		t.Errorf("gpu-b: %+v", b)
	}
	if !s.Cordoned["gpu-c"] || s.Cordoned["gpu-a"] {
		t.Errorf("cordoned: %v", s.Cordoned)
	}
	byName := map[string]PodState{}
	for _, p := range s.Pods {
		byName[p.Name] = p
	}
	if p := byName["infer-0"]; p.NumGPU != 1 || p.MilliGPU != 500 || len(p.GPUIndex) != 1 || p.GPUIndex[0] != 1 || p.Node != "gpu-b" {
		t.Errorf("infer-0: %+v", p)
	}
	// Two containers: 500m + 500m CPU.
	if p := byName["web-0"]; p.MilliCPU != 1000 || p.NumGPU != 0 || p.MemoryMiB != 1024 {
		t.Errorf("web-0: %+v", p)
	}
	if p := byName["t4-0"]; len(p.GPUSpec) != 1 || p.GPUSpec[0] != "T4" || p.NumGPU != 1 || p.MilliGPU != 1000 {
		t.Errorf("t4-0: %+v", p)
	}
}

func TestInspect(t *testing.T) {
	r := Inspect(readFixture(t), cluster.DefaultCoverage)
	// GPU nodes gpu-a (4), gpu-b (2), gpu-c (4): 10 GPUs; requested:
	// train-0 2000 on gpu-a, infer-0 500 on gpu-b.
	if r.GPUNodes != 3 || r.GPUs != 10 || r.RequestedMilli != 2500 {
		t.Errorf("gpu nodes %d, GPUs %d, requested %d", r.GPUNodes, r.GPUs, r.RequestedMilli)
	}
	// gpu-c is idle (whole-free); gpu-a and gpu-b partly used.
	if r.WholeFreeNodes != 1 || r.PartlyUsedNodes != 2 {
		t.Errorf("whole-free %d, partly used %d", r.WholeFreeNodes, r.PartlyUsedNodes)
	}
	var b NodeReport
	for _, n := range r.PerNode {
		if n.Name == "gpu-b" {
			b = n
		}
	}
	if b.WholeFreeGPUs != 1 || b.FreeCPUMilli != 28000 || b.Pods != 1 {
		t.Errorf("gpu-b: %+v", b)
	}
	if len(r.Pending) != 3 {
		t.Fatalf("pending %+v", r.Pending)
	}
	for _, p := range r.Pending {
		switch p.Pod {
		case "ml/train-1": // 2 GPUs free on gpu-a; gpu-c is cordoned
			if p.Fits != 1 || p.Reason != "" {
				t.Errorf("train-1: %+v", p)
			}
		case "ml/big-0": // 8 GPUs: no node has that many
			if p.Fits != 0 || !strings.Contains(p.Reason, "0/4 nodes fit") || !strings.Contains(p.Reason, "fewer GPUs than asked") {
				t.Errorf("big-0: %+v", p)
			}
		case "ml/t4-0": // 40 cores on the 32-core T4 node
			if p.Fits != 0 || !strings.Contains(p.Reason, "Insufficient cpu") {
				t.Errorf("t4-0: %+v", p)
			}
		}
	}
	if len(r.Unplaceable) != 0 {
		t.Errorf("unplaceable: %v", r.Unplaceable)
	}
	if r.FragTotal < 0 || r.FragTotal > 1 || r.FragRate < r.FragTotal {
		t.Errorf("frag total %v rate %v", r.FragTotal, r.FragRate)
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"kind":"List","items":[{"kind":"Node","metadata":{"name":"n"},"status":{"allocatable":{"cpu":"x"}}}]}`, `field "items[0]": cpu: "x" is not a non-negative quantity`},
		{`{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"p","annotations":{"alibabacloud.com/gpu-milli":"2000"}}}]}`, `want 0 to 1000`},
		{`not json`, `invalid character`},
	} {
		_, err := Read(strings.NewReader(tc.in), "x.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, cluster.ErrBadInput) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}
