package scenario

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestReadNotAMapping: a file whose document is not a mapping (a CSV
// trace or node list, a list, a number) is "not a scenario", saying what
// a scenario is and what the file holds instead, without YAML's type
// names. Before, a CSV said "line 1: cannot unmarshal !!str `sn,cpu_...`
// into a mapping of fields" (the review's item 4).
func TestReadNotAMapping(t *testing.T) {
	const what = "not a scenario: want a YAML mapping of fields (model:, gpu:, engine:, workload:, runs:; `gpufrag simulate --print-scenario` prints one), not "
	for _, tc := range []struct {
		doc  string
		line int
		want string
	}{
		{"sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,64000,262144,2,P100\n", 1, `text ("sn,cpu_milli,memory_mib,gpu,model")`},
		{"- model: llama-3.1-8b\n", 1, "a list"},
		{"3\n", 1, "a number (3)"},
		{"true\n", 1, "true or false (true)"},
		{"# a comment\n'one line'\n", 2, `text ("one line")`},
	} {
		_, err := Read(strings.NewReader(tc.doc), "x.csv")
		if want := fmt.Sprintf("bad scenario: x.csv: line %d: %s%s", tc.line, what, tc.want); err == nil || err.Error() != want || !errors.Is(err, ErrBadScenario) {
			t.Errorf("%q: %v\nwant %s", tc.doc, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "!!") {
			t.Errorf("%q: %v names a YAML tag", tc.doc, err)
		}
	}
}
