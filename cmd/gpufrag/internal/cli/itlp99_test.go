package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/calib"
)

// calib/itl_p99.yaml is the step model's: its 32 runs, replayed with the
// trace and arguments the file records for each (scripts/itl-check writes
// them, the only place a run's setup is written out), give the ITL p99s it
// holds. crusoe's 20 and dstack's 9 replay the cut copies calib's fidelity
// page replays (calib/testdata/bench/{crusoe-l40s,dstack-h100}-*.lens.json:
// the same lengths and rates, so the same replay), always; surajssd's 3
// replay ../shared's files (skipped without them). A change to the step
// model that moves any of them fails here until the script writes the file
// again.
func TestITLP99FileCurrent(t *testing.T) {
	runs, err := calib.ITLP99Runs()
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, r := range runs {
		per[r.Source]++
	}
	if len(runs) != 32 || per["crusoe-cookbook"] != 20 || per["dstack-8xh100-405b-fp8"] != 9 || per["surajssd-llm-k8s"] != 3 {
		t.Fatalf("%d runs (%v), want 32: 20 crusoe-cookbook, 9 dstack-8xh100-405b-fp8, 3 surajssd-llm-k8s", len(runs), per)
	}
	root := filepath.Join("..", "..", "..", "..")
	var skipped []string
	for _, r := range runs {
		trace := filepath.Join(root, filepath.FromSlash(r.Trace))
		if !strings.HasPrefix(r.Trace, "calib/testdata/") && !strings.HasPrefix(r.Trace, "../shared/data/") {
			t.Fatalf("%s: trace %s is neither the repository's copy (calib/testdata) nor ../shared's", r.Run, r.Trace)
		}
		if _, err := os.Stat(trace); err != nil {
			if !strings.HasPrefix(r.Trace, "../shared/") {
				t.Fatalf("%s: %v (the repository's own copy)", r.Run, err)
			}
			skipped = append(skipped, r.Run)
			continue
		}
		code, out, errs := run(t, "", append([]string{"simulate", "--trace", trace, "--kv", "paged:16", "--alloc", "caching", "--json"}, r.Args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", r.Run, code, errs)
		}
		var doc struct {
			Results []struct {
				ITL struct{ P99 float64 } `json:"itl_s"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Results) != 1 {
			t.Fatalf("%s: %d results, want 1 (%v)", r.Run, len(doc.Results), err)
		}
		// The file keeps 3 decimals of a millisecond.
		if got := 1e3 * doc.Results[0].ITL.P99; !(math.Abs(got-r.SimulatedMs) <= 0.0006) {
			t.Errorf("%s: ITL p99 %.4f ms, calib/itl_p99.yaml holds %.3f: run scripts/itl-check \"\" calib/itl_p99.yaml", r.Run, got, r.SimulatedMs)
		}
	}
	if len(skipped) > 0 {
		t.Skipf("shared benchmark results not present: %v not replayed; the other %d were", skipped, len(runs)-len(skipped))
	}
}
