package lists

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// File is the package's own JSON form of a cluster and its workload:
//
//	{
//	  "nodes": [
//	    {"name": "n1", "cpu_milli": 96000, "memory_mib": 393216, "gpus": 8, "model": "G2"}
//	  ],
//	  "pods": [
//	    {"name": "p1", "cpu_milli": 8000, "memory_mib": 16384, "num_gpu": 1, "gpu_milli": 500,
//	     "gpu_spec": ["T4", "G2"], "job": "train-7", "creation_time": 0, "deletion_time": 3600}
//	  ]
//	}
//
// Units are as in the openb CSV files: CPU in millicores, memory in MiB,
// gpu_milli per GPU in thousandths of a GPU. num_gpu, gpu_milli, gpu_spec
// (any model when absent), job (gang scheduling group), creation_time and
// deletion_time (seconds; deletion 0 or absent: never leaves) are optional.
// Unknown fields are errors. Either list may be absent, so a file can hold
// only nodes or only pods.
type File struct {
	Nodes []cluster.Node `json:"nodes,omitempty"`
	Pods  []cluster.Pod  `json:"pods,omitempty"`
}

// jsonPod mirrors Pod with pointer times, so "creation_time": 0 and an
// absent field differ.
type jsonPod struct {
	Name      string   `json:"name"`
	MilliCPU  int64    `json:"cpu_milli"`
	MemoryMiB int64    `json:"memory_mib"`
	NumGPU    int      `json:"num_gpu,omitempty"`
	MilliGPU  int64    `json:"gpu_milli,omitempty"`
	GPUSpec   []string `json:"gpu_spec,omitempty"`
	Job       string   `json:"job,omitempty"`
	Creation  *int64   `json:"creation_time,omitempty"`
	Deletion  *int64   `json:"deletion_time,omitempty"`
}

type jsonFile struct {
	Nodes []cluster.Node `json:"nodes"`
	Pods  []jsonPod      `json:"pods"`
}

// ReadJSON reads a File. Errors name the input and the JSON path of the
// bad value (e.g. pods[3].gpu_milli) and wrap ErrBadInput.
//
// The input may be at most MaxInputBytes long, must start (after white
// space) with "{", and its first untrusted.SniffBytes must be UTF-8 text and
// valid JSON as far as they go: anything else is refused before the rest
// is read, so a binary file, random bytes or /dev/zero fail at once.
func ReadJSON(r io.Reader, name string) (*File, error) {
	data, err := readJSONObject(r, name, MaxInputBytes)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var jf jsonFile
	if err := dec.Decode(&jf); err != nil {
		return nil, jsonError(name, data, err)
	}
	if dec.More() {
		return nil, &cluster.InputError{Name: name, Msg: "more than one JSON value"}
	}
	f := &File{Nodes: jf.Nodes}
	seen := map[string]bool{}
	for i := range f.Nodes {
		if fl, msg := f.Nodes[i].Check(); fl != "" {
			return nil, &cluster.InputError{Name: name, Field: fmt.Sprintf("nodes[%d].%s", i, jsonNodeField(fl)), Msg: msg}
		}
		if seen[f.Nodes[i].Name] {
			return nil, &cluster.InputError{Name: name, Field: fmt.Sprintf("nodes[%d].name", i), Msg: fmt.Sprintf("duplicate node %s", untrusted.Quote(f.Nodes[i].Name))}
		}
		seen[f.Nodes[i].Name] = true
	}
	clear(seen)
	for i, jp := range jf.Pods {
		p := cluster.Pod{Name: jp.Name, MilliCPU: jp.MilliCPU, MemoryMiB: jp.MemoryMiB, NumGPU: jp.NumGPU,
			MilliGPU: jp.MilliGPU, GPUSpec: jp.GPUSpec, Job: jp.Job}
		if len(p.GPUSpec) == 0 {
			p.GPUSpec = nil // "gpu_spec": [] means any model, as an absent field
		}
		if jp.Creation != nil {
			p.HasTimes, p.Creation = true, *jp.Creation
		}
		if jp.Deletion != nil {
			if jp.Creation == nil {
				return nil, &cluster.InputError{Name: name, Field: fmt.Sprintf("pods[%d].deletion_time", i), Msg: "needs creation_time"}
			}
			p.Deletion = *jp.Deletion
		}
		if p.Creation < 0 || p.Deletion < 0 {
			return nil, &cluster.InputError{Name: name, Field: fmt.Sprintf("pods[%d].creation_time", i), Msg: "times must not be negative"}
		}
		if fl, msg := p.Check(); fl != "" {
			return nil, &cluster.InputError{Name: name, Field: fmt.Sprintf("pods[%d].%s", i, fl), Msg: msg}
		}
		if seen[p.Name] {
			return nil, &cluster.InputError{Name: name, Field: fmt.Sprintf("pods[%d].name", i), Msg: fmt.Sprintf("duplicate pod %s", untrusted.Quote(p.Name))}
		}
		seen[p.Name] = true
		f.Pods = append(f.Pods, p)
	}
	return f, nil
}

// readJSONObject reads at most limit bytes of r, checking first that the
// first byte past white space opens a JSON object and that the start is
// JSON text (untrusted.CheckJSONStart).
func readJSONObject(r io.Reader, name string, limit int64) ([]byte, error) {
	head, atEOF, whole, err := untrusted.Head(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case len(t) == 0 && atEOF:
		return nil, &cluster.InputError{Name: name, Msg: "empty input, want a JSON object"}
	case len(t) > 0 && t[0] != '{':
		line := 1 + bytes.Count(head[:len(head)-len(t)], []byte("\n"))
		return nil, &cluster.InputError{Name: name, Line: line, Msg: fmt.Sprintf("starts with %s, want a JSON object {\"nodes\": [...], \"pods\": [...]}",
			untrusted.DescribeJSONStart(t[:min(len(t), 16)]))}
	}
	if err := untrusted.CheckJSONStart(head, atEOF); err != nil {
		return nil, lineError(name, err)
	}
	data, err := io.ReadAll(whole)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, &cluster.InputError{Name: name, Msg: fmt.Sprintf("longer than %s (lists.MaxInputBytes): split the list, or sample it", untrusted.Size(limit))}
	}
	return data, nil
}

func jsonNodeField(f string) string {
	if f == "gpu" {
		return "gpus"
	}
	return f
}

// jsonError turns a decoding error into an *InputError with the line of
// the offending byte.
func jsonError(name string, data []byte, err error) error {
	if err == io.EOF {
		return &cluster.InputError{Name: name, Msg: "empty input, want a JSON object"}
	}
	off, field := untrusted.LocateDecodeError(data, err)
	line := 0
	if off >= 0 {
		line = 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n"))
	}
	return &cluster.InputError{Name: name, Line: line, Field: field, Msg: untrusted.DecodeMessage(err)}
}

// WriteJSON writes f in the form ReadJSON reads, indented.
func WriteJSON(w io.Writer, f *File) error {
	jf := jsonFile{Nodes: f.Nodes, Pods: make([]jsonPod, len(f.Pods))}
	for i, p := range f.Pods {
		jp := jsonPod{Name: p.Name, MilliCPU: p.MilliCPU, MemoryMiB: p.MemoryMiB, NumGPU: p.NumGPU,
			MilliGPU: p.MilliGPU, GPUSpec: p.GPUSpec, Job: p.Job}
		if p.HasTimes {
			c, d := p.Creation, p.Deletion
			jp.Creation, jp.Deletion = &c, &d
		}
		jf.Pods[i] = jp
	}
	b, err := json.MarshalIndent(jf, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
