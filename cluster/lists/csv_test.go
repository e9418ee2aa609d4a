package lists

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
)

// sharedData returns the path of a file of the shared openb trace, or
// skips the test when the shared data folder is absent (a clone alone).
func sharedData(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "data", "openb", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared trace %s not present (%v): this test needs ../shared/data/openb next to the repository", name, err)
	}
	return p
}

func readNodesFile(t testing.TB, path string) []cluster.Node {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	nodes, err := ReadNodesCSV(f, filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

func readPodsFile(t testing.TB, path string) []cluster.Pod {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pods, err := ReadPodsCSV(f, filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

func TestReadNodesCSV(t *testing.T) {
	five := "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,32000,131072,0,\n"
	got, err := ReadNodesCSV(strings.NewReader(five), "five.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []cluster.Node{{Name: "n0", MilliCPU: 64000, MemoryMiB: 262144, GPUs: 2, Model: "P100"}, {Name: "n1", MilliCPU: 32000, MemoryMiB: 131072, GPUs: 0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("5 columns: got %+v, want %+v", got, want)
	}
	// The 4-column variant names no model: GPUs are all of one kind.
	four := "sn,cpu_milli,memory_mib,gpu\nn0,64000,262144,2\n"
	got, err = ReadNodesCSV(strings.NewReader(four), "four.csv")
	if err != nil {
		t.Fatal(err)
	}
	if want := []cluster.Node{{Name: "n0", MilliCPU: 64000, MemoryMiB: 262144, GPUs: 2, Model: "gpu"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("4 columns: got %+v, want %+v", got, want)
	}
}

func TestReadPodsCSV(t *testing.T) {
	// Each pod keeps its line, blank lines counted (the warnings name it).
	five := "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,12000,16384,1,460\n\np1,88000,1024,8,1000\np2,4000,100,0,0\n"
	got, err := ReadPodsCSV(strings.NewReader(five), "five.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []cluster.Pod{
		{Name: "p0", MilliCPU: 12000, MemoryMiB: 16384, NumGPU: 1, MilliGPU: 460, Line: 2},
		{Name: "p1", MilliCPU: 88000, MemoryMiB: 1024, NumGPU: 8, MilliGPU: 1000, Line: 4},
		{Name: "p2", MilliCPU: 4000, MemoryMiB: 100, Line: 5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("5 columns: got %+v, want %+v", got, want)
	}
	eleven := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
		"p0,6000,12288,1,460,T4|P100,LS,Running,427061,12902960,427061\n" +
		"p1,11908,47104,1,1000,,BE,Pending,10001278,10001403,\n"
	got, err = ReadPodsCSV(strings.NewReader(eleven), "eleven.csv")
	if err != nil {
		t.Fatal(err)
	}
	want = []cluster.Pod{
		{Name: "p0", MilliCPU: 6000, MemoryMiB: 12288, NumGPU: 1, MilliGPU: 460, GPUSpec: []string{"T4", "P100"},
			Creation: 427061, Deletion: 12902960, HasTimes: true, Line: 2},
		{Name: "p1", MilliCPU: 11908, MemoryMiB: 47104, NumGPU: 1, MilliGPU: 1000, Creation: 10001278, Deletion: 10001403, HasTimes: true, Line: 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("11 columns: got %+v, want %+v", got, want)
	}
}

func TestReadFixtures(t *testing.T) {
	nodes := readNodesFile(t, "../testdata/openb_nodes_head40.csv")
	if len(nodes) != 40 || nodes[0].Name != "openb-node-0000" || nodes[0].Model != "P100" {
		t.Errorf("nodes: %d, first %+v", len(nodes), nodes[0])
	}
	spec := readPodsFile(t, "../testdata/openb_pods_gpuspec33_head60.csv")
	constrained := 0
	for _, p := range spec {
		if len(p.GPUSpec) > 0 {
			constrained++
		}
	}
	// 7 of the first 60 rows of gpuspec33 carry a gpu_spec (grep -c '|' counts
	// lines with a pipe; single-model specs have none, so count them here).
	if len(spec) != 60 || constrained == 0 {
		t.Errorf("gpuspec33 head: %d pods, %d constrained", len(spec), constrained)
	}
	multi := readPodsFile(t, "../testdata/openb_pods_multigpu50_head60.csv")
	if len(multi) != 60 || multi[0].HasTimes {
		t.Errorf("multigpu50 head: %d pods, first %+v", len(multi), multi[0])
	}
}

func TestReadSharedTrace(t *testing.T) {
	nodes := readNodesFile(t, sharedData(t, "openb_node_list_gpu_node.csv"))
	var cpu int64
	for _, n := range nodes {
		cpu += n.MilliCPU
	}
	// The README of the trace: 1213 GPU nodes, 6212 GPUs, 107,018 cores.
	if len(nodes) != 1213 || cluster.GPUCapacity(nodes) != 6212 || cpu != 107018000 {
		t.Errorf("gpu node list: %d nodes, %d GPUs, %d millicores; want 1213, 6212, 107018000", len(nodes), cluster.GPUCapacity(nodes), cpu)
	}
	all := readNodesFile(t, sharedData(t, "openb_node_list_all_node.csv"))
	if len(all) != 1523 {
		t.Errorf("all node list: %d nodes, want 1523", len(all))
	}
	for file, n := range map[string]int{"default": 8152, "gpuspec33": 8152, "multigpu50": 9061} {
		pods := readPodsFile(t, sharedData(t, "openb_pod_list_"+file+".csv"))
		if len(pods) != n {
			t.Errorf("%s: %d pods, want %d", file, len(pods), n)
		}
	}
}

func TestReadCSVErrors(t *testing.T) {
	const nodeHead = "sn,cpu_milli,memory_mib,gpu,model\n"
	const podHead = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
	for _, tc := range []struct {
		pods bool
		in   string
		want string
	}{
		{false, "", `x.csv: line 1: empty file: want a header line`},
		{false, "sn,cpu\n", `x.csv: line 1: header has 2 columns, want the first 4 to 5 of sn,cpu_milli,memory_mib,gpu,model`},
		{false, "sn,cpu_milli,mem,gpu\n", `x.csv: line 1: field "mem": column 3 must be "memory_mib"`},
		{false, nodeHead + "n0,1,2,3\n", `x.csv: line 2: has 4 fields, the header has 5`},
		{false, nodeHead + "n0,abc,2,1,T4\n", `x.csv: line 2: field "cpu_milli": "abc" is not an integer`},
		{false, nodeHead + "n0,1,2,-1,T4\n", `x.csv: line 2: field "gpu": must not be negative (got -1)`},
		{false, nodeHead + "n0,1,2,2,\n", `x.csv: line 2: field "model": must name the GPU model of a node with GPUs`},
		{false, nodeHead + "n0,1,2,1,T4\nn0,1,2,1,T4\n", `x.csv: line 3: field "sn": node "n0" already on line 2`},
		{false, nodeHead + ",1,2,1,T4\n", `x.csv: line 2: field "sn": must not be empty`},
		{false, nodeHead + "n0,1,2,99,T4\n", `x.csv: line 2: field "gpu": must be at most 64 (got 99)`},
		{false, nodeHead + "\"n0,1,2,1,T4\n", `x.csv: line 2: field "sn": quoted field without its closing " on this line (a field cannot hold a line break)`},
		{false, nodeHead + "n\"0,1,2,1,T4\n", `x.csv: line 2: field "sn": bare " in a non-quoted field (quote the whole field and double the quotes inside it)`},
		{false, nodeHead + "n0,1,2,1,\"T4\"x\n", `x.csv: line 2: field "model": extraneous " in a quoted field (double a quote inside quotes)`},
		// Case 16 of issue 13: a repeated column, CR-only line endings and
		// a giant field echoed whole.
		{false, "sn,sn,memory_mib,gpu\n", `x.csv: line 1: field "sn": column 2 repeats column 1; the header must be the first 4 to 5 of sn,cpu_milli,memory_mib,gpu,model`},
		{false, "sn,cpu_milli,memory_mib,gpu,model\rn0,1,2,1,T4\rn0,1,2,1,T4\r", `x.csv: line 3: field "sn": node "n0" already on line 2`},
		{true, podHead + "p0,1," + strings.Repeat("9", 5<<20) + ",1,500\n", `x.csv: line 2: longer than 64 KiB (lists.MaxLineBytes): not a text file of lines, or its line breaks are missing`},
		{true, podHead + "p0,1," + strings.Repeat("x", 60<<10) + ",1,500\n", `x.csv: line 2: field "memory_mib": "` + strings.Repeat("x", 64) + `"… (61440 bytes) is not an integer`},
		// Case 10: binary input and a file without line breaks.
		{false, strings.Repeat("\x00", 4096), `x.csv: line 1: not a text file: byte 0 is NUL (binary data, not lines of text)`},
		{false, "sn,cpu_milli,memory_mib,gpu,model" + strings.Repeat(",x", 40<<10), `x.csv: line 1: longer than 64 KiB (lists.MaxLineBytes): not a text file of lines, or its line breaks are missing`},
		{true, podHead + "p0,1,2,1,1200\n", `x.csv: line 2: field "gpu_milli": must be between 0 and 1000 (got 1200)`},
		{true, podHead + "p0,1,2,2,500\n", `x.csv: line 2: field "gpu_milli": must be 1000 for a pod with 2 GPUs: only single-GPU pods share (got 500)`},
		{true, podHead + "p0,1,2,0,500\n", `x.csv: line 2: field "gpu_milli": must be 0 for a pod without GPUs (got 500)`},
		{true, podHead + "p0,1,2,1,0\n", `x.csv: line 2: field "gpu_milli": must be positive for a pod with 1 GPUs`},
		{true, podHead + "p0,1,,1,0\n", `x.csv: line 2: field "memory_mib": is empty, want an integer`},
		{true, podHead + "p0,1,2,1,500\np0,1,2,1,500\n", `x.csv: line 3: field "name": pod "p0" already on line 2`},
		{true, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time\np0,1,2,1,500,,LS,Running,10,5\n",
			`x.csv: line 2: field "deletion_time": is before creation_time (5 < 10)`},
		{true, "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time\np0,1,2,1,500,,LS,Running,x,5\n",
			`x.csv: line 2: field "creation_time": "x" is not an integer`},
	} {
		var err error
		if tc.pods {
			_, err = ReadPodsCSV(strings.NewReader(tc.in), "x.csv")
		} else {
			_, err = ReadNodesCSV(strings.NewReader(tc.in), "x.csv")
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.in, err, tc.want)
			continue
		}
		var ie *cluster.InputError
		if !errors.Is(err, cluster.ErrBadInput) || !errors.As(err, &ie) {
			t.Errorf("%q: error %v is not an *InputError wrapping ErrBadInput", tc.in, err)
		}
	}
}

// TestReadCSVTotalLimit checks that a list longer than the total bound is
// refused with an error naming the limit (the bound lowered for the test:
// 256 MiB of lines would take seconds to read).
func TestReadCSVTotalLimit(t *testing.T) {
	defer func(old int64) { csvLimits.Total = old }(csvLimits.Total)
	csvLimits.Total = 1000
	in := "sn,cpu_milli,memory_mib,gpu,model\n" + strings.Repeat("n,1,2,1,T4\n", 100)
	_, err := ReadNodesCSV(strings.NewReader(in), "x.csv")
	if err == nil || !errors.Is(err, cluster.ErrBadInput) || !strings.Contains(err.Error(), "lists.MaxInputBytes") {
		t.Fatalf("err = %v, want a bad-input error naming lists.MaxInputBytes", err)
	}
}

// TestReadCSVEndless checks that an endless input without line breaks
// (like /dev/zero, or a stream of one byte) ends at the line bound, having
// read little more than it.
func TestReadCSVEndless(t *testing.T) {
	for _, b := range []byte{0, 'x'} {
		r := &countingReader{r: endless(b)}
		_, err := ReadPodsCSV(r, "endless")
		if err == nil || !errors.Is(err, cluster.ErrBadInput) {
			t.Fatalf("byte %q: err = %v, want a bad-input error", b, err)
		}
		if r.n > 2*MaxLineBytes {
			t.Errorf("byte %q: read %d bytes before failing, want at most %d", b, r.n, 2*MaxLineBytes)
		}
	}
}

type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// FuzzReadNodesCSV: the node reader never panics, and what it accepts is
// well formed. Run with go test ./cluster -fuzz FuzzReadNodesCSV.
func FuzzReadNodesCSV(f *testing.F) {
	for _, s := range []string{
		"sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,64000,262144,2,P100\n",
		"sn,cpu_milli,memory_mib,gpu\nn,1,1,1\n",
		"sn,cpu_milli,memory_mib,gpu,model\nn,1,1,0,\nn,2,2,8,G2\n",
		"sn,cpu_milli,memory_mib,gpu,model\n\"n\",1,1,1,\"T4\"\n",
		"\ufeffsn,cpu_milli,memory_mib,gpu,model\n",
		"sn,cpu_milli,memory_mib,gpu,model\nn,-1,1,1,T4\n",
		// Issue 13: repeated column, CR-only endings, quotes, NUL bytes.
		"sn,sn,memory_mib,gpu\n",
		"sn,cpu_milli,memory_mib,gpu,model\rn,1,1,1,T4\rm,1,1,1,T4\r",
		"sn,cpu_milli,memory_mib,gpu,model\r\n\"n\"\"\",1,1,1,T4\r\n\n\nn\",1,1,1,T4\n",
		"\x00\x00\x00\x00",
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile("../testdata/openb_nodes_head40.csv"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, err := ReadNodesCSV(strings.NewReader(string(data)), "fuzz.csv")
		if err != nil {
			if !errors.Is(err, cluster.ErrBadInput) {
				t.Fatalf("error does not wrap ErrBadInput: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for i := range nodes {
			if f, msg := nodes[i].Check(); f != "" {
				t.Fatalf("accepted a bad node %+v: %s %s", nodes[i], f, msg)
			}
			if seen[nodes[i].Name] {
				t.Fatalf("accepted a duplicate node %q", nodes[i].Name)
			}
			seen[nodes[i].Name] = true
		}
	})
}

// FuzzReadPodsCSV: the pod reader never panics, and what it accepts is well
// formed. Run with go test ./cluster -fuzz FuzzReadPodsCSV.
func FuzzReadPodsCSV(f *testing.F) {
	for _, s := range []string{
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,12000,16384,1,460\n",
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
			"p,6000,12288,1,460,T4|P100,LS,Running,427061,12902960,427061\nq,1,1,0,0,,BE,Pending,5,,\n",
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,8,1000\nq,1,1,0,0\n",
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1,1,1,500,|||\n",
		// Issue 13: CR-only endings, a field past the echo limit, quotes.
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli\rp,1,1,1,460\rq,1,1,0,0",
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1," + strings.Repeat("7", 200) + ",1,460\n",
		"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n\"p\",1,1,1,500,\"T4|\"\"P100\"\n",
	} {
		f.Add([]byte(s))
	}
	for _, p := range []string{"../testdata/openb_pods_gpuspec33_head60.csv", "../testdata/openb_pods_multigpu50_head60.csv"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := ReadPodsCSV(strings.NewReader(string(data)), "fuzz.csv")
		if err != nil {
			if !errors.Is(err, cluster.ErrBadInput) {
				t.Fatalf("error does not wrap ErrBadInput: %v", err)
			}
			return
		}
		for i := range pods {
			if f, msg := pods[i].Check(); f != "" {
				t.Fatalf("accepted a bad pod %+v: %s %s", pods[i], f, msg)
			}
		}
	})
}
