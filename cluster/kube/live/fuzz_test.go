package live

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/kube"
)

// FuzzSnapshot feeds arbitrary GPU annotations and quantities through the
// API path (objects as a list's items, without kind): Snapshot never
// panics, and an object it cannot read is named in a bad-input error.
// Seeds: testdata/fuzz/FuzzSnapshot.
//
//	go test -run XXX -fuzz FuzzSnapshot -fuzztime 20s ./cluster/kube/live/
func FuzzSnapshot(f *testing.F) {
	f.Add("500", "1", "1", "2", "4", "A100", true)
	f.Add("", "", "", "1", "8", "", false)
	f.Add("1001", "9", "0-3", "0", "9", "T4|P100", false)
	// Issue 13: fractional GPU quantities are refused, naming the object.
	f.Add("", "", "", "1.5", "4", "A100", false)
	f.Add("", "", "", "1", "500m", "", false)
	f.Add("500", "2", "1-1", "1", "4", "T4", false)
	f.Fuzz(func(t *testing.T, milli, count, index, podGPU, nodeGPU, model string, cordoned bool) {
		ann := map[string]string{}
		for k, v := range map[string]string{kube.AnnoGPUMilli: milli, kube.AnnoGPUCount: count, kube.AnnoGPUIndex: index, kube.LabelGPUModel: model} {
			if v != "" {
				ann[k] = v
			}
		}
		node, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"name": "n", "labels": map[string]string{kube.LabelGPUProduct: model}},
			"spec":     map[string]any{"unschedulable": cordoned},
			"status":   map[string]any{"allocatable": map[string]string{kube.ResourceGPU: nodeGPU, "cpu": "8"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		pod, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"name": "p", "namespace": "ns", "annotations": ann},
			"spec": map[string]any{"nodeName": "n", "containers": []any{map[string]any{"resources": map[string]any{
				"requests": map[string]string{kube.ResourceGPU: podGPU}}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		s, err := Snapshot([]json.RawMessage{node}, []json.RawMessage{pod})
		if err != nil {
			if !errors.Is(err, cluster.ErrBadInput) || !(strings.Contains(err.Error(), "pod ns/p") || strings.Contains(err.Error(), "node n")) {
				t.Fatalf("error %q: want a bad-input error naming the object", err)
			}
			return
		}
		if len(s.Nodes) != 1 || len(s.Pods) != 1 || s.Cordoned["n"] != cordoned {
			t.Fatalf("snapshot %+v: want the one node and pod", s)
		}
		kube.Inspect(s, cluster.DefaultCoverage) // must not panic either
	})
}
