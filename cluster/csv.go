package cluster

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/loc"
)

// InputError is a problem in a node or pod list, located by input name,
// 1-based line (the CSV header is line 1) and field. It wraps ErrBadInput.
type InputError struct {
	Name  string // the file name given to the reader
	Line  int    // 1-based; 0 when the problem is not on one line
	Field string // column or JSON path; empty when the whole line is wrong
	Msg   string
}

func (e *InputError) Error() string {
	if e.Line == 0 {
		s := e.Msg
		if e.Field != "" {
			s = fmt.Sprintf("field %q: %s", e.Field, s)
		}
		if e.Name != "" {
			s = e.Name + ": " + s
		}
		return s
	}
	return loc.Format(e.Name, e.Line, e.Field, e.Msg)
}

func (e *InputError) Unwrap() error { return ErrBadInput }

// Column names of the openb CSV files.
var (
	nodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
	podColumns  = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli",
		"gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}
)

// csvTable reads a CSV stream whose header must be a prefix of want of at
// least min columns (the openb files come as 4- or 5-column node lists and
// 5- or 11-column pod lists).
type csvTable struct {
	name string
	r    *csv.Reader
	cols []string
}

func openCSV(rd io.Reader, name string, want []string, min int) (*csvTable, error) {
	r := csv.NewReader(rd)
	r.FieldsPerRecord = -1 // checked here, with a clearer message
	r.ReuseRecord = true
	head, err := r.Read()
	if err == io.EOF {
		return nil, &InputError{Name: name, Line: 1, Msg: "empty file: want a header line"}
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	if len(head) > 0 {
		head[0] = strings.TrimPrefix(head[0], "\ufeff")
	}
	if len(head) < min || len(head) > len(want) {
		return nil, &InputError{Name: name, Line: 1, Msg: fmt.Sprintf(
			"header has %d columns, want the first %d to %d of %s", len(head), min, len(want), strings.Join(want, ","))}
	}
	for i, h := range head {
		if strings.TrimSpace(h) != want[i] {
			return nil, &InputError{Name: name, Line: 1, Field: h, Msg: fmt.Sprintf("column %d must be %q", i+1, want[i])}
		}
	}
	return &csvTable{name: name, r: r, cols: want[:len(head)]}, nil
}

// next returns the next record and its line, or io.EOF.
func (t *csvTable) next() ([]string, int, error) {
	rec, err := t.r.Read()
	if err == io.EOF {
		return nil, 0, io.EOF
	}
	if err != nil {
		return nil, 0, csvError(t.name, err)
	}
	line, _ := t.r.FieldPos(0)
	if len(rec) != len(t.cols) {
		return nil, line, &InputError{Name: t.name, Line: line, Msg: fmt.Sprintf("has %d fields, the header has %d", len(rec), len(t.cols))}
	}
	return rec, line, nil
}

func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &InputError{Name: name, Line: pe.Line, Msg: pe.Err.Error()}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// intField parses a non-negative decimal integer; empty is an error.
func intField(name string, line int, field, s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		if s == "" {
			return 0, &InputError{Name: name, Line: line, Field: field, Msg: "is empty, want an integer"}
		}
		return 0, &InputError{Name: name, Line: line, Field: field, Msg: fmt.Sprintf("%q is not an integer", s)}
	}
	if v < 0 {
		return 0, &InputError{Name: name, Line: line, Field: field, Msg: fmt.Sprintf("must not be negative (got %d)", v)}
	}
	return v, nil
}

// ReadNodesCSV reads an openb node list: columns sn, cpu_milli, memory_mib,
// gpu and, optionally, model. Names must be unique.
func ReadNodesCSV(rd io.Reader, name string) ([]Node, error) {
	t, err := openCSV(rd, name, nodeColumns, 4)
	if err != nil {
		return nil, err
	}
	var nodes []Node
	seen := map[string]int{}
	for {
		rec, line, err := t.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		n := Node{Name: strings.TrimSpace(rec[0])}
		if n.MilliCPU, err = intField(name, line, "cpu_milli", rec[1]); err != nil {
			return nil, err
		}
		if n.MemoryMiB, err = intField(name, line, "memory_mib", rec[2]); err != nil {
			return nil, err
		}
		g, err := intField(name, line, "gpu", rec[3])
		if err != nil {
			return nil, err
		}
		if g > MaxGPUsPerNode {
			return nil, &InputError{Name: name, Line: line, Field: "gpu", Msg: fmt.Sprintf("must be at most %d (got %d)", MaxGPUsPerNode, g)}
		}
		n.GPUs = int(g)
		if len(rec) > 4 {
			n.Model = strings.TrimSpace(rec[4])
		}
		if n.GPUs > 0 && n.Model == "" && len(rec) <= 4 {
			n.Model = "gpu" // a 4-column list names no model: all GPUs are alike
		}
		if f, msg := checkNode(&n); f != "" {
			return nil, &InputError{Name: name, Line: line, Field: csvNodeField(f), Msg: msg}
		}
		if prev, dup := seen[n.Name]; dup {
			return nil, &InputError{Name: name, Line: line, Field: "sn", Msg: fmt.Sprintf("node %q already on line %d", n.Name, prev)}
		}
		seen[n.Name] = line
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func csvNodeField(f string) string {
	if f == "name" {
		return "sn"
	}
	return f
}

// ReadPodsCSV reads an openb pod list: columns name, cpu_milli, memory_mib,
// num_gpu, gpu_milli, then optionally gpu_spec, qos, pod_phase,
// creation_time, deletion_time and scheduled_time (the 11-column files).
// qos, pod_phase and scheduled_time are read past; empty times are allowed.
func ReadPodsCSV(rd io.Reader, name string) ([]Pod, error) {
	t, err := openCSV(rd, name, podColumns, 5)
	if err != nil {
		return nil, err
	}
	var pods []Pod
	seen := map[string]int{}
	for {
		rec, line, err := t.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		p := Pod{Name: strings.TrimSpace(rec[0])}
		if p.MilliCPU, err = intField(name, line, "cpu_milli", rec[1]); err != nil {
			return nil, err
		}
		if p.MemoryMiB, err = intField(name, line, "memory_mib", rec[2]); err != nil {
			return nil, err
		}
		g, err := intField(name, line, "num_gpu", rec[3])
		if err != nil {
			return nil, err
		}
		if g > MaxGPUsPerNode {
			return nil, &InputError{Name: name, Line: line, Field: "num_gpu", Msg: fmt.Sprintf("must be at most %d (got %d)", MaxGPUsPerNode, g)}
		}
		p.NumGPU = int(g)
		if p.MilliGPU, err = intField(name, line, "gpu_milli", rec[4]); err != nil {
			return nil, err
		}
		if len(rec) > 5 && strings.TrimSpace(rec[5]) != "" {
			for _, m := range strings.Split(rec[5], "|") {
				if m = strings.TrimSpace(m); m != "" {
					p.GPUSpec = append(p.GPUSpec, m)
				}
			}
		}
		if len(rec) > 9 {
			c, d := strings.TrimSpace(rec[8]), strings.TrimSpace(rec[9])
			if c != "" {
				if p.Creation, err = intField(name, line, "creation_time", c); err != nil {
					return nil, err
				}
				p.HasTimes = true
				if d != "" {
					if p.Deletion, err = intField(name, line, "deletion_time", d); err != nil {
						return nil, err
					}
				}
			}
		}
		if f, msg := checkPod(&p); f != "" {
			return nil, &InputError{Name: name, Line: line, Field: f, Msg: msg}
		}
		if prev, dup := seen[p.Name]; dup {
			return nil, &InputError{Name: name, Line: line, Field: "name", Msg: fmt.Sprintf("pod %q already on line %d", p.Name, prev)}
		}
		seen[p.Name] = line
		pods = append(pods, p)
	}
	return pods, nil
}
