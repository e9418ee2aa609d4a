package rules

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/internal/untrusted/loctest"
)

func TestReadPrometheusJSONErrors(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string // substrings of the error
	}{
		{"not json", `hello`, []string{"h.json:1:1: not JSON: byte 0: invalid character 'h'"}}, // refused at its start (issue 28)
		{"empty", ``, []string{"h.json:1:1 (byte 0)", "unexpected end"}},
		{"truncated", `{"status":"success","data":{"resultType":"matrix","result":[`, []string{"h.json:1:", "data.result", "unexpected end"}},
		{"status error", `{"status":"error","errorType":"bad_data","error":"parse error"}`,
			[]string{"h.json:1:1 (byte 0)", "status", "bad_data: parse error"}},
		{"no data", `{"status":"success"}`, []string{"data: missing"}},
		{"vector", `{"status":"success","data":{"resultType":"vector","result":[]}}`,
			[]string{"h.json:1:42 (byte 41)", "data.resultType", `want "matrix"`, `got "vector"`}},
		{"unknown top field", `{"status":"success","nope":1}`, []string{"(byte 20)", `unknown field "nope"`}},
		{"unknown series field", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"value":[1,"1"]}]}}`,
			[]string{"data.result[0]", `unknown field "value"`}},
		{"duplicate key", `{"status":"success","status":"success"}`, []string{"(byte 20)", `duplicate key "status"`}},
		{"other metric", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up"},"values":[]}]}}`,
			[]string{"data.result[0].metric.__name__", `got "up"`}},
		{"bad label", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"0x":"a"},"values":[]}]}}`,
			[]string{"data.result[0].metric", `"0x" is not a label name`}},
		{"value not string", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,0.5]]}]}}`,
			[]string{"data.result[0].values[0][1]", "want a string, got number 0.5"}},
		{"value NaN", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"NaN"]]}]}}`,
			[]string{"h.json:1:87 (byte 86)", "data.result[0].values[0][1]", "not a finite number"}},
		{"value above 1", "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[\n{\"metric\":{},\"values\":[[1,\"1.5\"]]}]}}",
			[]string{"h.json:2:27 (byte 87)", "data.result[0].values[0][1]", "outside [0, 1]"}},
		{"value text", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}`,
			[]string{"data.result[0].values[0][1]", `"x" is not a number`}},
		{"timestamp string", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[["1","1"]]}]}}`,
			[]string{"data.result[0].values[0][0]", "want a timestamp"}},
		{"timestamps go back", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[2,"1"],[1,"1"]]}]}}`,
			[]string{"h.json:1:92 (byte 91)", "data.result[0].values[1][0]", "timestamp 1 does not follow 2"}},
		{"pair too long", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1",3]]}]}}`,
			[]string{"data.result[0].values[0]", `want "]"`}},
		{"duplicate series", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a"},"values":[]},{"metric":{"instance":"a"},"values":[]}]}}`,
			[]string{"data.result[1]", "repeats data.result[0]"}},
		{"histograms", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[]}]}}`,
			[]string{"data.result[0].histograms", "native histograms"}},
		{"missing values", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{}}]}}`,
			[]string{"data.result[0].values: missing"}},
		{"trailing", `{"status":"success","data":{"resultType":"matrix","result":[]}} {}`,
			[]string{"document", "after the document"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadPrometheusJSON("h.json", strings.NewReader(c.in))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// A read error is passed on.
	_, err := ReadPrometheusJSON("h.json", iotest.ErrReader(errors.New("disk on fire")))
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("read error: %v", err)
	}
}

func TestReadPrometheusJSONAccepts(t *testing.T) {
	in := `{"status":"success","warnings":["w"],"data":{"resultType":"matrix","stats":{"timings":{}},"result":[
	  {"metric":{"instance":"a","model":"m","gpu":"0"},"values":[[1700000000.5,"0.25"],[1700000015,"1"]]},
	  {"metric":{"__name__":"gpufrag_fragmentation_ratio","instance":"b"},"values":[[1700000000,"0.25"]]}]}}`
	h, err := ReadPrometheusJSON("h.json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Series) != 2 {
		t.Fatalf("series: %+v", h.Series)
	}
	a, b := h.Series[0], h.Series[1]
	if a.Labels["instance"] != "a" || a.Labels["gpu"] != "0" || len(a.Points) != 2 ||
		a.Points[0] != (Point{1700000000.5, 0.25}) || a.Points[1] != (Point{1700000015, 1}) {
		t.Errorf("series a: %+v", a)
	}
	if _, named := b.Labels["__name__"]; named || b.Points[0].Health != 0.75 {
		t.Errorf("series b (fragmentation 0.25 is health 0.75): %+v", b)
	}
}

func TestReadCSVErrors(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"bad header", "time,instance,model,health\n1,a,m,0.5\n", []string{"h.csv:1:1: timestamp", "the header, if any, must be timestamp,instance,model,health"}},
		// How many fields and which (before: encoding/csv's "record on line 2:
		// wrong number of fields").
		{"fields", "timestamp,instance,model,health\n1,a,m\n", []string{"h.csv:2: 3 fields, want 4: timestamp,instance,model,health (an optional header row; # comments)"}},
		{"fields more", "1,a,m,0.5\n2,a,m,0.5,9\n", []string{"h.csv:2: 5 fields, want 4: timestamp,instance,model,health"}},
		{"another file's header", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n", []string{"h.csv:1: 11 fields, want 4: timestamp,instance,model,health"}},
		{"timestamp", "1,a,m,0.5\nyesterday,a,m,0.5\n", []string{"h.csv:2:1: timestamp", `"yesterday" is neither`}},
		{"timestamp huge", "1e300,a,m,0.5\n", []string{"h.csv:1:1: timestamp", "not a plausible Unix time"}},
		{"empty instance", "1,a,m,0.5\n2,,m,0.5\n", []string{"h.csv:2:3: instance: empty"}},
		{"health text", "1,a,m,high\n", []string{"h.csv:1:7: health", `"high" is not a number`}},
		{"health range", "1,a,m,-0.1\n", []string{"h.csv:1:7: health", "outside [0, 1]"}},
		{"health inf", "1,a,m,+Inf\n", []string{"h.csv:1:7: health", "not a finite number"}},
		{"duplicate time", "1,a,m,0.5\n2,b,m,0.5\n1,a,m,0.6\n", []string{"h.csv:3: timestamp", `instance "a" model "m" already has a row at 1 (line 1)`}},
		{"quote", "1,\"a,m,0.5\n", []string{"h.csv:1: extraneous or missing \" in quoted-field: a quoted field is not closed on its line"}},
		// Issue 28: the line of the record, not the end of the file; no line break in a label.
		{"quote later", "1,a,m,0.5\n2,\"a,m,0.5\n3,a,m,0.5\n", []string{"h.csv:2: extraneous or missing \" in quoted-field"}},
		{"line break", "1,\"a\nb\",m,0.5\n", []string{"h.csv:1:3: instance: holds a line break"}},
		// Invalid UTF-8 in the first 4 KiB is refused before parsing, later by the field.
		{"utf8", "1,a\xff,m,0.5\n", []string{"h.csv:1:4: not a text file: byte 3 (0xff) is not UTF-8"}},
		{"utf8 later", strings.Repeat("1,a,m,0.5\n", 500) + "1,a\xff,m,0.5\n", []string{"h.csv:501:3: instance: not valid UTF-8"}},
		{"nul on line 2", "1,a,m,0.5\n2,a\x00,m,0.5\n", []string{"h.csv:2:4: not a text file: byte 13 is NUL"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCSV("h.csv", strings.NewReader(c.in))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestReadCSVAccepts(t *testing.T) {
	h, err := ReadCSV("h.csv", strings.NewReader("2026-11-30T00:00:15Z,a,,1\n1795996800,a,,0.5\nTimestamp, Instance ,model,HEALTH\n"))
	if err == nil {
		t.Fatalf("a header after the first row was accepted: %+v", h)
	}
	h, err = ReadCSV("h.csv", strings.NewReader("2026-11-30T00:00:15Z,a,,1\n1795996800,a,,0.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	// 2026-11-30T00:00:00Z is Unix 1795996800; rows are sorted by time.
	want := []Point{{1795996800, 0.5}, {1795996815, 1}}
	if len(h.Series) != 1 || h.Series[0].Labels["instance"] != "a" || len(h.Series[0].Points) != 2 ||
		h.Series[0].Points[0] != want[0] || h.Series[0].Points[1] != want[1] {
		t.Errorf("got %+v, want points %v", h.Series, want)
	}
}

// TestReadersBoundFields: a field of megabytes is refused or reported
// without being echoed whole, with its file, line and field; a label value
// over MaxLabelBytes is an error (issue 13 cases 8 and 16).
func TestReadersBoundFields(t *testing.T) {
	longtest.Skip(t)
	huge := strings.Repeat("9", 5<<20)
	long := strings.Repeat("x", MaxLabelBytes+1)
	for _, c := range []struct {
		name string
		read func(string, *strings.Reader) (*History, error)
		in   string
		want []string
	}{
		{"csv huge health", csvReader, "1,a,m," + huge + "x\n", []string{"h:1:7: health", "(5242881 bytes)", "is not a number"}},
		{"csv huge timestamp", csvReader, huge + "x,a,m,0.5\n", []string{"h:1:1: timestamp", "(5242881 bytes)"}},
		{"csv long instance", csvReader, "1," + long + ",m,0.5\n", []string{"h:1:3: instance", "4097 bytes, over 4096"}},
		{"csv long model", csvReader, "1,a," + long + ",0.5\n", []string{"h:1:5: model", "over 4096"}},
		{"json long label", jsonReader, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"` + long + `"},"values":[]}]}}`,
			[]string{"data.result[0].metric.instance", "label value of 4097 bytes, over 4096"}},
		{"json huge value", jsonReader, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"` + huge + `x"]]}]}}`,
			[]string{"data.result[0].values[0][1]", "\"… (5242881 bytes) is not a number"}},
		{"json huge key", jsonReader, `{"` + huge + `":1}`, []string{"document", "unknown field", "(5242880 bytes)"}},
		{"json huge error", jsonReader, `{"status":"error","errorType":"x","error":"` + huge + `"}`, []string{"the query failed", "(5242880 bytes)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.read("h", strings.NewReader(c.in))
			if err == nil {
				t.Fatal("no error")
			}
			if len(err.Error()) > 1000 {
				t.Errorf("message of %d bytes echoes the field", len(err.Error()))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %.300q lacks %q", err, w)
				}
			}
		})
	}
}

func csvReader(name string, r *strings.Reader) (*History, error)  { return ReadCSV(name, r) }
func jsonReader(name string, r *strings.Reader) (*History, error) { return ReadPrometheusJSON(name, r) }

// TestDeriveMaxInstances: more (instance, model) groups than MaxInstances
// is ErrTooManyInstances naming both counts and the limit that would do
// (before, the CLI added the limit given, "or raise the limit
// (--max-instances 1)"); at the limit it derives.
func TestDeriveMaxInstances(t *testing.T) {
	h := &History{}
	for i := range 4 {
		h.Series = append(h.Series, Series{Labels: map[string]string{"instance": string(rune('a' + i))},
			Points: []Point{{Time: 1, Health: 0.5}}})
	}
	o := DefaultOptions()
	o.MaxInstances = 3
	_, err := Derive(h, o)
	if !errors.Is(err, ErrTooManyInstances) || !strings.Contains(err.Error(), "4 (instance, model) pairs, over the limit of 3") ||
		!strings.HasSuffix(err.Error(), "or raise the limit to 4") {
		t.Errorf("Derive = %v, want ErrTooManyInstances naming 4 and 3, and the limit that would do, 4", err)
	}
	o.MaxInstances = 4
	if ts, err := Derive(h, o); err != nil || len(ts) != 4 {
		t.Errorf("at the limit: %d thresholds, %v", len(ts), err)
	}
	o.MaxInstances = -1
	if _, err := Derive(h, o); err == nil {
		t.Error("negative MaxInstances accepted")
	}
}

// TestReadersMaxSeries: past ReadOptions.MaxSeries distinct series both
// readers stop with ErrTooManySeries at the line or offset of the first one
// too many, before building more.
func TestReadersMaxSeries(t *testing.T) {
	csvIn := "1,a,m,0.5\n2,a,m,0.5\n1,b,m,0.5\n1,c,m,0.5\n"
	_, err := ReadCSVOptions("h.csv", strings.NewReader(csvIn), ReadOptions{MaxSeries: 2})
	if !errors.Is(err, ErrTooManySeries) || !strings.Contains(err.Error(), "h.csv:4: ") {
		t.Errorf("CSV: %v, want ErrTooManySeries at line 4", err)
	}
	if _, err := ReadCSVOptions("h.csv", strings.NewReader(csvIn), ReadOptions{MaxSeries: 3}); err != nil {
		t.Errorf("CSV at the limit: %v", err)
	}
	jsonIn := `{"status":"success","data":{"resultType":"matrix","result":[` +
		`{"metric":{"instance":"a"},"values":[]},{"metric":{"instance":"b"},"values":[]}]}}`
	_, err = ReadPrometheusJSONOptions("h.json", strings.NewReader(jsonIn), ReadOptions{MaxSeries: 1})
	if !errors.Is(err, ErrTooManySeries) || !strings.Contains(err.Error(), "data.result[1]") {
		t.Errorf("JSON: %v, want ErrTooManySeries at data.result[1]", err)
	}
	if _, err := ReadPrometheusJSONOptions("h.json", strings.NewReader(jsonIn), ReadOptions{MaxSeries: 2}); err != nil {
		t.Errorf("JSON at the limit: %v", err)
	}
}

// TestRandomBytes (issue 28, item 10): random bytes without NUL, bare or
// after a CSV header or the start of a query_range document, are refused
// within the first read by both readers and ReadHistory. Before, the
// readers read them whole (up to MaxInputBytes): 100 MB of them took
// gpufrag rules 0.5 to 1.3 s and 444 to 476 MB.
func TestRandomBytes(t *testing.T) {
	heads := []string{"timestamp,instance,model,health\n", `{"status":"success","data":{"resultType":"matrix","result":[`}
	for name, read := range map[string]func(io.Reader, string) error{
		"csv":        func(r io.Reader, n string) error { _, err := ReadCSV(n, r); return err },
		"prometheus": func(r io.Reader, n string) error { _, err := ReadPrometheusJSON(n, r); return err },
		"auto":       func(r io.Reader, n string) error { _, _, err := ReadHistory(n, r, "auto", ReadOptions{}); return err },
	} {
		t.Run(name, func(t *testing.T) { loctest.RefusesEarly(t, read, heads...) })
	}
}

// TestFormats: every format Formats lists reads a history of its kind
// (auto either kind), and no other name does.
func TestFormats(t *testing.T) {
	const csv = "1795996800,a,,0.5\n"
	const prom = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"instance":"a"},"values":[[1795996800,"0.5"]]}]}}`
	inputs := map[string][]string{FormatAuto: {csv, prom}, FormatCSV: {csv}, FormatPrometheus: {prom}}
	for _, f := range Formats() {
		ins, ok := inputs[f]
		if !ok {
			t.Errorf("format %q: no input for it in this test", f)
		}
		for _, in := range ins {
			if _, got, err := ReadHistory("h", strings.NewReader(in), f, ReadOptions{}); err != nil || (f != FormatAuto && got != f) {
				t.Errorf("format %s: read as %q, %v", f, got, err)
			}
		}
	}
	if len(Formats()) != len(inputs) {
		t.Errorf("Formats() = %v, want the %d of this test", Formats(), len(inputs))
	}
	if _, _, err := ReadHistory("h", strings.NewReader(csv), "xml", ReadOptions{}); err == nil {
		t.Error("format xml was accepted")
	}
}
