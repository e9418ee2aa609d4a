package stock

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/cluster"
)

// volcanoHead is every VolcanoConfig up to binpack's memory weight.
const volcanoHead = `actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 5
      binpack.memory: 1
`

// kubeHead is every KubeSchedulerConfig up to its resources.
const kubeHead = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
`

// The configurations as volcano-config printed them when they were
// written by hand, byte for byte, and their YAML read back: the same
// values, with the comment and the quotes only presentation.
func TestStockConfigYAML(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want string
	}{
		{"volcano-binpack:weight=3,cpu=5,memory=1,gpu=8", volcanoHead +
			"      binpack.resources: nvidia.com/gpu\n      binpack.resources.nvidia.com/gpu: 8\n"},
		{"volcano-binpack:cpu=5,memory=1,gpu=0", volcanoHead +
			"      # nvidia.com/gpu left out: GPUs are not scored (Volcano's default)\n"},
		{"mostallocated:cpu=1,memory=1,gpu=3", kubeHead + `        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
        - name: nvidia.com/gpu
          weight: 3
`},
		{"rtcr:cpu=0,memory=2,gpu=1", kubeHead + `        type: RequestedToCapacityRatio
        resources:
        - name: memory
          weight: 2
        - name: nvidia.com/gpu
          weight: 1
        requestedToCapacityRatio:
          shape:
          - utilization: 0
            score: 0
          - utilization: 100
            score: 10
`},
		{"spread:gpu=1", kubeHead + `        type: LeastAllocated
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
        - name: nvidia.com/gpu
          weight: 1
`},
	} {
		p, err := cluster.NewPolicy(tc.spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		var conf, back any
		switch p := p.(type) {
		case *cluster.VolcanoBinpack:
			conf, back = NewVolcanoConfig(p), &VolcanoConfig{}
		case *cluster.KubeFit:
			if conf, err = NewKubeSchedulerConfig(p); err != nil {
				t.Fatal(err)
			}
			back = &KubeSchedulerConfig{}
		}
		var buf bytes.Buffer
		if err := WriteYAML(&buf, conf); err != nil {
			t.Fatal(err)
		}
		if buf.String() != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.spec, buf.String(), tc.want)
		}
		if err := yaml.Unmarshal(buf.Bytes(), back); err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if got := reflect.ValueOf(back).Elem().Interface(); !reflect.DeepEqual(got, conf) {
			t.Errorf("%s: read back %+v, want %+v", tc.spec, got, conf)
		}
	}
}

// What the schedulers read: the values under their own keys, as a generic
// YAML reader sees them.
func TestStockConfigValues(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteYAML(&buf, NewVolcanoConfig(&cluster.VolcanoBinpack{Weight: 1, CPU: 2, Memory: 1, GPU: 16})); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Actions string `yaml:"actions"`
		Tiers   []struct {
			Plugins []struct {
				Name      string         `yaml:"name"`
				Arguments map[string]any `yaml:"arguments"`
			} `yaml:"plugins"`
		} `yaml:"tiers"`
	}
	if err := yaml.Unmarshal(buf.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	bp := v.Tiers[1].Plugins[3]
	want := map[string]any{"binpack.weight": 10, "binpack.cpu": 2, "binpack.memory": 1, "binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": 16}
	if v.Actions != "enqueue, allocate, backfill" || bp.Name != "binpack" || !reflect.DeepEqual(bp.Arguments, want) {
		t.Errorf("volcano config read as %+v", v)
	}

	buf.Reset()
	conf, err := NewKubeSchedulerConfig(&cluster.KubeFit{Strategy: "rtcr", CPU: 1, GPU: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteYAML(&buf, conf); err != nil {
		t.Fatal(err)
	}
	var k map[string]any
	if err := yaml.Unmarshal(buf.Bytes(), &k); err != nil {
		t.Fatal(err)
	}
	st := k["profiles"].([]any)[0].(map[string]any)["pluginConfig"].([]any)[0].(map[string]any)["args"].(map[string]any)["scoringStrategy"].(map[string]any)
	wantSt := map[string]any{
		"type":                     "RequestedToCapacityRatio",
		"resources":                []any{map[string]any{"name": "cpu", "weight": 1}, map[string]any{"name": "nvidia.com/gpu", "weight": 4}},
		"requestedToCapacityRatio": map[string]any{"shape": []any{map[string]any{"utilization": 0, "score": 0}, map[string]any{"utilization": 100, "score": 10}}},
	}
	if k["kind"] != "KubeSchedulerConfiguration" || !reflect.DeepEqual(st, wantSt) {
		t.Errorf("kube config read as %+v", k)
	}
}

func TestKubeSchedulerConfigUnknownStrategy(t *testing.T) {
	_, err := NewKubeSchedulerConfig(&cluster.KubeFit{Strategy: "balanced"})
	if !errors.Is(err, cluster.ErrUnknownPolicy) || !strings.Contains(err.Error(), `"balanced"`) {
		t.Errorf("balanced: %v", err)
	}
}
