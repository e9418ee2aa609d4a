package rules

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"
)

// checkHistory asserts what both readers promise about an accepted input.
func checkHistory(t *testing.T, h *History) {
	t.Helper()
	for _, s := range h.Series {
		if _, ok := s.Labels["__name__"]; ok {
			t.Fatalf("series keeps __name__: %v", s.Labels)
		}
		for i, p := range s.Points {
			if math.IsNaN(p.Health) || p.Health < 0 || p.Health > 1 || math.IsNaN(p.Time) || math.IsInf(p.Time, 0) {
				t.Fatalf("point %d of %v out of range: %+v", i, s.Labels, p)
			}
			if i > 0 && p.Time <= s.Points[i-1].Time {
				t.Fatalf("points of %v not in increasing time order at %d", s.Labels, i)
			}
		}
	}
	// Whatever was accepted can be derived from and written without error
	// when it has points.
	ts, err := Derive(h, DefaultOptions())
	if err != nil {
		return // no points
	}
	for _, th := range ts {
		if th.Threshold < 0 || th.Threshold > 1 {
			t.Fatalf("threshold out of range: %+v", th)
		}
	}
	var buf bytes.Buffer
	if err := WriteRules(&buf, ts, RuleOptions{Quantile: 0.95}); err != nil {
		t.Fatalf("WriteRules: %v", err)
	}
}

// checkSeriesLimit reads data with MaxSeries 3: either an error, or at
// most 3 series; and an error message never quotes more than a few hundred
// bytes of the input.
func checkSeriesLimit(t *testing.T, data []byte, read func(string, io.Reader, ReadOptions) (*History, error)) {
	t.Helper()
	h, err := read("fuzz", bytes.NewReader(data), ReadOptions{MaxSeries: 3})
	if err != nil {
		if len(err.Error()) > 2000 {
			t.Fatalf("error of %d bytes echoes the input: %.200s", len(err.Error()), err)
		}
		return
	}
	if len(h.Series) > 3 {
		t.Fatalf("%d series read with MaxSeries 3", len(h.Series))
	}
}

// FuzzReadPrometheusJSON: any input yields a history or an error, never a
// panic; seeds in testdata/fuzz/FuzzReadPrometheusJSON.
func FuzzReadPrometheusJSON(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a"},"values":[[1,"0.5"],[2,"0.25"]]}]}}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"gpufrag_fragmentation_ratio"},"values":[[1.5,"1"]]}]}}`))
	// Issue 13: a label value past MaxLabelBytes, a value of 100 KB echoed
	// into the message, more series than MaxSeries (3 below).
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"` +
		strings.Repeat("i", MaxLabelBytes+1) + `"},"values":[[1,"0.5"]]}]}}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"` +
		strings.Repeat("9", 100<<10) + `"]]}]}}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a"},"values":[]},` +
		`{"metric":{"instance":"b"},"values":[]},{"metric":{"instance":"c"},"values":[]},{"metric":{"instance":"d"},"values":[[1,"1"]]}]}}`))
	// Issue 28: random bytes after "{", a syntax error in the first kilobytes.
	f.Add([]byte("{\x86\xad\x05\xdc\x98\x7f\x80b0"))
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{hello`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSeriesLimit(t, data, ReadPrometheusJSONOptions)
		h, err := ReadPrometheusJSON("fuzz.json", bytes.NewReader(data))
		if err != nil {
			return
		}
		checkHistory(t, h)
	})
}

// FuzzReadCSV: any input yields a history or an error, never a panic; seeds
// in testdata/fuzz/FuzzReadCSV.
func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("timestamp,instance,model,health\n1,a,m,0.5\n2,a,m,1\n"))
	f.Add([]byte("2026-11-30T00:00:00Z,a,,0\n"))
	// Issue 13: a long instance, a 100 KB health field, four series.
	f.Add([]byte("1," + strings.Repeat("i", MaxLabelBytes+1) + ",m,0.5\n"))
	f.Add([]byte("1,a,m," + strings.Repeat("9", 100<<10) + "\n"))
	f.Add([]byte("1,a,m,0.5\n1,b,m,0.5\n1,c,m,0.5\n1,d,,1\n"))
	// Issue 28: random bytes after the header, a NUL on line 2, a quoted
	// line break, a quote not closed before the end of the file.
	f.Add([]byte("timestamp,instance,model,health\n\x86\xad\x05\xdc\x98\x7f\x80b0"))
	f.Add([]byte("1,a,m,0.5\n2,a\x00,m,0.5\n"))
	f.Add([]byte("1,\"a\nb\",m,0.5\n"))
	f.Add([]byte("1,a,m,0.5\n2,\"a,m,0.5\n3,a,m,0.5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSeriesLimit(t, data, ReadCSVOptions)
		h, err := ReadCSV("fuzz.csv", bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, s := range h.Series {
			if s.Labels["instance"] == "" {
				t.Fatalf("accepted an empty instance: %v", s.Labels)
			}
		}
		checkHistory(t, h)
	})
}
