package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseEngineVersion(t *testing.T) {
	for _, tc := range []struct {
		engine EngineKind
		in     string
		want   string // the version, or the error's text
		class  string
	}{
		{EngineVLLMV1, "", "0.23.0", ClassVLLMV1},
		{EngineVLLMV1, "0.8.3", "0.8.3", ClassVLLMV1},
		{EngineVLLMV1, "v0.11", "0.11.0", ClassVLLMV1},
		{EngineVLLMV1, " 0.6.3.post1 ", `V1 engine arrived in 0.8`, ""},
		{EngineVLLMV1, "0.24.0", `not a vLLM release gpufrag knows (0.1 to 0.23); did you mean "0.23"?`, ""},
		{EngineVLLMV1, "1.0", `did you mean "0.23"?`, ""},
		{EngineVLLMV1, "0.0.9", `did you mean "0.1"?`, ""},
		{EngineVLLMV1, "latest", `want a vLLM release such as 0.23.0`, ""},
		{EngineVLLMV0, "", "0.7.3", ClassVLLMV0},
		{EngineVLLMV0, "0.6.3.post1", "0.6.3", ClassVLLMV0},
		{EngineVLLMV0, "0.5.4", "0.5.4", ClassVLLMV0Sync},
		{EngineVLLMV0, "0.1.7", "0.1.7", ClassVLLMV0Sync},
		{EngineVLLMV0, "0.8.3", "0.8.3", ClassVLLMV0},
		{EngineVLLMV0, "0.11.0", "removed its V0 engine in 0.11", ""},
		{EngineSGLang, "", "0.5.6", ClassSGLang},
		{EngineSGLang, "0.4", "0.4.0", ClassSGLang},
		{EngineSGLang, "0.8.3", `not a SGLang release gpufrag knows (0.1 to 0.5); did you mean "0.5"?`, ""},
	} {
		v, err := ParseEngineVersion(tc.engine, tc.in)
		if tc.class == "" {
			if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v %q: %v, want an error saying %q", tc.engine, tc.in, err, tc.want)
			}
			continue
		}
		if err != nil || v.String() != tc.want || OverheadClass(tc.engine, v) != tc.class {
			t.Errorf("%v %q: %v (%s), %v; want %s (%s)", tc.engine, tc.in, v, OverheadClass(tc.engine, v), err, tc.want, tc.class)
		}
	}
}

// TestConfigEngineVersion: a config's release is checked, and a profile of
// another overhead class is refused.
func TestConfigEngineVersion(t *testing.T) {
	m, g := presetPair(t, "llama-3-8b", "h100-80g")
	c := DefaultConfig(m, g)
	c.EngineVersion = "0.7.0"
	if _, err := New(c, nil); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "V1 engine arrived") {
		t.Errorf("V1 at 0.7.0: %v", err)
	}
	c.Engine, c.ChunkedPrefill = EngineVLLMV0, false
	p, err := DefaultProfile("h100-80g", EngineVLLMV0, "0.6.0")
	if err != nil {
		t.Fatal(err)
	}
	c.Profile = p
	c.EngineVersion = "0.5.4"
	if _, err := New(c, nil); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "vllm-v0-sync") {
		t.Errorf("a 0.6.0 profile for a 0.5.4 run: %v", err)
	}
	c.EngineVersion = "0.7.3"
	if _, err := New(c, nil); err != nil {
		t.Errorf("a 0.6.0 profile for a 0.7.3 run (same class): %v", err)
	}
}

// TestEngineReleases: every minor series each engine takes, oldest first,
// its default release's among them; the series just outside are refused.
func TestEngineReleases(t *testing.T) {
	for _, tc := range []struct {
		engine      EngineKind
		first, last string
	}{
		{EngineVLLMV1, "0.8", "0.23"},
		{EngineVLLMV0, "0.1", "0.10"},
		{EngineSGLang, "0.1", "0.5"},
	} {
		rels := EngineReleases(tc.engine)
		if len(rels) == 0 || rels[0] != tc.first || rels[len(rels)-1] != tc.last {
			t.Errorf("%v: %v, want %s to %s", tc.engine, rels, tc.first, tc.last)
			continue
		}
		def := DefaultEngineVersion(tc.engine)
		if want := fmt.Sprintf("%d.%d", def.Major, def.Minor); !slices.Contains(rels, want) {
			t.Errorf("%v: %v lacks the default release's series %s", tc.engine, rels, want)
		}
		for _, r := range rels {
			if _, err := ParseEngineVersion(tc.engine, r); err != nil {
				t.Errorf("%v: %s listed but refused: %v", tc.engine, r, err)
			}
		}
	}
	if got := EngineReleases(EngineKind(99)); got != nil {
		t.Errorf("an invalid engine: %v", got)
	}
}

func TestOnOOMNames(t *testing.T) {
	names := OnOOMNames()
	if len(names) != len(onOOMNames)-1 || slices.Contains(names, OnOOMDefault.String()) {
		t.Errorf("OnOOMNames() = %v, want every behaviour but default", names)
	}
	for _, n := range names {
		if o, err := ParseOnOOM(n); err != nil || o == OnOOMDefault {
			t.Errorf("ParseOnOOM(%q) = %v, %v", n, o, err)
		}
	}
}
