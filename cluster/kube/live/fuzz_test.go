package live

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/kube"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzSnapshot feeds arbitrary GPU annotations and quantities through the
// typed-object path: Snapshot never panics, and an object it cannot read
// is named in a bad-input error. Seeds: testdata/fuzz/FuzzSnapshot.
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
		pq, err := resource.ParseQuantity(podGPU)
		if err != nil {
			return // the API server never sends an unparsable quantity
		}
		nq, err := resource.ParseQuantity(nodeGPU)
		if err != nil {
			return
		}
		ann := map[string]string{}
		for k, v := range map[string]string{kube.AnnoGPUMilli: milli, kube.AnnoGPUCount: count, kube.AnnoGPUIndex: index, kube.LabelGPUModel: model} {
			if v != "" {
				ann[k] = v
			}
		}
		node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{kube.LabelGPUProduct: model}},
			Spec:   corev1.NodeSpec{Unschedulable: cordoned},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{kube.ResourceGPU: nq, corev1.ResourceCPU: resource.MustParse("8")}}}
		pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: ann},
			Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{kube.ResourceGPU: pq}}}}}}
		s, err := Snapshot([]corev1.Node{node}, []corev1.Pod{pod})
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
