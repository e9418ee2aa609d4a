package analysis_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// An oom entry names the record_function range open on its device at its
// time (the innermost; ranges of other devices and closed ones do not
// count) and its user_metadata; pinned host memory is reported apart.
func TestOOMContextAndPinnedHost(t *testing.T) {
	o1, o2 := oom(30*mib, 1*mib), oom(40*mib, 1*mib)
	o1.TimeUS, o2.TimeUS = 150, 350
	o2.UserMetadata = "batch=64"
	s := snap(events(o1, o2), seg(segA, "large", live(4*mib, 4*mib, "x"), free(16*mib)))
	s.ExternalAnnotations = []snapshot.Annotation{
		{Stage: "START", Name: "forward", TimeUS: 100},
		{Stage: "START", Name: "attention", TimeUS: 120},
		{Stage: "START", Name: "other-device", Device: 1, TimeUS: 130},
		{Stage: "END", Name: "attention", TimeUS: 200},
		{Stage: "START", Name: "mlp", TimeUS: 300},
		{Stage: "END", Name: "mlp", TimeUS: 340},
	}
	s.Extra = map[string]any{"host_segments": []any{"a", "b"}}
	r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	oo := r.Devices[0].OOMs
	if len(oo) != 2 || oo[0].During != "attention" || oo[0].UserMetadata != "" || oo[1].During != "forward" || oo[1].UserMetadata != "batch=64" {
		t.Fatalf("oom context %+v", oo)
	}
	if r.PinnedHost == nil || r.PinnedHost.Segments != 2 {
		t.Fatalf("pinned host %+v", r.PinnedHost)
	}
	var text strings.Builder
	if err := r.WriteText(&text, "ctx"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"during: attention (record_function", "user metadata: batch=64", "Pinned host memory (page-locked CPU memory, not in any device figure below): 2 segments"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	b, err := json.Marshal(r.Doc("ctx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"during":"forward"`, `"user_metadata":"batch=64"`, `"pinned_host":{"segments":2`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
}
