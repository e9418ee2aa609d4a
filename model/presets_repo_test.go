package model

import "testing"

// Every preset names the repository its config came from, and nothing else
// does.
func TestPresetRepo(t *testing.T) {
	for _, name := range PresetNames() {
		if r, ok := PresetRepo(name); !ok || r == "" {
			t.Errorf("preset %s: no repository", name)
		}
	}
	if len(presetRepos) != len(presets) {
		t.Errorf("%d repositories for %d presets", len(presetRepos), len(presets))
	}
	if r, _ := PresetRepo(" Llama-3.1-8B "); r != "meta-llama/Llama-3.1-8B" {
		t.Errorf("PresetRepo(llama-3.1-8b) = %q", r)
	}
	if _, ok := PresetRepo("llama3-8b"); ok {
		t.Error("a name that is not a preset has a repository")
	}
}
