package kube

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/internal/snaptest"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
)

func readFixture(t *testing.T) *Snapshot { return readTestdata(t, "cluster.json") }

// readTestdata reads testdata/name or fails the test.
func readTestdata(t *testing.T, name string) *Snapshot {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Read(f, name)
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

// nodeJSON is a Node object with 8 CPUs and gpu of nvidia.com/gpu.
func nodeJSON(name, gpu string) string {
	return `{"kind":"Node","metadata":{"name":"` + name + `"},"status":{"allocatable":{"cpu":"8","nvidia.com/gpu":"` + gpu + `"}}}`
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"kind":"List","items":[{"kind":"Node","metadata":{"name":"n"},"status":{"allocatable":{"cpu":"x"}}}]}`, `field "items[0]": cpu: "x" is not a non-negative quantity`},
		{`{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"p","annotations":{"alibabacloud.com/gpu-milli":"2000"}}}]}`, `want 0 to 1000`},
		{`not json`, `x.json: starts with "not json": want a kubectl List`},
		// Issue 13, case 16: documents that are no kubectl List.
		{`null`, `x.json: starts with null: want a kubectl List (kubectl get nodes,pods -A -o json > cluster.json) or one Node or Pod object`},
		{` [{"kind":"Node"}]`, `x.json: starts with an array: want a kubectl List`},
		{"\x00\x00", `x.json: starts with a NUL byte (binary data, not JSON): want`},
		{``, `x.json: empty input: want a kubectl List`},
		{`{}`, `x.json: field "kind": missing: want a kubectl List`},
		{`{"kind":"Service","metadata":{"name":"s"}}`, `x.json: field "kind": is "Service": want a kubectl List`},
		{`{"kind":"List","items":[{"metadata":{"name":"n"}}]}`, `x.json: field "items[0].kind": missing: every object of a kubectl List has a kind`},
		{`{"kind":"List","items":[]}`, `x.json: no Node: inspection needs the nodes with their pods; save both with kubectl get nodes,pods -A -o json`},
		{`{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"p"}}]}`, `x.json: no Node: inspection needs the nodes`},
		{`{"kind":"Pod","metadata":{"name":"p"}}`, `x.json: a single Pod, no Node: inspection needs the nodes`},
		{`{"kind":"List","items":[` + "\n" + `{"kind":"Node"`, `x.json: field "items[0]": ends inside the document`},
		{`{"kind":"List","items":[]} {}`, `x.json: more than one JSON value (another follows the first, which ends at byte 26)`},
		{`{"kind":"List","items":{}}`, `x.json: field "items": is an object, want an array`},
		// Case 17: accepted but invalid.
		{`{"kind":"List","items":[` + nodeJSON("a", "1") + `,` + nodeJSON("b", "1") + `,` + nodeJSON("a", "2") + `]}`,
			`x.json: field "items[2]": node "a": listed twice (also items[0])`},
		{`{"kind":"List","items":[` + nodeJSON("a", "1") + `,{"kind":"Pod","metadata":{"name":"p","namespace":"ml"}},{"kind":"Pod","metadata":{"name":"p","namespace":"ml"}}]}`,
			`x.json: field "items[2]": pod "ml/p": listed twice (also items[1])`},
		{`{"kind":"List","items":[` + nodeJSON("a", "1.5") + `]}`,
			`x.json: field "items[0]": node "a": status.allocatable: nvidia.com/gpu: "1.5" is not a whole number of GPUs (extended resources take integers; a share of a GPU goes in the alibabacloud.com/gpu-milli annotation)`},
		{`{"kind":"List","items":[` + nodeJSON("a", "1") + `,{"kind":"Pod","metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[{},{"resources":{"requests":{"nvidia.com/gpu":"500m"}}}]}}]}`,
			`x.json: field "items[1]": pod "ml/p": spec.containers[1].resources.requests: nvidia.com/gpu: "500m" is not a whole number of GPUs`},
		{`{"kind":"List","items":[` + nodeJSON("a", "1") + `,{"kind":"Pod","metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[{"resources":{"requests":{"nvidia.com/gpu":"1k"}}}]}}]}`,
			`x.json: field "items[1]": pod "ml/p": asks for 1000 nvidia.com/gpu, more than any node has (at most 64, cluster.MaxGPUsPerNode)`},
		{`{"kind":"List","items":[` + nodeJSON("a", "1") + `,{"kind":"Pod","metadata":{"name":"p","namespace":"ml","annotations":{"alibabacloud.com/gpu-milli":"500","alibabacloud.com/gpu-count":"2"}}}]}`,
			`pod "ml/p": annotations alibabacloud.com/gpu-count=2 and alibabacloud.com/gpu-milli=500: only a pod of one GPU shares it`},
		{`{"kind":"List","items":[` + nodeJSON("a", "1") + `,{"kind":"Pod","metadata":{"name":"p","namespace":"ml","annotations":{"alibabacloud.com/gpu-milli":"500","alibabacloud.com/gpu-index":"1-1"}}}]}`,
			`pod "ml/p": annotation alibabacloud.com/gpu-index="1-1": GPU 1 named twice`},
		{`{"kind":"List","items":[` + nodeJSON("a", "1") + `,{"kind":"Pod","metadata":{"namespace":"ml"}}]}`, `field "items[1]": pod without a name (metadata.name)`},
		{`{"kind":"List","items":[` + nodeJSON(strings.Repeat("n", 200), "1.5") + `]}`, `node "` + strings.Repeat("n", 64) + `"… (200 bytes): status.allocatable`},
	} {
		_, err := Read(strings.NewReader(tc.in), "x.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, cluster.ErrBadInput) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestReadNoNodesIs checks the kind of a list without nodes.
func TestReadNoNodesIs(t *testing.T) {
	_, err := Read(strings.NewReader(`{"kind":"PodList","items":[]}`), "pods.json")
	if !errors.Is(err, ErrNoNodes) || !errors.Is(err, cluster.ErrBadInput) {
		t.Errorf("err = %v, want ErrNoNodes and cluster.ErrBadInput", err)
	}
}

// TestReadBounds checks the bounds of Read (lowered for the test) and that
// an endless stream of zeros (/dev/zero) is refused at its first byte.
func TestReadBounds(t *testing.T) {
	r := &testkit.Counter{R: testkit.Repeat("\x00")}
	if _, err := Read(r, "/dev/zero"); err == nil || !errors.Is(err, cluster.ErrBadInput) || !strings.Contains(err.Error(), "NUL byte") {
		t.Errorf("zeros: %v", err)
	}
	if r.N > 2*readChunk {
		t.Errorf("read %d bytes of zeros before refusing them", r.N)
	}
	defer func(old struct{ total, object int64 }) { limits = old }(limits)
	limits.object = 1000
	big := `{"kind":"List","items":[` + nodeJSON("a", "1") + `,{"kind":"Pod","metadata":{"name":"` + strings.Repeat("p", 200_000) + `"}}]}`
	_, err := Read(strings.NewReader(big), "x.json")
	if err == nil || !strings.Contains(err.Error(), `x.json: field "items[1]": one object longer than 1000 bytes (kube.MaxObjectBytes)`) {
		t.Errorf("big object: %v", err)
	}
	limits.object, limits.total = MaxObjectBytes, 300_000
	many := `{"kind":"List","items":[` + nodeJSON("a", "1") + strings.Repeat(`,{"kind":"Service"}`, 20_000) + `]}`
	_, err = Read(strings.NewReader(many), "x.json")
	if err == nil || !strings.Contains(err.Error(), "longer than 300000 bytes (kube.MaxReadBytes)") {
		t.Errorf("long input: %v", err)
	}
}

// TestRandomBytes (issue 28, item 10): random bytes without NUL, bare or
// after the start of a kubectl list, are refused within the first read.
func TestRandomBytes(t *testing.T) {
	loctest.RefusesEarly(t, func(r io.Reader, name string) error {
		_, err := Read(r, name)
		if err != nil && !errors.Is(err, cluster.ErrBadInput) {
			t.Errorf("%v does not wrap cluster.ErrBadInput", err)
		}
		return err
	}, `{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "`)
}

// TestInspectNoPods is case 15 of issue 13: a cluster without pods lists
// every GPU node, all whole-free, and no fragmentation.
func TestInspectNoPods(t *testing.T) {
	in := `{"kind":"List","items":[` + nodeJSON("a", "4") + `,` + nodeJSON("b", "2") + `,{"kind":"Node","metadata":{"name":"c"},"status":{"allocatable":{"cpu":"8"}}}]}`
	s, err := Read(strings.NewReader(in), "x.json")
	if err != nil {
		t.Fatal(err)
	}
	r := Inspect(s, cluster.DefaultCoverage)
	if r.Nodes != 3 || r.GPUNodes != 2 || r.GPUs != 6 || r.WholeFreeNodes != 2 || r.PartlyUsedNodes != 0 || len(r.PerNode) != 2 {
		t.Errorf("report %+v: want 3 nodes, 2 GPU nodes listed, both whole-free", r)
	}
	if r.FragMilli != 0 || r.StrandedNodes != 0 || r.TaskTypes != 0 || r.RequestedMilli != 0 {
		t.Errorf("report %+v: want no fragmentation, no task types, nothing requested", r)
	}
	for _, n := range r.PerNode {
		if n.WholeFreeGPUs != n.GPUs || n.Stranded {
			t.Errorf("node %+v: want all GPUs whole free, not stranded", n)
		}
	}
}

// Names are read exactly as the file has them, control characters and all:
// printing them escaped is the report's job (untrusted.Printable, TestHostileNames
// in cmd/gpufrag/internal/cli), and --json keeps them exact.
func TestReadHostileNames(t *testing.T) {
	s := readTestdata(t, "hostile.json")
	if len(s.Nodes) != 1 || s.Nodes[0].Name != "gpu-"+snaptest.Hostile || s.Nodes[0].Model != "A100\n"+snaptest.Hostile {
		t.Errorf("nodes %+v", s.Nodes)
	}
	r := Inspect(s, cluster.DefaultCoverage)
	if len(r.Pending) != 1 || r.Pending[0].Pod != "ml/big-"+snaptest.Hostile || !strings.Contains(r.Pending[0].Shape, "T4\n"+snaptest.Hostile) {
		t.Errorf("pending %+v", r.Pending)
	}
}

// FuzzRead: Read never panics; it fails with a bad-input error or gives a
// snapshot with nodes, unique node and pod names and whole GPU counts, and
// Inspect of it does not panic either. Seeds: the fixtures (names full of
// control characters in hostile.json) and the hostile documents of issue
// 13.
//
//	go test -run XXX -fuzz FuzzRead -fuzztime 20s ./cluster/kube/
func FuzzRead(f *testing.F) {
	for _, file := range []string{"testdata/cluster.json", "testdata/hostile.json"} {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`null`, `[]`, `{}`, "\x00\x00\x00", `{"kind":"Service"}`, `{"kind":"List","items":null}`,
		`{"kind":"List","items":[` + nodeJSON("a", "1") + `,` + nodeJSON("a", "1") + `]}`,
		`{"kind":"List","items":[` + nodeJSON("a", "1.5") + `]}`,
		`{"kind":"List","items":[` + nodeJSON("a", "2") + `,{"kind":"Pod","metadata":{"name":"p","annotations":{"alibabacloud.com/gpu-milli":"250","alibabacloud.com/gpu-index":"1"}},"spec":{"nodeName":"a"}}]}`,
		nodeJSON("a", "8"),
		`{"kind":"List","items":[` + nodeJSON("a", "1") + `]} {}`,
		`{"items":[` + nodeJSON("a", "1") + `],"kind":"NodeList","kind":"Node"}`,
		// Issue 28: random bytes after "{" and after the list's start.
		"{\x86\xad\x05\xdc\x98\x7f\x80b0", `{"kind":"List","items":[{"kind":"Node",hello`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Read(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if !errors.Is(err, cluster.ErrBadInput) {
				t.Fatalf("error does not wrap cluster.ErrBadInput: %v", err)
			}
			return
		}
		if len(s.Nodes) == 0 {
			t.Fatal("accepted a snapshot without nodes")
		}
		seen := map[string]bool{}
		for _, n := range s.Nodes {
			if seen[n.Name] || n.Name == "" || n.GPUs < 0 || n.GPUs > cluster.MaxGPUsPerNode {
				t.Fatalf("accepted node %+v (duplicate, unnamed or out of range)", n)
			}
			seen[n.Name] = true
		}
		pods := map[string]bool{}
		for _, p := range s.Pods {
			key := p.Namespace + "/" + p.Name
			if pods[key] || p.Name == "" || p.NumGPU < 0 || p.NumGPU > cluster.MaxGPUsPerNode || p.MilliGPU < 0 || p.MilliGPU > cluster.MilliGPU {
				t.Fatalf("accepted pod %+v", p)
			}
			pods[key] = true
		}
		Inspect(s, cluster.DefaultCoverage)
	})
}
