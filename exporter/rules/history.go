package rules

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// MaxInputBytes bounds what a reader accepts: a week of 15 s samples for a
// few hundred series is a few tens of MiB of query_range JSON.
const MaxInputBytes = 256 << 20

// ReadOptions bound a history reader beyond MaxInputBytes.
type ReadOptions struct {
	// MaxSeries caps the distinct series (label sets; for CSV, (instance,
	// model) pairs) read; 0 is DefaultMaxSeries. Each series costs about
	// 1 KB of labels and bookkeeping whatever its points, so this, not the
	// input size, bounds a history of many one-point series (16 MB of CSV
	// rows of 500,000 instances took 600 MB).
	MaxSeries int
}

// DefaultMaxSeries is ReadOptions.MaxSeries' default: DefaultMaxInstances
// instances of up to 8 GPUs each (a node's), one series per GPU.
const DefaultMaxSeries = 8 * DefaultMaxInstances

// ErrTooManySeries: the history has more series than ReadOptions.MaxSeries.
var ErrTooManySeries = errors.New("rules: too many series")

func (o ReadOptions) maxSeries() int {
	if o.MaxSeries <= 0 {
		return DefaultMaxSeries
	}
	return o.MaxSeries
}

// MaxLabelBytes bounds a label value a reader accepts (instance, model and
// the others): instance and model become label values of every generated
// rule, and the longest real ones are pod or host names of under 256
// bytes; 4 KiB leaves room and keeps a 5 MB field out of a rules file.
const MaxLabelBytes = 4 << 10

// Metric names a history may hold.
const (
	HealthMetric        = "gpufrag_health_ratio"
	FragmentationMetric = "gpufrag_fragmentation_ratio"
)

// Point is one observation of health.
type Point struct {
	Time   float64 // Unix seconds
	Health float64 // in [0, 1]
}

// Series is one label set's observations, in increasing time order.
type Series struct {
	// Labels are the series' labels without __name__; "instance" and
	// "model" group series into thresholds, the others (gpu, pool, job) are
	// kept for messages only.
	Labels map[string]string
	Points []Point
}

// History is a recorded set of health series.
type History struct {
	Series []Series
}

// key is the grouping of series into one threshold.
type key struct{ instance, model string }

func (s Series) key() key { return key{s.Labels["instance"], s.Labels["model"]} }

// readLimited reads all of r, refusing more than MaxInputBytes, after
// looking at its first untrusted.SniffBytes: they must be text (untrusted.CheckText),
// and JSON as far as they go for a Prometheus history (untrusted.CheckJSONStart),
// so that random bytes, a binary file or /dev/zero are refused there
// instead of after 256 MiB.
func readLimited(name string, r io.Reader, isJSON bool) ([]byte, error) {
	head, atEOF, whole, err := untrusted.Head(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	check := untrusted.CheckText
	if isJSON {
		check = untrusted.CheckJSONStart
	}
	var le *untrusted.InputError
	if errors.As(check(head, atEOF), &le) {
		line, col := position(head, le.Offset)
		return nil, fmt.Errorf("%s:%d:%d: %s", name, line, col, le.Msg)
	}
	data, err := io.ReadAll(io.LimitReader(whole, MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, MaxInputBytes)
	}
	return data, nil
}

// The formats of a history, for ReadHistory; FormatAuto tells them apart.
const (
	FormatAuto       = "auto"
	FormatCSV        = "csv"
	FormatPrometheus = "prometheus"
)

// Formats are the formats ReadHistory takes, FormatAuto first, in the
// order `gpufrag rules --format` lists them (for its check and shell
// completion).
func Formats() []string { return []string{FormatAuto, FormatPrometheus, FormatCSV} }

// ReadHistory reads a history in format FormatCSV or FormatPrometheus, or,
// for FormatAuto or "", the one its name's extension says (.csv, .json),
// else its first byte past white space ("{": Prometheus). It returns the
// format read.
func ReadHistory(name string, r io.Reader, format string, o ReadOptions) (*History, string, error) {
	if format == FormatAuto || format == "" {
		head, _, whole, err := untrusted.Head(r)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		r, format = whole, FormatCSV
		switch t := bytes.TrimLeft(head, " \t\r\n"); {
		case strings.EqualFold(filepath.Ext(name), ".csv"):
		case strings.EqualFold(filepath.Ext(name), ".json"), len(t) > 0 && t[0] == '{':
			format = FormatPrometheus
		}
	}
	var (
		h   *History
		err error
	)
	switch format {
	case FormatCSV:
		h, err = ReadCSVOptions(name, r, o)
	case FormatPrometheus:
		h, err = ReadPrometheusJSONOptions(name, r, o)
	default:
		err = fmt.Errorf("rules: unknown history format %q (want auto, %s or %s)", format, FormatPrometheus, FormatCSV)
	}
	return h, format, err
}

// position returns the 1-based line and column of byte offset off in data.
func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// checkHealth validates a value read from field of a history.
func checkHealth(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("value %v is not a finite number", v)
	}
	if v < 0 || v > 1 {
		return fmt.Errorf("value %v is outside [0, 1]", v)
	}
	return nil
}

// validLabelName reports whether s is a Prometheus label name.
func validLabelName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// labelString renders labels as {a="x", b="y"} in sorted order.
func labelString(l map[string]string) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", n, l[n])
	}
	b.WriteByte('}')
	return b.String()
}

// sortSeries orders series by their label strings, for deterministic
// output (each label string built once, not at every comparison).
func sortSeries(ss []Series) {
	type keyed struct {
		key string
		s   Series
	}
	ks := make([]keyed, len(ss))
	for i, s := range ss {
		ks[i] = keyed{labelString(s.Labels), s}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	for i := range ks {
		ss[i] = ks[i].s
	}
}
