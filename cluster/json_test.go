package cluster

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestJSONRoundTrip(t *testing.T) {
	in := &File{
		Nodes: []Node{{"n1", 96000, 393216, 8, "G2"}, {"c1", 32000, 65536, 0, ""}},
		Pods: []Pod{
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
		{"{\"nodes\": [\n{\"name\": \"n\", \"cpu_milli\": \"many\"}]}", `x.json: line 2: field "nodes.cpu_milli": json: cannot unmarshal string into Go struct field Node.nodes.cpu_milli of type int64`},
		{`{"nodes": [], "extra": 1}`, `x.json: json: unknown field "extra"`},
		{`{"nodes": [{"name": "n", "gpus": 2}]}`, `x.json: field "nodes[0].model": must name the GPU model of a node with GPUs`},
		{`{"nodes": [{"name": "n"}, {"name": "n"}]}`, `x.json: field "nodes[1].name": duplicate node "n"`},
		{`{"pods": [{"name": "p", "num_gpu": 2, "gpu_milli": 300}]}`, `x.json: field "pods[0].gpu_milli": must be 1000 for a pod with 2 GPUs: only single-GPU pods share (got 300)`},
		{`{"pods": [{"name": "p", "deletion_time": 3}]}`, `x.json: field "pods[0].deletion_time": needs creation_time`},
		{`{"pods": [{"name": "p", "gpu_spec": [""], "num_gpu": 1, "gpu_milli": 10}]}`, `x.json: field "pods[0].gpu_spec": bad GPU model ""`},
		{`{} {}`, `x.json: more than one JSON value`},
	} {
		_, err := ReadJSON(strings.NewReader(tc.in), "x.json")
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.in, err, tc.want)
		}
		if err != nil && !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: %v does not wrap ErrBadInput", tc.in, err)
		}
	}
}

// FuzzReadJSON: the JSON reader never panics, and what it accepts is well
// formed and survives a round trip. Run with go test ./cluster -fuzz FuzzReadJSON.
func FuzzReadJSON(f *testing.F) {
	for _, s := range []string{
		`{"nodes":[{"name":"n1","cpu_milli":96000,"memory_mib":393216,"gpus":8,"model":"G2"}]}`,
		`{"pods":[{"name":"p1","cpu_milli":8000,"memory_mib":16384,"num_gpu":1,"gpu_milli":500,"gpu_spec":["T4"],"job":"j","creation_time":0,"deletion_time":5}]}`,
		`{"nodes":[],"pods":[{"name":"c","cpu_milli":1,"memory_mib":1}]}`,
		`{}`, `[]`, `{"nodes":null}`, `{"pods":[{"name":"p","cpu_milli":1,"memory_mib":1,"gpu_spec":[]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ReadJSON(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
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
