package experiments

import (
	"strings"
	"testing"
)

func TestList(t *testing.T) {
	exps := []*Experiment{
		{Name: "a", File: "a.yaml", Claim: "  a claim\n", Source: " src ", Runs: []Run{{}, {}},
			Decide: []Check{{}}, CannotSimulate: "\n"},
		{Name: "b", File: "b.yaml", Claim: "b"},
	}
	got := List(exps)
	if len(got) != 2 {
		t.Fatalf("List: %d entries, want 2", len(got))
	}
	a := got[0]
	if a.Name != "a" || a.File != "a.yaml" || a.Claim != "a claim" || a.Source != "src" ||
		a.Runs != 2 || a.Rules != 1 || a.CannotSimulate != "" || a.Kind != exps[0].Kind() {
		t.Errorf("entry a: %+v", a)
	}
	if got[1].Name != "b" || got[1].Runs != 0 {
		t.Errorf("entry b: %+v", got[1])
	}
	// The embedded suite: one entry per experiment, in order.
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range List(all) {
		if e.Name != all[i].Name || strings.TrimSpace(e.Claim) != e.Claim || e.Claim == "" {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
}
