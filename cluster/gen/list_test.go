package gen

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster/internal/clustertest"
)

func TestFamilyNames(t *testing.T) {
	names := FamilyNames()
	if len(names) != len(Families) {
		t.Fatalf("%q", names)
	}
	for i, f := range Families {
		if names[i] != string(f) {
			t.Errorf("%d: %q, want %q", i, names[i], f)
		}
	}
}

func TestCheckShare(t *testing.T) {
	for _, tc := range []struct {
		f     Family
		share float64
		ok    bool
	}{
		{FamilyCPU, 0, true}, {FamilyCPU, 0.99, true}, {FamilyCPU, 1, false}, {FamilyCPU, -0.1, false},
		{FamilyGPUShare, 1, true}, {FamilyGPUSpec, 0, true}, {FamilyMultiGPU, 1.01, false}, {FamilyMultiGPU, -1, false},
		// NaN passed (gen-pods --share NaN was no usage error: it failed in
		// GeneratePods with status 1).
		{FamilyCPU, math.NaN(), false}, {FamilyMultiGPU, math.NaN(), false}, {FamilyGPUShare, math.Inf(1), false},
	} {
		err := tc.f.CheckShare(tc.share)
		if (err == nil) != tc.ok {
			t.Errorf("%s %v: %v", tc.f, tc.share, err)
		}
		if err != nil && tc.f == FamilyCPU && !strings.Contains(err.Error(), "below 1") {
			t.Errorf("%s %v: %v does not say below 1", tc.f, tc.share, err)
		}
	}
}

// ReadList names the list by its file and reads the family from the name.
func TestReadList(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "openb_pod_list_gpuspec20.csv")
	if err := os.WriteFile(path, []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,10,1,500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := ReadList(path)
	if err != nil || l.Name != "gpuspec20" || l.Family != FamilyGPUSpec || len(l.Pods) != 1 || l.Pods[0].MilliGPU != 500 {
		t.Errorf("%+v, %v", l, err)
	}
	if _, err := ReadList(filepath.Join(dir, "none.csv")); err == nil || !strings.Contains(err.Error(), "none.csv") {
		t.Errorf("missing file: %v", err)
	}
}

// ReadLists generates the configured lists, then reads the files; the
// base and specs files are read only when there is a list to generate.
func TestReadLists(t *testing.T) {
	head := clustertest.Testdata(t, "openb_pods_gpuspec33_head60.csv")
	multi := clustertest.Testdata(t, "openb_pods_multigpu50_head60.csv")
	cfgs := []GenConfig{{Family: FamilyGPUSpec, Share: 0.2, Seed: 3}}
	ls, err := ReadLists(cfgs, head, head, []string{multi})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Name != cfgs[0].Name() || ls[0].Family != FamilyGPUSpec || ls[1].Name != "openb_pods_multigpu50_head60" || len(ls[1].Pods) != 60 {
		t.Errorf("lists %v", ls)
	}
	if ls, err := ReadLists(nil, "none.csv", "none.csv", []string{multi}); err != nil || len(ls) != 1 {
		t.Errorf("without configurations: %d lists, %v", len(ls), err)
	}
	if _, err := ReadLists(cfgs, head, "none.csv", nil); err == nil || !strings.Contains(err.Error(), "none.csv") {
		t.Errorf("a missing specs file: %v", err)
	}
}
