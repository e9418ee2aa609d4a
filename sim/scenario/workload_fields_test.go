package scenario

import (
	"regexp"
	"strings"
	"testing"
)

// goName matches a Go identifier of two words run together (MinTurns,
// ThinkSeconds, VaryBeam), not after a package name (workload.MaxTokens,
// a limit's name, as the README's table of limits gives them) and not
// NaN: a name the scenario's reader does not have.
var goName = regexp.MustCompile(`(?:^|[^.\w])([A-Z][a-z]+[A-Z][A-Za-z]*)\b`)

func goNameIn(msg string) string {
	for _, m := range goName.FindAllStringSubmatch(msg, -1) {
		if m[1] != "NaN" {
			return m[1]
		}
	}
	return ""
}

// TestWorkloadSettingsNameTheirKey: a bad setting of the workload section
// names its own key, as the file spells it, with its line; no message
// names a Go field. Before, "min_turns: 5, max_turns: 2" was
// `field "workload.sessions": bad configuration: Sessions: need 1 <=
// MinTurns <= MaxTurns (got 5, 2)` (the review's item 2), and likewise
// every sessions key, workload.bucket ("Bucket: k must be ...") and
// workload.beam ("VaryBeam: widths must be ...").
func TestWorkloadSettingsNameTheirKey(t *testing.T) {
	// sessions is a sessions section (its keys on lines 8-13) with key: v
	// in place of the key's line, or on line 14.
	sessions := func(kv string) string {
		lines := []string{"count: 2", "rate: 1", "min_turns: 1", "max_turns: 2", "min_user: 1", "max_user: 2"}
		key, _, _ := strings.Cut(kv, ":")
		found := false
		for i, l := range lines {
			if strings.HasPrefix(l, key+":") {
				lines[i], found = kv, true
			}
		}
		if !found {
			lines = append(lines, kv)
		}
		return "workload:\n  sessions:\n    " + strings.Join(lines, "\n    ") + "\n"
	}
	requests := "workload:\n  requests: {rate: 1, count: 3, prompt: {dist: fixed, min: 10}, output: {dist: fixed, min: 5}}\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"turns", strings.Replace(sessions("max_turns: 2"), "min_turns: 1", "min_turns: 5", 1), `line 11: field "workload.sessions.max_turns": 2 is below min_turns 5`},
		{"no turns", sessions("min_turns: 0"), `line 10: field "workload.sessions.min_turns": 0: want a number of turns, 1 or more`},
		{"negative count", sessions("count: -3"), `line 8: field "workload.sessions.count": -3 is negative`},
		{"system tokens", sessions("system_tokens: -1"), `line 14: field "workload.sessions.system_tokens": -1: want 0 to 16777216 tokens`},
		{"min user", sessions("min_user: 0"), `line 12: field "workload.sessions.min_user": 0: want 1 to 16777216 tokens`},
		{"max user", sessions("max_user: 20000000"), `line 13: field "workload.sessions.max_user": 20000000: want min_user (1) to 16777216 tokens`},
		{"min output", sessions("min_output: -1"), `line 14: field "workload.sessions.min_output": -1: want 0 to 16777216 tokens`},
		{"max output", sessions("min_output: 9"), `line 7: field "workload.sessions.max_output": 0: want min_output (9) to 16777216 tokens`},
		{"think", sessions("think_s: -1"), `line 14: field "workload.sessions.think_s": -1: want the mean seconds between a turn and the next, 0 or more`},
		{"think NaN", sessions("think_s: .nan"), `line 14: field "workload.sessions.think_s": NaN: want`},
		{"think Inf", sessions("think_s: .inf"), `line 14: field "workload.sessions.think_s": +Inf: want`},
		{"max context", sessions("max_context: -1"), `line 14: field "workload.sessions.max_context": -1: want 1 to 16777216 tokens`},
		{"bucket", requests + "  bucket: 20000000\n", `line 8: field "workload.bucket": 20000000: want a multiple to round prompts up to, 1 to 16777216 tokens`},
		{"beam", requests + "  beam: [1, 0]\n", `line 8: field "workload.beam[1]": 0: want a width from 1 to 1024`},
		{"beam wide", requests + "  beam:\n    - 1\n    - 2000\n", `line 10: field "workload.beam[1]": 2000: want a width from 1 to 1024`},
		{"unquantized", "weight_dtype: fp8\nunquantized: layers.99\n" + requests, `line 7: field "unquantized": bad model: llama-3.1-8b: unquantized: layer 99, but the model has 32 layers`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(read(t, base+tc.yaml), nil)
			if want := "bad scenario: test.yaml: " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got %v\nwant %q...", err, want)
			}
			if err != nil && goNameIn(err.Error()) != "" {
				t.Errorf("%v names a Go identifier (%s)", err, goNameIn(err.Error()))
			}
		})
	}
}
