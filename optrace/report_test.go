package optrace_test

import (
	"encoding/json"
	"testing"

	"github.com/gpufrag/gpufrag/optrace"
)

// TestReportJSON holds the replay --json document's top-level keys and
// their order (docs/json.md).
func TestReportJSON(t *testing.T) {
	b, err := json.Marshal(optrace.Report{Trace: "t.jsonl", CapacityBytes: 1 << 30, OtherUseBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"trace":"t.jsonl","capacity_bytes":1073741824,"other_use_bytes":1048576,"results":null}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
}
