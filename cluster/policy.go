package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/internal/human"
)

// Policy decides where a pod goes. The scheduler calls Score for every
// node that passes the filter (State.Fits) and picks the highest score,
// breaking ties uniformly at random; then GPUs picks the GPUs on the chosen
// node. Score must depend only on the pod and the node's state (its free
// resources and tags), so the scheduler may cache it per node version.
type Policy interface {
	Name() string
	Score(s *State, p *Pod, node int) float64
	GPUs(s *State, p *Pod, node int, rng *rand.Rand) []int
}

// Normalizer is a Policy whose scores are rescaled over the feasible nodes
// before the choice, as a Kubernetes score plugin's NormalizeScore does.
type Normalizer interface {
	Normalize(scores []float64)
}

// Chooser is a Policy that picks among the feasible nodes itself instead
// of scoring them (random placement).
type Chooser interface {
	Choose(s *State, p *Pod, feasible []int, rng *rand.Rand) int
}

// NthChooser is a Chooser that needs only the number of feasible nodes:
// ChooseNth returns k, 0 <= k < n, and the scheduler places the pod on the
// k-th feasible node in node order, as Choose(s, p, feasible, rng) would
// choose feasible[k]. The scheduler then finds the node without listing
// the feasible ones.
type NthChooser interface {
	Chooser
	ChooseNth(n int, rng *rand.Rand) int
}

// PolicyInfo describes a policy for help texts.
type PolicyInfo struct {
	Name    string
	Summary string
}

// Policies lists the policies NewPolicy knows, in the order reports use.
var Policies = []PolicyInfo{
	{"random", "uniformly random feasible node; random GPU that holds a sharing pod"},
	{"spread", "Kubernetes LeastAllocated (NodeResourcesFit default): emptiest node; options cpu=W,memory=W,gpu=W (GPUs scored only when given)"},
	{"mostallocated", "Kubernetes MostAllocated: fullest node; options cpu=W,memory=W,gpu=W"},
	{"rtcr", "Kubernetes RequestedToCapacityRatio with shape 0->0, 100->10 (packs); options cpu=W,memory=W,gpu=W"},
	{"volcano-binpack", "Volcano binpack: (used+request)/allocatable weighted over requested resources; options weight=W,cpu=W,memory=W,gpu=W (GPUs only when listed, as Volcano does)"},
	{"dotprod", "Tetris dot product of free and requested (CPU, GPU) normalised by the largest node; least aligned wins"},
	{"clustering", "GPU clustering: nodes already running pods of the same GPU shape first"},
	{"packing", "GPU packing: partly used GPUs, then free GPUs on used nodes, then idle nodes"},
	{"bestfit", "best fit: least CPU and GPU left after placement"},
	{"fgd", "fragmentation gradient descent (Weng et al., ATC '23): least growth of expected fragmentation"},
	{"fgd-reserve", "our policy, alias recommended: FGD that keeps scarce GPU models for the pods restricted to them, FGD itself where no model is pressed (see FGDReserve); options scarcity=N (FGD score points, 0-100), threshold=X (0-1), tie=order|fit"},
}

// Aliases maps alternative policy names to canonical ones.
var Aliases = map[string]string{"recommended": "fgd-reserve"}

// PolicyNames returns the canonical policy names.
func PolicyNames() []string {
	out := make([]string, len(Policies))
	for i, p := range Policies {
		out[i] = p.Name
	}
	return out
}

// PoliciesText is Policies as the commands' help lists them: one line a
// policy, its name padded to the longest, the summary wrapped beside it.
func PoliciesText() string {
	var sb strings.Builder
	w := 0
	for _, p := range Policies {
		w = max(w, len(p.Name))
	}
	for _, p := range Policies {
		fmt.Fprintf(&sb, "  %-*s  %s\n", w, p.Name, human.Indent(human.Wrap(p.Summary, 74-w), strings.Repeat(" ", w+4))[w+4:])
	}
	return sb.String()
}

// SplitPolicies reads policy specs as the commands take them: each value
// one spec or several separated by commas, where the options of one spec
// are comma-separated too (spread:cpu=1,gpu=1): a part with "=" but no
// ":" continues the spec before it. Empty parts are dropped.
func SplitPolicies(values []string) []string {
	var out []string
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if n := len(out); n > 0 && strings.Contains(p, "=") && !strings.Contains(p, ":") && strings.Contains(out[n-1], ":") {
				out[n-1] += "," + p
				continue
			}
			out = append(out, p)
		}
	}
	return out
}

// CheckPolicy checks a policy spec before any pod list is read: NewPolicy
// with a stand-in target workload of one task type.
func CheckPolicy(spec string) error {
	_, err := NewPolicy(spec, NewTarget([]Pod{{Name: "x", MilliCPU: 1, NumGPU: 1, MilliGPU: MilliGPU}}, 1))
	return err
}

// NewPolicy builds a policy from spec, NAME or NAME:key=value,... (see
// Policies). Policies that measure fragmentation use target.
func NewPolicy(spec string, target *Target) (Policy, error) {
	name, opts, _ := strings.Cut(strings.TrimSpace(spec), ":")
	if canon, ok := Aliases[name]; ok {
		name = canon
	}
	kv, err := parseOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrPolicyOptions, spec, err)
	}
	noOpts := func(p Policy) (Policy, error) {
		if len(kv) > 0 {
			return nil, fmt.Errorf("%w %q: %s takes no options", ErrPolicyOptions, spec, name)
		}
		return p, nil
	}
	needTarget := func() error {
		if target == nil || len(target.Types) == 0 {
			return fmt.Errorf("cluster: policy %s needs a target workload", name)
		}
		return nil
	}
	switch name {
	case "random":
		return noOpts(Random{})
	case "dotprod":
		return noOpts(DotProduct{})
	case "clustering":
		return noOpts(Clustering{})
	case "packing":
		return noOpts(Packing{})
	case "bestfit":
		return noOpts(BestFit{})
	case "fgd":
		if err := needTarget(); err != nil {
			return nil, err
		}
		return noOpts(&FGD{Target: target})
	case "fgd-reserve":
		if err := needTarget(); err != nil {
			return nil, err
		}
		return newFGDReserve(spec, kv, target)
	case "spread", "mostallocated", "rtcr":
		w, err := weights(kv, []string{"cpu", "memory", "gpu"}, map[string]int64{"cpu": 1, "memory": 1})
		if err == nil && w["cpu"]+w["memory"]+w["gpu"] == 0 {
			err = errNoScore
		}
		if err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrPolicyOptions, spec, err)
		}
		return &KubeFit{Strategy: name, CPU: w["cpu"], Memory: w["memory"], GPU: w["gpu"]}, nil
	case "volcano-binpack":
		w, err := weights(kv, []string{"weight", "cpu", "memory", "gpu"}, map[string]int64{"weight": 1, "cpu": 1, "memory": 1})
		if err == nil && (w["weight"] == 0 || w["cpu"]+w["memory"]+w["gpu"] == 0) {
			err = errNoScore
		}
		if err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrPolicyOptions, spec, err)
		}
		return &VolcanoBinpack{Weight: w["weight"], CPU: w["cpu"], Memory: w["memory"], GPU: w["gpu"]}, nil
	}
	return nil, fmt.Errorf("%w %q (known: %s, recommended)", ErrUnknownPolicy, name, strings.Join(PolicyNames(), ", "))
}

func parseOptions(s string) (map[string]string, error) {
	kv := map[string]string{}
	if s == "" {
		return kv, nil
	}
	for _, f := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("option %q is not key=value", f)
		}
		if _, dup := kv[k]; dup {
			return nil, fmt.Errorf("option %q given twice", k)
		}
		kv[k] = v
	}
	return kv, nil
}

// errNoScore refuses weights that score every node the same: the
// simulation would place pods in its fixed node order, while a real
// scheduler's other scorers (Volcano's nodeorder, kube-scheduler's other
// plugins) would decide, so neither the figures nor a configuration
// printed for them would hold.
var errNoScore = errors.New("these weights score every node the same (weight 0, or cpu, memory and gpu all 0), so the scheduler's other scorers would place the pods, which the simulation does not model: give weights above 0")

func weights(kv map[string]string, keys []string, def map[string]int64) (map[string]int64, error) {
	w := map[string]int64{}
	for k, v := range def {
		w[k] = v
	}
	for k, v := range kv {
		if !slices.Contains(keys, k) {
			return nil, fmt.Errorf("unknown option %q (known: %s)", k, strings.Join(keys, ", "))
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 1000 {
			return nil, fmt.Errorf("option %s=%s: want an integer weight from 0 to 1000", k, v)
		}
		w[k] = n
	}
	return w, nil
}
