package lists

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// Column names of the openb CSV files.
var (
	nodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
	podColumns  = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli",
		"gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}
)

// MaxLineBytes bounds one line of a node or pod list (64 KiB). The longest
// line of the openb lists is 127 bytes (an 11-column pod with its GPU
// models); 500 times that leaves room for long names, and a file without
// line breaks (a binary file, /dev/zero) is refused after 64 KiB instead
// of being read whole.
const MaxLineBytes = 64 << 10

// MaxInputBytes bounds a node or pod list, CSV or JSON (256 MiB). The
// openb pod list of 8,152 pods is 575 KB, 71 bytes a pod (WriteJSON's
// indented form: about 200), so this holds some 3.7 million pods in CSV
// and 1.3 million in JSON, hundreds of times the published traces, while
// the decoded list stays within about 1 GB.
const MaxInputBytes = 256 << 20

// csvLimits are the line reader's bounds for node and pod lists.
var csvLimits = untrusted.Limits{Line: MaxLineBytes, LineName: "lists.MaxLineBytes", Total: MaxInputBytes, TotalName: "lists.MaxInputBytes",
	TotalHint: "split the list, or sample it: the protocol resamples pods to the cluster's size anyway"}

// csvTable reads a CSV stream whose header must be a prefix of want of at
// least min columns (the openb files come as 4- or 5-column node lists and
// 5- or 11-column pod lists). One line is one record: the openb lists have
// no line breaks inside quoted fields, so a line reader bounds every
// record and numbers lines exactly (line endings "\n", "\r\n" or "\r").
type csvTable struct {
	name   string
	lines  *untrusted.LineReader
	cols   []string
	fields []string // the last record, reused
}

func openCSV(rd io.Reader, name string, want []string, min int) (*csvTable, error) {
	t := &csvTable{name: name, lines: untrusted.NewLineReader(rd, csvLimits)}
	head, _, err := t.read()
	if err == io.EOF {
		return nil, &cluster.InputError{Name: name, Line: 1, Msg: "empty file: want a header line"}
	}
	if err != nil {
		return nil, err
	}
	if len(head) < min || len(head) > len(want) {
		return nil, &cluster.InputError{Name: name, Line: 1, Msg: fmt.Sprintf(
			"header has %d columns, want the first %d to %d of %s", len(head), min, len(want), strings.Join(want, ","))}
	}
	for i, h := range head {
		h = strings.TrimSpace(h)
		if j := slices.Index(head[:i], h); j >= 0 {
			return nil, &cluster.InputError{Name: name, Line: 1, Field: untrusted.Clip(h), Msg: fmt.Sprintf("column %d repeats column %d; the header must be the first %d to %d of %s",
				i+1, j+1, min, len(want), strings.Join(want, ","))}
		}
		if h != want[i] {
			return nil, &cluster.InputError{Name: name, Line: 1, Field: untrusted.Clip(h), Msg: fmt.Sprintf("column %d must be %q", i+1, want[i])}
		}
	}
	t.cols = want[:len(head)]
	return t, nil
}

// read returns the fields of the next non-empty line and its number, or
// io.EOF.
func (t *csvTable) read() ([]string, int, error) {
	for {
		b, err := t.lines.Next()
		if err == io.EOF {
			return nil, 0, io.EOF
		}
		if err != nil {
			return nil, 0, lineError(t.name, err)
		}
		if len(b) == 0 {
			continue // blank lines are skipped, as encoding/csv does
		}
		line := t.lines.Line()
		var bad int
		var msg string
		if t.fields, bad, msg = untrusted.SplitCSV(b, t.fields[:0]); msg != "" {
			field := fmt.Sprintf("column %d", bad+1)
			if bad < len(t.cols) {
				field = t.cols[bad]
			}
			return nil, line, &cluster.InputError{Name: t.name, Line: line, Field: field, Msg: msg}
		}
		return t.fields, line, nil
	}
}

// next returns the next record and its line, or io.EOF.
func (t *csvTable) next() ([]string, int, error) {
	rec, line, err := t.read()
	if err != nil {
		return nil, line, err
	}
	if len(rec) != len(t.cols) {
		return nil, line, &cluster.InputError{Name: t.name, Line: line, Msg: fmt.Sprintf("has %d fields, the header has %d", len(rec), len(t.cols))}
	}
	return rec, line, nil
}

// lineError turns an error of the line reader into an *InputError (bounds
// crossed, binary input) or names the input in a read error.
func lineError(name string, err error) error {
	var le *untrusted.InputError
	if errors.As(err, &le) {
		return &cluster.InputError{Name: name, Line: le.Line, Msg: le.Msg}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// intField parses a non-negative decimal integer; empty is an error.
func intField(name string, line int, field, s string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		if s == "" {
			return 0, &cluster.InputError{Name: name, Line: line, Field: field, Msg: "is empty, want an integer"}
		}
		return 0, &cluster.InputError{Name: name, Line: line, Field: field, Msg: fmt.Sprintf("%s is not an integer", untrusted.Quote(s))}
	}
	if v < 0 {
		return 0, &cluster.InputError{Name: name, Line: line, Field: field, Msg: fmt.Sprintf("must not be negative (got %d)", v)}
	}
	return v, nil
}

// ReadNodesCSV reads an openb node list: columns sn, cpu_milli, memory_mib,
// gpu and, optionally, model. Names must be unique.
func ReadNodesCSV(rd io.Reader, name string) ([]cluster.Node, error) {
	t, err := openCSV(rd, name, nodeColumns, 4)
	if err != nil {
		return nil, err
	}
	return readRows(t, name, "node", "sn", func(rec []string, line int) (cluster.Node, string, error) {
		c, err := leadingColumns(name, line, rec, "gpu")
		if err != nil {
			return cluster.Node{}, "", err
		}
		n := cluster.Node{Name: c.name, MilliCPU: c.cpu, MemoryMiB: c.mem, GPUs: c.gpus}
		if len(rec) > 4 {
			n.Model = strings.TrimSpace(rec[4])
		}
		if n.GPUs > 0 && n.Model == "" && len(rec) <= 4 {
			n.Model = "gpu" // a 4-column list names no model: all GPUs are alike
		}
		if f, msg := n.Check(); f != "" {
			return cluster.Node{}, "", &cluster.InputError{Name: name, Line: line, Field: csvNodeField(f), Msg: msg}
		}
		return n, n.Name, nil
	})
}

// leading are the first four columns that node and pod lists share.
type leading struct {
	name     string
	cpu, mem int64
	gpus     int
}

// leadingColumns parses name, cpu_milli, memory_mib and the GPU count
// (column gpuField, at most MaxGPUsPerNode).
func leadingColumns(name string, line int, rec []string, gpuField string) (leading, error) {
	c := leading{name: strings.TrimSpace(rec[0])}
	var err error
	if c.cpu, err = intField(name, line, "cpu_milli", rec[1]); err != nil {
		return c, err
	}
	if c.mem, err = intField(name, line, "memory_mib", rec[2]); err != nil {
		return c, err
	}
	g, err := intField(name, line, gpuField, rec[3])
	if err != nil {
		return c, err
	}
	if g > cluster.MaxGPUsPerNode {
		return c, &cluster.InputError{Name: name, Line: line, Field: gpuField, Msg: fmt.Sprintf("must be at most %d (got %d)", cluster.MaxGPUsPerNode, g)}
	}
	c.gpus = int(g)
	return c, nil
}

// readRows parses every record of t with parse and refuses a repeated name
// (reported under nameField, naming the first line): the loop node and pod
// lists share.
func readRows[T any](t *csvTable, name, kind, nameField string, parse func(rec []string, line int) (T, string, error)) ([]T, error) {
	var out []T
	seen := map[string]int{}
	for {
		rec, line, err := t.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		v, key, err := parse(rec, line)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[key]; dup {
			return nil, &cluster.InputError{Name: name, Line: line, Field: nameField, Msg: fmt.Sprintf("%s %s already on line %d", kind, untrusted.Quote(key), prev)}
		}
		seen[key] = line
		out = append(out, v)
	}
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
func ReadPodsCSV(rd io.Reader, name string) ([]cluster.Pod, error) {
	t, err := openCSV(rd, name, podColumns, 5)
	if err != nil {
		return nil, err
	}
	return readRows(t, name, "pod", "name", func(rec []string, line int) (cluster.Pod, string, error) {
		c, err := leadingColumns(name, line, rec, "num_gpu")
		if err != nil {
			return cluster.Pod{}, "", err
		}
		p := cluster.Pod{Name: c.name, MilliCPU: c.cpu, MemoryMiB: c.mem, NumGPU: c.gpus, Line: line}
		if p.MilliGPU, err = intField(name, line, "gpu_milli", rec[4]); err != nil {
			return cluster.Pod{}, "", err
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
					return cluster.Pod{}, "", err
				}
				p.HasTimes = true
				if d != "" {
					if p.Deletion, err = intField(name, line, "deletion_time", d); err != nil {
						return cluster.Pod{}, "", err
					}
				}
			}
		}
		if f, msg := p.Check(); f != "" {
			return cluster.Pod{}, "", &cluster.InputError{Name: name, Line: line, Field: f, Msg: msg}
		}
		return p, p.Name, nil
	})
}
