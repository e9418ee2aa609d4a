package cluster

import (
	"context"
	"math"
	"testing"
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

// TestJudge on the testdata head of openb: FGDReserve without its
// reservation and tie-break is FGD, so every difference is exactly zero
// and it does not pass (the rule asks for a mean below FGD); Random is
// worse than FGD beyond noise on the list and fails.
func TestJudge(t *testing.T) {
	nodes, err := ReadNodesFile("testdata/openb_nodes_head40.csv")
	if err != nil {
		t.Fatal(err)
	}
	pods, err := ReadPodsFile("testdata/openb_pods_multigpu50_head60.csv")
	if err != nil {
		t.Fatal(err)
	}
	j, err := Judge(context.Background(), JudgeConfig{
		Nodes: nodes, Lists: []List{{Name: "head", Family: FamilyMultiGPU, Pods: pods}},
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

// TestFamilyOf reads the family from openb file names.
func TestFamilyOf(t *testing.T) {
	for name, want := range map[string]Family{
		"openb_pod_list_cpu050": FamilyCPU, "openb_pod_list_gpushare20.csv": FamilyGPUShare,
		"openb_pod_list_gpuspec05": FamilyGPUSpec, "openb_pod_list_multigpu40": FamilyMultiGPU,
		"openb_pod_list_default": "default", "mine.json": "default",
	} {
		if got := FamilyOf(name); got != want {
			t.Errorf("FamilyOf(%s) = %s, want %s", name, got, want)
		}
	}
}

// TestFGDReserveOptions: the options parse, and bad ones are refused.
func TestFGDReserveOptions(t *testing.T) {
	target := NewTarget([]Pod{{Name: "x", MilliCPU: 1, NumGPU: 1, MilliGPU: 1000}}, 1)
	p, err := NewPolicy("fgd-reserve:scarcity=7.5", target)
	if err != nil {
		t.Fatal(err)
	}
	if f := p.(*FGDReserve); f.Scarcity != 7.5 || f.FitTies || f.Threshold != DefaultThreshold {
		t.Errorf("options: %+v", f)
	}
	if p, err := NewPolicy("fgd-reserve:threshold=0,tie=fit", target); err != nil || !p.(*FGDReserve).FitTies || p.(*FGDReserve).Threshold != 0 {
		t.Errorf("the first design's options: %v %+v", err, p)
	}
	for _, bad := range []string{"fgd-reserve:threshold=1", "fgd-reserve:scarcity=-1", "fgd-reserve:scarcity=x", "fgd-reserve:tie=random", "fgd-reserve:depth=2"} {
		if _, err := NewPolicy(bad, target); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
