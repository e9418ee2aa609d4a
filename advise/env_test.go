package advise

import (
	"strings"
	"testing"
)

// The deploy lines set PYTORCH_ALLOC_CONF, PyTorch's name since 2.8, and
// say that the older PYTORCH_CUDA_ALLOC_CONF still works; with no setting
// to make they name the variable as unset and add no note.
func TestDeployLinesEnvName(t *testing.T) {
	set := strings.Join(NewDeploy(Settings{KV: kv("paged:16"), Alloc: al("caching:expandable_segments:True"), GPUMemoryUtilization: 0.9}, Inputs{ModelID: "m/x", Model: "x"}).Lines(), "\n")
	if !strings.Contains(set, "PYTORCH_ALLOC_CONF=expandable_segments:True vllm serve m/x") ||
		!strings.Contains(set, "PYTORCH_CUDA_ALLOC_CONF, the older name, still works") {
		t.Errorf("deploy lines with a setting:\n%s", set)
	}
	unset := strings.Join(NewDeploy(Settings{KV: kv("contiguous-grow"), Alloc: al("caching"), GPUMemoryUtilization: 0.9}, Inputs{ModelID: "m/x", Model: "x"}).Lines(), "\n")
	if !strings.Contains(unset, "PYTORCH_ALLOC_CONF unset") || strings.Contains(unset, "older name") {
		t.Errorf("deploy lines with the defaults:\n%s", unset)
	}
}
