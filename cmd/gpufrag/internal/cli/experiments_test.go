package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/experiments"
)

func TestExperimentsList(t *testing.T) {
	code, out, errOut := run(t, "", "experiments", "list", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list []experiments.ListEntry
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) < 16 {
		t.Fatalf("%d experiments, the contract wants at least 16", len(list))
	}
	for _, e := range list {
		if e.Name == "" || e.Claim == "" || e.Kind == "" {
			t.Errorf("incomplete entry %+v", e)
		}
	}
	code, out, _ = run(t, "", "experiments", "list")
	if code != 0 || !strings.Contains(out, "kv-1m-llama70b") {
		t.Fatalf("text list: exit %d\n%s", code, out)
	}
}

func TestExperimentsRun(t *testing.T) {
	code, out, errOut := run(t, "", "experiments", "run", "kv-1m-llama70b", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var outs []struct {
		Name    string `json:"name"`
		Verdict string `json:"verdict"`
		Checks  []struct {
			Value *float64 `json:"value"`
			Pass  bool     `json:"pass"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &outs); err != nil {
		t.Fatal(err)
	}
	// Llama-3-70B: 2 × 80 layers × 8 KV heads × 128 × 2 bytes × 1M tokens.
	if len(outs) != 1 || len(outs[0].Checks) != 1 || outs[0].Checks[0].Value == nil ||
		*outs[0].Checks[0].Value != 327.68 || outs[0].Verdict != "does not hold" {
		t.Fatalf("unexpected outcome: %s", out)
	}
	code, out, errOut = run(t, "", "experiments", "run", "kv-1m-llama70b")
	if code != 0 || !strings.Contains(out, "kv-1m-llama70b: DOES NOT HOLD") {
		t.Fatalf("text: exit %d\n%s%s", code, out, errOut)
	}
}

func TestExperimentsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"experiments", "run", "no-such-experiment"},
		{"experiments", "run", "int8-kv", "--write-findings"},
		{"experiments", "run", "--reduced", "--write-findings"},
		{"experiments", "run", "--parallel", "-1"},
		{"experiments", "run", "kv-1m-llama70b", "--parallel", "0"}, // its message says "want at least 1", as advise's and calibrate's do
		{"experiments", "run", "--write-findings", "--root", "/nonexistent"},
		{"experiments", "list", "extra"},
	} {
		code, _, errOut := run(t, "", args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}
