package lists

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
)

func TestJSONRoundTrip(t *testing.T) {
	in := &File{
		Nodes: []cluster.Node{{Name: "n1", MilliCPU: 96000, MemoryMiB: 393216, GPUs: 8, Model: "G2"}, {Name: "c1", MilliCPU: 32000, MemoryMiB: 65536, GPUs: 0}},
		Pods: []cluster.Pod{
			{Name: "p1", MilliCPU: 8000, MemoryMiB: 16384, NumGPU: 1, MilliGPU: 500, GPUSpec: []string{"T4", "G2"},
				Job: "train-7", Creation: 0, Deletion: 3600, HasTimes: true},
			{Name: "p2", MilliCPU: 4000, MemoryMiB: 100},
		},
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadJSON(&buf, "rt.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
}

func TestReadJSONErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, `x.json: empty input, want a JSON object`},
		{`{"nodes": [}`, `x.json: line 1: invalid character '}' looking for beginning of value`},
		{"{\"nodes\": [\n{\"name\": \"n\", \"cpu_milli\": \"many\"}]}", `x.json: line 2: field "nodes.cpu_milli": want an integer, got a string`},
		{`{"nodes": [], "extra": 1}`, `x.json: line 1: field "extra": unknown field`},
		{"{\"nodes\": [],\n \"pods\": [],\n \"extra\": 1}", `x.json: line 3: field "extra": unknown field`},
		{`{"nodes": [{"name": "n", "gpus": 2}]}`, `x.json: field "nodes[0].model": must name the GPU model of a node with GPUs`},
		{`{"nodes": [{"name": "n"}, {"name": "n"}]}`, `x.json: field "nodes[1].name": duplicate node "n"`},
		{`{"pods": [{"name": "p", "num_gpu": 2, "gpu_milli": 300}]}`, `x.json: field "pods[0].gpu_milli": must be 1000 for a pod with 2 GPUs: only single-GPU pods share (got 300)`},
		{`{"pods": [{"name": "p", "deletion_time": 3}]}`, `x.json: field "pods[0].deletion_time": needs creation_time`},
		{`{"pods": [{"name": "p", "gpu_spec": [""], "num_gpu": 1, "gpu_milli": 10}]}`, `x.json: field "pods[0].gpu_spec": bad GPU model ""`},
		{`{} {}`, `x.json: more than one JSON value`},
		// Issue 13: documents that are not our object, refused at their
		// first byte.
		{`null`, `x.json: line 1: starts with null, want a JSON object {"nodes": [...], "pods": [...]}`},
		{"\n\n  [1, 2]", `x.json: line 3: starts with an array, want a JSON object {"nodes": [...], "pods": [...]}`},
		{"\x00\x00\x00", `x.json: line 1: starts with a NUL byte (binary data, not JSON), want a JSON object {"nodes": [...], "pods": [...]}`},
		{"sn,cpu_milli", `x.json: line 1: starts with "sn,cpu_milli", want a JSON object {"nodes": [...], "pods": [...]}`},
		{`{"nodes": [{"name": "` + strings.Repeat("n", 100) + `"}, {"name": "` + strings.Repeat("n", 100) + `"}]}`,
			`x.json: field "nodes[1].name": duplicate node "` + strings.Repeat("n", 64) + `"… (100 bytes)`},
	} {
		_, err := ReadJSON(strings.NewReader(tc.in), "x.json")
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.in, err, tc.want)
		}
		if err != nil && !errors.Is(err, cluster.ErrBadInput) {
			t.Errorf("%s: %v does not wrap ErrBadInput", tc.in, err)
		}
	}
}

// TestReadJSONLimit checks the size bound (lowered for the test) and that
// an endless stream of zeros is refused at its first byte.
func TestReadJSONLimit(t *testing.T) {
	_, err := readJSONObject(strings.NewReader(`{"nodes": []}`+strings.Repeat(" ", 100)), "x.json", 50)
	if err == nil || !errors.Is(err, cluster.ErrBadInput) || !strings.Contains(err.Error(), "longer than 50 bytes (lists.MaxInputBytes)") {
		t.Errorf("err = %v, want the size bound", err)
	}
	r := &countingReader{r: endless(0)}
	if _, err := ReadJSON(r, "zero"); err == nil || !errors.Is(err, cluster.ErrBadInput) {
		t.Errorf("endless zeros: err = %v", err)
	}
	if r.n > 64<<10 {
		t.Errorf("read %d bytes of zeros before refusing them", r.n)
	}
}

// FuzzReadJSON: the JSON reader never panics, and what it accepts is well
// formed and survives a round trip. Run with go test ./cluster -fuzz FuzzReadJSON.
func FuzzReadJSON(f *testing.F) {
	for _, s := range []string{
		`{"nodes":[{"name":"n1","cpu_milli":96000,"memory_mib":393216,"gpus":8,"model":"G2"}]}`,
		`{"pods":[{"name":"p1","cpu_milli":8000,"memory_mib":16384,"num_gpu":1,"gpu_milli":500,"gpu_spec":["T4"],"job":"j","creation_time":0,"deletion_time":5}]}`,
		`{"nodes":[],"pods":[{"name":"c","cpu_milli":1,"memory_mib":1}]}`,
		`{}`, `[]`, `null`, "\x00", " \n{\"nodes\":null}", `{"nodes":null}`, `{"pods":[{"name":"p","cpu_milli":1,"memory_mib":1,"gpu_spec":[]}]}`,
		// Issue 28: random bytes after "{", a syntax error in the first kilobytes.
		"{\x86\xad\x05\xdc\x98\x7f\x80b0", `{"nodes": [hello`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ReadJSON(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if !errors.Is(err, cluster.ErrBadInput) {
				t.Fatalf("error does not wrap ErrBadInput: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := WriteJSON(&buf, file); err != nil {
			t.Fatal(err)
		}
		again, err := ReadJSON(&buf, "again.json")
		if err != nil || !reflect.DeepEqual(file, again) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, file, again)
		}
	})
}

// TestReadEitherForm checks that ReadNodes and ReadPods tell the JSON form
// from CSV by name (any case) or content, the one rule for every caller.
func TestReadEitherForm(t *testing.T) {
	const js = `{"nodes": [{"name": "n", "cpu_milli": 1, "memory_mib": 1, "gpus": 1, "model": "T4"}], "pods": [{"name": "p", "cpu_milli": 1, "memory_mib": 1}]}`
	for _, name := range []string{"a.json", "A.JSON", "no-extension", "a.csv"} {
		nodes, err := ReadNodes(strings.NewReader("\n  "+js), name)
		if err != nil || len(nodes) != 1 || nodes[0].Name != "n" {
			t.Errorf("%s: ReadNodes = %v, %v", name, nodes, err)
		}
		pods, err := ReadPods(strings.NewReader(js), name)
		if err != nil || len(pods) != 1 || pods[0].Name != "p" {
			t.Errorf("%s: ReadPods = %v, %v", name, pods, err)
		}
	}
	nodes, err := ReadNodes(strings.NewReader("sn,cpu_milli,memory_mib,gpu\nn,1,1,1\n"), "nodes.txt")
	if err != nil || len(nodes) != 1 {
		t.Errorf("CSV: ReadNodes = %v, %v", nodes, err)
	}
	if _, err := ReadNodes(strings.NewReader("sn,cpu_milli,memory_mib,gpu\n"), "nodes.JSON"); err == nil || !strings.Contains(err.Error(), "want a JSON object") {
		t.Errorf("CSV named .JSON: %v, want the JSON reader's error", err)
	}
}

// FuzzReadEither: ReadNodes and ReadPods never panic on any input, named
// either way, and fail only with bad-input errors. Run with
// go test ./cluster -fuzz FuzzReadEither.
func FuzzReadEither(f *testing.F) {
	for _, s := range []string{
		`{"nodes":[{"name":"n","cpu_milli":1,"memory_mib":1,"gpus":1,"model":"T4"}]}`,
		"sn,cpu_milli,memory_mib,gpu\nn,1,1,1\n", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\rp,1,1,1,500\r",
		"\ufeff  {}", "[", "null", "\x00", "",
		// Issue 28: random bytes after a header, a NUL and a quoted line break on line 2.
		"sn,cpu_milli,memory_mib,gpu\n\x86\xad\x05\xdc\x98\x7f\x80b0", "sn,cpu_milli,memory_mib,gpu\nn,1,1\x00,1\n",
		"sn,cpu_milli,memory_mib,gpu\n\"n\n\",1,1,1\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, jsonName bool) {
		name := "fuzz.csv"
		if jsonName {
			name = "fuzz.JSON"
		}
		if _, err := ReadNodes(bytes.NewReader(data), name); err != nil && !errors.Is(err, cluster.ErrBadInput) {
			t.Fatalf("ReadNodes: error does not wrap ErrBadInput: %v", err)
		}
		if _, err := ReadPods(bytes.NewReader(data), name); err != nil && !errors.Is(err, cluster.ErrBadInput) {
			t.Fatalf("ReadPods: error does not wrap ErrBadInput: %v", err)
		}
	})
}

// TestRandomBytes (issue 28, item 10): random bytes without NUL, bare or
// after "{", "[" or a node or pod list's header, are refused within the
// first read by every reader of node and pod lists. Before, 100 MB of them
// after "{" took cluster simulate 1.01 s and 380 MB (the JSON reader read
// them all).
func TestRandomBytes(t *testing.T) {
	heads := []string{"sn,cpu_milli,memory_mib,gpu\n", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n", `{"nodes": [`}
	for name, read := range map[string]func(io.Reader, string) error{
		"ReadNodes":    func(r io.Reader, n string) error { _, err := ReadNodes(r, n); return err },
		"ReadPods":     func(r io.Reader, n string) error { _, err := ReadPods(r, n); return err },
		"ReadNodesCSV": func(r io.Reader, n string) error { _, err := ReadNodesCSV(r, n); return err },
		"ReadPodsCSV":  func(r io.Reader, n string) error { _, err := ReadPodsCSV(r, n); return err },
		"ReadJSON":     func(r io.Reader, n string) error { _, err := ReadJSON(r, n); return err },
		"ReadJSON .json": func(r io.Reader, n string) error {
			_, err := ReadNodes(r, n+".json")
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			loctest.RefusesEarly(t, func(r io.Reader, n string) error {
				err := read(r, n)
				if err != nil && !errors.Is(err, cluster.ErrBadInput) {
					t.Errorf("%v does not wrap ErrBadInput", err)
				}
				return err
			}, heads...)
		})
	}
}
