package judge

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/protocol"

	"github.com/gpufrag/gpufrag/cluster/gen"
	"github.com/gpufrag/gpufrag/cluster/internal/clustertest"
	"github.com/gpufrag/gpufrag/cluster/lists"
)

// TestNewPaired checks the interval against hand-computed values: for
// differences 1, 2, 3 the mean is 2, the standard error 1/sqrt(3) and the
// half-width t(2) = 4.303 times it.
func TestNewPaired(t *testing.T) {
	d := NewPaired([]float64{1, 2, 3})
	se := 1 / math.Sqrt(3)
	if d.N != 3 || d.Mean != 2 || math.Abs(d.SE-se) > 1e-12 || math.Abs(d.High-2-4.303*se) > 1e-9 || math.Abs(2-d.Low-4.303*se) > 1e-9 {
		t.Errorf("NewPaired(1,2,3) = %+v", d)
	}
	for _, c := range []struct {
		ds   []float64
		want string
	}{
		{[]float64{0.1, 0.12, 0.09, 0.11}, "worse"},
		{[]float64{-0.1, -0.12, -0.09, -0.11}, "better"},
		{[]float64{-0.1, 0.1, -0.05, 0.06}, "equal"},
		{[]float64{0, 0, 0}, "equal"},
		{[]float64{0.5}, "worse"}, // one pair: no spread, the interval is the mean
	} {
		if got := NewPaired(c.ds).Verdict(); got != c.want {
			t.Errorf("Verdict(%v) = %s, want %s", c.ds, got, c.want)
		}
	}
	if tQuantile975(9) != 2.262 || tQuantile975(100) != 1.96 || tQuantile975(0) != 0 {
		t.Errorf("t quantiles: %v %v %v", tQuantile975(9), tQuantile975(100), tQuantile975(0))
	}
}

// headLists reads the testdata head of openb: 40 nodes, 60 pods of the
// multigpu50 list.
func headLists(t *testing.T) ([]cluster.Node, []cluster.Pod) {
	t.Helper()
	nodes, err := lists.ReadNodesFile(clustertest.Testdata(t, "openb_nodes_head40.csv"))
	if err != nil {
		t.Fatal(err)
	}
	pods, err := lists.ReadPodsFile(clustertest.Testdata(t, "openb_pods_multigpu50_head60.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return nodes, pods
}

// TestJudge on the testdata head of openb: FGDReserve without its
// reservation and tie-break is FGD, so every difference is exactly zero
// and it does not pass (the rule asks for a mean below FGD); Random is
// worse than FGD beyond noise on the list and fails.
func TestJudge(t *testing.T) {
	nodes, pods := headLists(t)
	j, err := Judge(context.Background(), JudgeConfig{
		Nodes: nodes, Lists: []gen.List{{Name: "head", Family: gen.FamilyMultiGPU, Pods: pods}},
		Ref: "fgd", Candidates: []string{"fgd-reserve:scarcity=0,tie=order", "random"}, Seeds: []uint64{1, 2, 3, 4, 5, 6},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := j.Lists[0].Diffs[0]; d.Mean != 0 || d.SE != 0 || j.Passes[0] {
		t.Errorf("FGD against itself: %+v, passes %v", d, j.Passes[0])
	}
	if d := j.Families[0].Diffs[1]; d.Verdict() != "worse" || j.Passes[1] || j.Families[0].Worse[1] != 1 {
		t.Errorf("random against FGD: %+v (%s), passes %v", d, d.Verdict(), j.Passes[1])
	}
	if j.Best() != "" {
		t.Errorf("Best() = %q, want none", j.Best())
	}
}

// TestJudgeRunOrder checks that a judgement does not depend on the order
// in which its Runner runs the lists' cells (they are one job list: a
// Runner that runs it backwards gives the same judgement), and that a
// failing list is named in the error, whatever the order.
func TestJudgeRunOrder(t *testing.T) {
	nodes, pods := headLists(t)
	backwards := func(ctx context.Context, n int, job func(context.Context, int) error) error {
		for i := n - 1; i >= 0; i-- {
			if err := job(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
	c := JudgeConfig{
		Nodes: nodes, Lists: []gen.List{{Name: "a", Family: gen.FamilyMultiGPU, Pods: pods}, {Name: "b", Family: gen.FamilyMultiGPU, Pods: pods[10:]}},
		Ref: "fgd", Candidates: []string{"random", "bestfit"}, Seeds: []uint64{1, 2, 3},
	}
	want, err := Judge(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Judge(context.Background(), c, backwards)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run backwards:\n%+v\nin order:\n%+v", got, want)
	}
	cpuOnly := []cluster.Pod{{Name: "c", MilliCPU: 1000}}
	c.Lists = append(c.Lists, gen.List{Name: "cpu-only", Pods: cpuOnly}, gen.List{Name: "cpu-only-2", Pods: cpuOnly})
	for _, run := range []protocol.Runner{nil, backwards} {
		if _, err := Judge(context.Background(), c, run); !errors.Is(err, cluster.ErrEmpty) || !strings.HasPrefix(err.Error(), "list cpu-only: ") {
			t.Errorf("a list without GPU pods: error %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Judge(ctx, c, nil); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "list a: ") {
		t.Errorf("cancelled: error %v", err)
	}
}

// TestFamilyOf reads the family from openb file names.
func TestFamilyOf(t *testing.T) {
	for name, want := range map[string]gen.Family{
		"openb_pod_list_cpu050": gen.FamilyCPU, "openb_pod_list_gpushare20.csv": gen.FamilyGPUShare,
		"openb_pod_list_gpuspec05": gen.FamilyGPUSpec, "openb_pod_list_multigpu40": gen.FamilyMultiGPU,
		"openb_pod_list_default": "default", "mine.json": "default",
	} {
		if got := gen.FamilyOf(name); got != want {
			t.Errorf("FamilyOf(%s) = %s, want %s", name, got, want)
		}
	}
}
