package calib

import (
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/sim"
)

// TestFidelityDocTermsTable: the fidelity page's table of the joint
// model's terms names every term of every row (all_reduce_pcie's
// included) and lists the kernel tables' values kept out of the fit,
// the GEMMs' fixed time and the layer kernels among them, with the
// prior's values.
func TestFidelityDocTermsTable(t *testing.T) {
	j := sim.PriorJoint()
	doc := string((&FidelityReport{Joint: j}).Markdown(0))
	_, table, ok := strings.Cut(doc, "| term | parameter | prior | fitted |\n|---|---|---|---|\n")
	if !ok {
		t.Fatal("no terms table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	for _, row := range strings.Split(table, "\n") {
		if strings.HasPrefix(row, "|  |") {
			t.Errorf("a row without its term: %q", row)
		}
	}
	for _, want := range []string{
		"| linear layers (every GPU) | `linear.gemm_fixed_ns` | " + fidNum(j.Linear.GEMMFixedNs) + " | " + fidNum(j.Linear.GEMMFixedNs) + " |",
		"| layer kernels (every GPU) | `linear.layer_kernels_ns` | " + fidNum(j.Linear.LayerKernelsNs) + " | " + fidNum(j.Linear.LayerKernelsNs) + " |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the terms table lacks %q:\n%s", want, table)
		}
	}
	if !(j.Linear.GEMMFixedNs > 0 && j.Linear.LayerKernelsNs > 0) {
		t.Errorf("the prior sets gemm_fixed_ns %v, layer_kernels_ns %v", j.Linear.GEMMFixedNs, j.Linear.LayerKernelsNs)
	}
}
