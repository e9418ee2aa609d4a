package stock

import (
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/gpufrag/gpufrag/cluster"
)

// The scheduler configurations of stock settings, as typed documents:
// VolcanoConfig (volcano-scheduler.conf) and KubeSchedulerConfig
// (kubescheduler.config.k8s.io/v1). WriteYAML prints them.

// VolcanoBinpackWeight is the binpack.weight printed in a VolcanoConfig:
// it only scales binpack against Volcano's other node-order plugins, which
// the simulation does not have, so it is the Volcano source's example
// value, 10, which makes binpack dominate.
const VolcanoBinpackWeight = 10

// GPUResource is the extended resource name of NVIDIA's device plugin.
const GPUResource = "nvidia.com/gpu"

// VolcanoConfig is a volcano-scheduler.conf: the actions and the plugin
// tiers of Volcano's default configuration, with binpack added.
type VolcanoConfig struct {
	Actions doubleQuoted  `yaml:"actions"`
	Tiers   []VolcanoTier `yaml:"tiers"`
}

// VolcanoTier is one tier of Volcano plugins.
type VolcanoTier struct {
	Plugins []VolcanoPlugin `yaml:"plugins"`
}

// VolcanoPlugin is one plugin of a tier; only binpack has arguments here.
type VolcanoPlugin struct {
	Name      string            `yaml:"name"`
	Arguments *BinpackArguments `yaml:"arguments,omitempty"`
}

// BinpackArguments are the binpack plugin's arguments. Resources and GPU
// list nvidia.com/gpu with its weight; when Resources is empty GPUs are
// not scored (Volcano's default), which the YAML says in a comment.
type BinpackArguments struct {
	Weight    int64  `yaml:"binpack.weight"`
	CPU       int64  `yaml:"binpack.cpu"`
	Memory    int64  `yaml:"binpack.memory"`
	Resources string `yaml:"binpack.resources,omitempty"`
	GPU       int64  `yaml:"binpack.resources.nvidia.com/gpu,omitempty"`
}

// binpackNoGPU is the comment of BinpackArguments without nvidia.com/gpu.
const binpackNoGPU = "# nvidia.com/gpu left out: GPUs are not scored (Volcano's default)"

// MarshalYAML encodes the arguments, with binpackNoGPU after them when
// GPUs are not listed.
func (a BinpackArguments) MarshalYAML() (any, error) {
	type plain BinpackArguments // without this method
	var n yaml.Node
	if err := n.Encode(plain(a)); err != nil {
		return nil, err
	}
	if a.Resources == "" && len(n.Content) > 0 {
		n.Content[len(n.Content)-2].FootComment = binpackNoGPU
	}
	return &n, nil
}

// NewVolcanoConfig returns the Volcano configuration of v: its CPU,
// memory and GPU weights, binpack.weight VolcanoBinpackWeight.
func NewVolcanoConfig(v *cluster.VolcanoBinpack) VolcanoConfig {
	args := &BinpackArguments{Weight: VolcanoBinpackWeight, CPU: v.CPU, Memory: v.Memory}
	if v.GPU > 0 {
		args.Resources, args.GPU = GPUResource, v.GPU
	}
	return VolcanoConfig{
		Actions: "enqueue, allocate, backfill",
		Tiers: []VolcanoTier{
			{Plugins: []VolcanoPlugin{{Name: "priority"}, {Name: "gang"}, {Name: "conformance"}}},
			{Plugins: []VolcanoPlugin{{Name: "predicates"}, {Name: "proportion"}, {Name: "nodeorder"}, {Name: "binpack", Arguments: args}}},
		},
	}
}

// KubeSchedulerConfig is a KubeSchedulerConfiguration
// (kubescheduler.config.k8s.io/v1) whose default profile configures
// NodeResourcesFit's scoring strategy.
type KubeSchedulerConfig struct {
	APIVersion string        `yaml:"apiVersion"`
	Kind       string        `yaml:"kind"`
	Profiles   []KubeProfile `yaml:"profiles"`
}

// KubeProfile is one scheduler profile.
type KubeProfile struct {
	SchedulerName string             `yaml:"schedulerName"`
	PluginConfig  []KubePluginConfig `yaml:"pluginConfig"`
}

// KubePluginConfig is the configuration of one plugin; only
// NodeResourcesFit here.
type KubePluginConfig struct {
	Name string               `yaml:"name"`
	Args NodeResourcesFitArgs `yaml:"args"`
}

// NodeResourcesFitArgs are NodeResourcesFit's arguments.
type NodeResourcesFitArgs struct {
	ScoringStrategy ScoringStrategy `yaml:"scoringStrategy"`
}

// ScoringStrategy is NodeResourcesFit's scoring strategy: its type, the
// weighted resources and, for RequestedToCapacityRatio, the shape.
type ScoringStrategy struct {
	Type                     string                    `yaml:"type"`
	Resources                ResourceWeights           `yaml:"resources"`
	RequestedToCapacityRatio *RequestedToCapacityRatio `yaml:"requestedToCapacityRatio,omitempty"`
}

// ResourceWeights are the resources a strategy scores, with their weights.
type ResourceWeights []ResourceWeight

// MarshalYAML encodes no resources as an empty value (null), not [].
func (r ResourceWeights) MarshalYAML() (any, error) {
	if len(r) == 0 {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}, nil
	}
	return []ResourceWeight(r), nil
}

// ResourceWeight is one resource a strategy scores.
type ResourceWeight struct {
	Name   string `yaml:"name"`
	Weight int64  `yaml:"weight"`
}

// RequestedToCapacityRatio is the shape of that strategy: the score at
// each utilisation, interpolated linearly between the points.
type RequestedToCapacityRatio struct {
	Shape []UtilizationShapePoint `yaml:"shape"`
}

// UtilizationShapePoint is one point of a shape: utilisation 0-100, score
// 0-10.
type UtilizationShapePoint struct {
	Utilization int `yaml:"utilization"`
	Score       int `yaml:"score"`
}

// kubeStrategies are NodeResourcesFit's names of KubeFit's strategies.
var kubeStrategies = map[string]string{"spread": "LeastAllocated", "mostallocated": "MostAllocated", "rtcr": "RequestedToCapacityRatio"}

// NewKubeSchedulerConfig returns the Kubernetes configuration of k: its
// strategy, the resources it weights (those with a positive weight; GPUs
// as nvidia.com/gpu) and, for rtcr, the shape KubeFit scores with
// (0 -> 0, 100 -> 10).
func NewKubeSchedulerConfig(k *cluster.KubeFit) (KubeSchedulerConfig, error) {
	typ, ok := kubeStrategies[k.Strategy]
	if !ok {
		return KubeSchedulerConfig{}, fmt.Errorf("%w %q: no NodeResourcesFit strategy", cluster.ErrUnknownPolicy, k.Strategy)
	}
	st := ScoringStrategy{Type: typ}
	for _, r := range []ResourceWeight{{"cpu", k.CPU}, {"memory", k.Memory}, {GPUResource, k.GPU}} {
		if r.Weight > 0 {
			st.Resources = append(st.Resources, r)
		}
	}
	if k.Strategy == "rtcr" {
		st.RequestedToCapacityRatio = &RequestedToCapacityRatio{Shape: []UtilizationShapePoint{{0, 0}, {100, 10}}}
	}
	return KubeSchedulerConfig{
		APIVersion: "kubescheduler.config.k8s.io/v1",
		Kind:       "KubeSchedulerConfiguration",
		Profiles: []KubeProfile{{
			SchedulerName: "default-scheduler",
			PluginConfig:  []KubePluginConfig{{Name: "NodeResourcesFit", Args: NodeResourcesFitArgs{ScoringStrategy: st}}},
		}},
	}, nil
}

// WriteYAML writes v as one YAML document the way these files are
// usually written by hand: two-space indentation, sequences not indented
// under their key.
func WriteYAML(w io.Writer, v any) error {
	e := yaml.NewEncoder(w)
	e.SetIndent(2)
	e.CompactSeqIndent()
	if err := e.Encode(v); err != nil {
		return err
	}
	return e.Close()
}

// doubleQuoted is a string YAML writes in double quotes (Volcano's own
// example quotes its actions list).
type doubleQuoted string

// MarshalYAML implements yaml.Marshaler.
func (q doubleQuoted) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Value: string(q)}, nil
}
