package calib

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gpufrag/gpufrag/internal/testkit"
	"github.com/gpufrag/gpufrag/sim"
)

// TestJointFitKeepsCitedParams: the joint fit never frees a parameter of
// jointCited (attention.kv_seq_ns, drawn from a kernel table), even
// on figures that feel it: lmdeploy-a100's static batches move by more than
// choose's threshold when it moves, and choose still leaves it out while it
// frees others. Reverting the rule (or emptying jointCited) fails here.
func TestJointFitKeepsCitedParams(t *testing.T) {
	if testkit.SlowBuild {
		t.Skip("dozens of simulations with every allocator self-check")
	}
	if !slices.Contains(jointCited, "attention.kv_seq_ns") {
		t.Fatalf("jointCited = %v: attention.kv_seq_ns is drawn from a kernel table (sim/profiles/prior.yaml)", jointCited)
	}
	d, err := Published()
	if err != nil {
		t.Fatal(err)
	}
	sub := &Dataset{Version: d.Version, Sources: d.Sources}
	for _, f := range d.Figures {
		if f.Use == "fit" && f.Source == "lmdeploy-a100" {
			sub.Figures = append(sub.Figures, f)
		}
	}
	ctx := context.Background()
	jp, err := newJointProblem(ctx, sub, JointFitOptions{Open: fidOpenFixture})
	if err != nil {
		t.Fatal(err)
	}
	prior := sim.PriorJoint()
	r0, recs, err := jp.residualsTimed(ctx, prior, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	all := jointParams()
	for _, name := range jointCited {
		k := slices.IndexFunc(all, func(p jointParam) bool { return p.name == name })
		if k < 0 {
			t.Fatalf("%s is not a joint parameter", name)
		}
		m := prior.Clone()
		x, _ := all[k].pt.toCoord(all[k].get(prior))
		all[k].set(m, all[k].pt.toValue(x+figProbeStep))
		r, _, err := jp.residualsTimed(ctx, m, recs, false)
		if err != nil {
			t.Fatal(err)
		}
		felt := false
		for i := range r {
			felt = felt || math.Abs(r[i]-r0[i]) >= figProbeMin
		}
		if !felt {
			t.Errorf("lmdeploy-a100's figures do not feel %s: this test shows nothing", name)
		}
	}
	chosen, err := jp.choose(ctx, prior, all, r0, recs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range chosen {
		names = append(names, p.name)
	}
	t.Logf("freed: %v", names)
	if len(names) == 0 {
		t.Fatal("the fit frees nothing on lmdeploy-a100's figures")
	}
	for _, name := range jointCited {
		if slices.Contains(names, name) {
			t.Errorf("the joint fit frees %s, a cited value", name)
		}
	}
}
