package calib

import (
	"errors"
	"strings"
	"testing"
)

func TestPublishedParses(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Figures) == 0 || len(d.Sources) == 0 {
		t.Fatalf("published.yaml: %d sources, %d figures", len(d.Sources), len(d.Figures))
	}
	for _, f := range d.Figures {
		if f.Line == 0 {
			t.Fatalf("figure %q: no line recorded", f.ID)
		}
	}
}

// Every figure can be traced: a source with a licence, a reference inside
// it, a revision and an address; ids are unique.
func TestPublishedTraceable(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	src := map[string]Source{}
	for _, s := range d.Sources {
		src[s.ID] = s
	}
	seen := map[string]bool{}
	for _, f := range d.Figures {
		s, ok := src[f.Source]
		if !ok || s.Licence == "" || f.Ref == "" || f.Revision == "" || !strings.HasPrefix(f.URL, "https://") {
			t.Errorf("line %d: figure %q is not traceable (source %q, ref %q, revision %q, url %q)", f.Line, f.ID, f.Source, f.Ref, f.Revision, f.URL)
		}
		if seen[f.ID] {
			t.Errorf("line %d: figure id %q repeated", f.Line, f.ID)
		}
		seen[f.ID] = true
	}
}

// The reproduction targets of issue 16 are held out, never fitted.
func TestPaperTargetsHeldOut(t *testing.T) {
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range d.Figures {
		if f.Source == "vllm-paper" && (f.Metric == "mean_batch" || f.Metric == "request_rate_at_slo") {
			n++
			if f.Use != "holdout" {
				t.Errorf("line %d: %s: use %q, want holdout", f.Line, f.ID, f.Use)
			}
		}
	}
	if n != 8 {
		t.Errorf("vLLM paper Fig. 12a/13a targets: %d figures, want 8", n)
	}
}

const good = `version: 1
sources:
  - id: s
    title: t
    url: https://example.org/s
    revision: abc
    licence: MIT
figures:
  - id: f-1
    source: s
    ref: file.json, field x
    revision: abc
    url: https://example.org/s/file.json
    metric: ttft_median
    unit: ms
    value: 12.5
    read: printed
    precision: float64
    verified: true
    use: fit
    use_note: n
    setup:
      model: m
      gpu: a100-80g
      gpus: 1
      tp: 1
      engine: vllm
      workload:
        request_rate: .inf
`

func TestParseGood(t *testing.T) {
	d, err := Parse("x.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	f := d.Figures[0]
	if f.Line != 9 || f.Value != 12.5 || f.Setup.Workload.RequestRate == nil || *f.Setup.Workload.RequestRate <= 1e308 {
		t.Errorf("figure = %+v", f)
	}
}

func TestParseRejects(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"unknown field", "    unit: ms\n", "    unit: ms\n    colour: red\n", "field colour not found"},
		{"missing url", "    url: https://example.org/s/file.json\n", "", `line 9: figure "f-1": field "url"`},
		{"unknown source", "    source: s\n", "    source: q\n", `field "source": "q" is not in sources`},
		{"unknown metric", "metric: ttft_median", "metric: ttft_medain", `field "metric"`},
		{"unknown gpu", "gpu: a100-80g", "gpu: a100", `field "setup.gpu"`},
		{"unverified fit", "verified: true", "verified: false\n    verify_note: not re-read", `fit needs a verified figure`},
		{"unverified without note", "verified: true\n    use: fit", "verified: false\n    use: holdout", `field "verify_note"`},
		{"bad value", "value: 12.5", "value: .nan", `field "value"`},
		{"tp above gpus", "tp: 1", "tp: 2", `field "setup.tp"`},
		{"bad weight dtype", "engine: vllm\n", "engine: vllm\n      weight_dtype: fp9\n", `field "setup.weight_dtype"`},
		{"int4 kv cache", "engine: vllm\n", "engine: vllm\n      kv_dtype: int4\n", `field "setup.kv_dtype"`},
		{"duplicate id", "", "", "repeats the figure at line 9"},
		{"not yaml", "version: 1", "version: [", "invalid published dataset"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := strings.Replace(good, c.from, c.to, 1)
			if c.name == "duplicate id" {
				in = good + good[strings.Index(good, "  - id: f-1"):]
			}
			_, err := Parse("x.yaml", []byte(in))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want ErrInvalid containing %q", err, c.want)
			}
			if err != nil && !strings.Contains(err.Error(), "x.yaml") {
				t.Errorf("err = %v: does not name the file", err)
			}
		})
	}
}
