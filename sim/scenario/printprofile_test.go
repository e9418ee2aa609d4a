package scenario

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/sim"
)

// TestWriteProfile: a run on the roofline prints the joint model's
// profile of its GPU and engine with a note; a scenario that names a file
// prints the file's profile without the embedded header or a note; --json
// is the same document with the keys in the same order.
func TestWriteProfile(t *testing.T) {
	s := &Scenario{GPU: "a100-40g", Profile: ProfileRoofline}
	var b strings.Builder
	note, err := WriteProfile(&b, s, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.LoadProfile(strings.NewReader(b.String()), "out")
	if d, _ := sim.DefaultProfile("a100-40g", sim.EngineVLLMV1, ""); err != nil || !reflect.DeepEqual(p, d) ||
		!strings.HasPrefix(b.String(), "# The joint step-time model's profile of a100-40g under vllm-v1") ||
		// The peaks are not the datasheet's (the A100's bandwidth ×0.94):
		// the header says what they are.
		!strings.Contains(b.String(), "# (the GPU preset's sustained peaks") || strings.Contains(b.String(), "datasheet peaks") ||
		!strings.Contains(note, "the run times its steps with the roofline") {
		t.Fatalf("roofline: note %q, %v:\n%s", note, err, b.String())
	}
	yamlText := b.String()

	file := profileYAML(t, "h200-141g", sim.EngineSGLang)
	s = &Scenario{GPU: "h200-141g", Profile: "mine.yaml", Engine: Engine{Name: "sglang"}}
	open := func(name string) (io.ReadCloser, error) {
		if name != "mine.yaml" {
			return nil, errors.New("no such file " + name)
		}
		return io.NopCloser(strings.NewReader(file)), nil
	}
	b.Reset()
	if note, err := WriteProfile(&b, s, open, false); err != nil || note != "" || b.String() != file {
		t.Fatalf("a profile file: note %q, %v:\n%s", note, err, b.String())
	}

	s = &Scenario{GPU: "a100-40g", Profile: ProfileRoofline}
	b.Reset()
	if _, err := WriteProfile(&b, s, nil, true); err != nil {
		t.Fatal(err)
	}
	var fromJSON, fromYAML map[string]any
	if err := json.Unmarshal([]byte(b.String()), &fromJSON); err != nil {
		t.Fatalf("JSON: %v\n%s", err, b.String())
	}
	if err := yaml.Unmarshal([]byte(yamlText), &fromYAML); err != nil {
		t.Fatal(err)
	}
	j1, _ := json.Marshal(fromJSON)
	j2, _ := json.Marshal(fromYAML)
	if string(j1) != string(j2) {
		t.Errorf("JSON and YAML differ:\n%s\n%s", j1, j2)
	}
	if first := strings.Index(b.String(), `"`); first < 0 || !strings.HasPrefix(b.String()[first:], `"`+firstKey(t, yamlText)+`"`) {
		t.Errorf("JSON does not start with the YAML's first key %q:\n%.200s", firstKey(t, yamlText), b.String())
	}

	for _, bad := range []*Scenario{{GPU: "nope"}, {GPU: "a100-40g", Engine: Engine{Name: "trt"}}, {GPU: "a100-40g", Engine: Engine{Version: "99"}}} {
		if _, err := WriteProfile(io.Discard, bad, nil, false); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func firstKey(t *testing.T, text string) string {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(text), &n); err != nil {
		t.Fatal(err)
	}
	return n.Content[0].Content[0].Value
}

// TestYAMLToJSON: order kept, aliases followed, scalars typed, a value
// with no JSON form refused with its line.
func TestYAMLToJSON(t *testing.T) {
	got, err := yamlToJSON([]byte("b: 1\na: &x [true, null, 2.5, text]\nc: *x\n"))
	want := "{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null,\n    2.5,\n    \"text\"\n  ],\n  \"c\": [\n    true,\n    null,\n    2.5,\n    \"text\"\n  ]\n}\n"
	if err != nil || string(got) != want {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
	if _, err := yamlToJSON([]byte("a: 1\nb: .nan\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("NaN: %v", err)
	}
}
