package stock

import (
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/cluster/protocol"
)

// The report lists every setting ranked, then the best Volcano and
// Kubernetes settings as YAML documents that parse.
func TestWriteReport(t *testing.T) {
	ranked, err := RankStock([]protocol.Summary{stockSummary("volcano-binpack:gpu=8", 100, 0.9, 10), stockSummary("mostallocated:gpu=3", 100, 0.95, 5),
		stockSummary("volcano-binpack:gpu=2", 100, 0.8, 20)})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := WriteReport(&sb, Inputs{NodesFile: "n\x1b.csv", PodsFile: "p.csv", Nodes: 4, GPUs: 16, Seeds: "1-2"}, ranked); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	if !strings.HasPrefix(out, `# Simulated with the FGD protocol on n\x1b.csv (4 nodes, 16 GPUs) and p.csv, seeds 1-2:`) {
		t.Errorf("header (file names escaped): %q", strings.SplitN(out, "\n", 2)[0])
	}
	for i, r := range ranked {
		k := strings.Index(out, "#   "+r.Spec+" ")
		if k < 0 || i > 0 && k < strings.Index(out, "#   "+ranked[i-1].Spec+" ") {
			t.Errorf("%s not listed in rank %d", r.Spec, i)
		}
	}
	v, kube := BestStock(ranked)
	for _, part := range []struct{ head, spec string }{{"volcano-scheduler.conf", v.Spec}, {"KubeSchedulerConfiguration", kube.Spec}} {
		head := fmt.Sprintf("\n# --- %s (%s: ", part.head, part.spec)
		k := strings.Index(out, head)
		if k < 0 {
			t.Fatalf("no %q in\n%s", head, out)
		}
		doc := out[k+1:]
		doc = doc[strings.IndexByte(doc, '\n')+1:]
		if end := strings.Index(doc, "\n# ---"); end >= 0 {
			doc = doc[:end]
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil || len(m) == 0 {
			t.Errorf("%s: %v\n%s", part.head, err, doc)
		}
	}
}
