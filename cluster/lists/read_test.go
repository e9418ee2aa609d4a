package lists

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
)

// The file readers are ReadNodes and ReadPods on the opened file: either
// form, told apart by name (any case) or content, errors naming the path.
func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "cluster.JSON")
	doc := `{"nodes":[{"name":"a","cpu_milli":32000,"memory_mib":65536,"gpus":2,"model":"T4"}],
"pods":[{"name":"p","cpu_milli":1000,"memory_mib":10,"num_gpu":1,"gpu_milli":500}]}`
	if err := os.WriteFile(js, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes, err := ReadNodesFile(js)
	if err != nil || !reflect.DeepEqual(nodes, []cluster.Node{{Name: "a", MilliCPU: 32000, MemoryMiB: 65536, GPUs: 2, Model: "T4"}}) {
		t.Errorf("nodes of %s: %+v, %v", js, nodes, err)
	}
	pods, err := ReadPodsFile(js)
	if err != nil || len(pods) != 1 || pods[0].Name != "p" || pods[0].MilliGPU != 500 {
		t.Errorf("pods of %s: %+v, %v", js, pods, err)
	}
	csv := "../testdata/openb_nodes_head40.csv"
	if nodes, err := ReadNodesFile(csv); err != nil || !reflect.DeepEqual(nodes, readNodesFile(t, csv)) {
		t.Errorf("%s: %d nodes, %v", csv, len(nodes), err)
	}
	bad := filepath.Join(dir, "pods.csv")
	if err := os.WriteFile(bad, []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,x,1,1,1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPodsFile(bad); !errors.Is(err, cluster.ErrBadInput) || !strings.HasPrefix(err.Error(), bad+": line 2:") {
		t.Errorf("bad pods: %v", err)
	}
	missing := filepath.Join(dir, "none.csv")
	if _, err := ReadNodesFile(missing); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
}
