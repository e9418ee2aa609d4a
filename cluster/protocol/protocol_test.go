package protocol

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/internal/clustertest"
)

// TestProtocol runs the datadriven scenarios in testdata/protocol. Each
// command is preceded by a comment saying why its output is right. After a
// change in behaviour, rerun with -rewrite and commit the new output only if
// you understand why it changed.
//
// Commands:
//
//	cluster                  input: one node per line, NAME cpu=M mem=MiB gpus=N model=K
//	pods                     input: one pod per line, NAME cpu=M [mem=MiB] [gpu=NxMILLI] [spec=A|B] [job=J]
//	target [coverage=F]      the target workload of the pods
//	workload seed=S [ratio=R] [gang]
//	                         the prepared pod sequence of the FGD protocol
//	run policy=P seed=S [ratio=R] [gang] [random-ties]
//	                         every arrival and where it went, then the nodes
//	curve policy=P seed=S at=X,Y,...
//	                         Experiment's curve at those arrived percents
func TestProtocol(t *testing.T) {
	datadriven.Walk(t, "testdata/protocol", func(t *testing.T, path string) {
		var (
			nodes []cluster.Node
			pods  []cluster.Pod
		)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "cluster":
				nodes = parseNodes(t, d.Input)
				return fmt.Sprintf("%d nodes, %d GPUs\n", len(nodes), cluster.GPUCapacity(nodes))
			case "pods":
				pods = parsePods(t, d.Input)
				var demand int64
				for i := range pods {
					demand += pods[i].GPUMilli()
				}
				return fmt.Sprintf("%d pods asking for %s GPUs\n", len(pods), gpus(demand))
			case "target":
				cov := 1.0
				if d.HasArg("coverage") {
					d.ScanArgs(t, "coverage", &cov)
				}
				var sb strings.Builder
				for _, m := range cluster.NewTarget(pods, cov).Types {
					fmt.Fprintf(&sb, "cpu=%d gpu=%dx%d spec=%q share=%.4f\n", m.MilliCPU, m.NumGPU, m.MilliGPU, m.GPUSpec, m.Share)
				}
				return sb.String()
			case "workload":
				seed, opts := scanRun(t, d)
				w := Workload(pods, int64(cluster.GPUCapacity(nodes))*cluster.MilliGPU, opts.Ratio, opts.Gang, rand.New(rand.NewPCG(seed, streamWorkload)))
				var sb strings.Builder
				var demand int64
				for i := range w {
					demand += w[i].GPUMilli()
					fmt.Fprintf(&sb, "%s %s\n", w[i].Name, podShape(&w[i]))
				}
				fmt.Fprintf(&sb, "%d pods asking for %s GPUs (%.1f%% of capacity)\n", len(w), gpus(demand),
					100*float64(demand)/float64(cluster.GPUCapacity(nodes)*cluster.MilliGPU))
				return sb.String()
			case "run":
				return runScenario(t, d, nodes, pods)
			case "curve":
				var spec, at string
				d.ScanArgs(t, "policy", &spec)
				d.ScanArgs(t, "at", &at)
				seed, opts := scanRun(t, d)
				r, err := Experiment(nodes, pods, spec, seed, opts)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				var sb strings.Builder
				fmt.Fprintf(&sb, "%s seed %d: %d pods, %d failed\n", r.Policy, r.Seed, r.Pods, r.Failed)
				sb.WriteString("arrived  alloc  unalloc-GPUs  frag/total  frag-rate  whole-free  stranded  partly-used  samples\n")
				for _, f := range strings.Split(at, ",") {
					x, err := strconv.Atoi(f)
					if err != nil {
						t.Fatal(err)
					}
					p, ok := r.At(x)
					if !ok {
						fmt.Fprintf(&sb, "%6d%%  no samples\n", x)
						continue
					}
					fmt.Fprintf(&sb, "%6d%%  %5.1f%%  %12.2f  %9.1f%%  %8.1f%%  %10.1f  %8.1f  %11.1f  %7d\n", x, 100*p.AllocRatio,
						p.UnallocatedGPUs, 100*p.FragTotal, 100*p.FragRate, p.WholeFreeNodes, p.StrandedNodes, p.PartlyUsedNodes, p.Samples)
				}
				return sb.String()
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

func scanRun(t *testing.T, d *datadriven.TestData) (uint64, Options) {
	var seed uint64
	d.ScanArgs(t, "seed", &seed)
	opts := Options{Ratio: DefaultRatio, Gang: d.HasArg("gang"), RandomTies: d.HasArg("random-ties")}
	if d.HasArg("ratio") {
		d.ScanArgs(t, "ratio", &opts.Ratio)
	}
	return seed, opts
}

// runScenario replays Experiment's steps and prints each placement.
func runScenario(t *testing.T, d *datadriven.TestData, nodes []cluster.Node, pods []cluster.Pod) string {
	var spec string
	d.ScanArgs(t, "policy", &spec)
	seed, opts := scanRun(t, d)
	target := cluster.NewTarget(pods, cluster.DefaultCoverage)
	policy, err := cluster.NewPolicy(spec, target)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	w := Workload(pods, int64(cluster.GPUCapacity(nodes))*cluster.MilliGPU, opts.Ratio, opts.Gang, rand.New(rand.NewPCG(seed, streamWorkload)))
	s := cluster.NewState(nodes)
	sc := cluster.NewScheduler(s, policy, rand.New(rand.NewPCG(seed, streamScheduler)))
	sc.RandomTies = opts.RandomTies
	sc.SetOrder(rand.New(rand.NewPCG(seed, streamNodeOrder)).Perm(len(nodes)))
	var sb strings.Builder
	for _, u := range cluster.Units(w, opts.Gang) {
		ptrs := make([]*cluster.Pod, len(u))
		for j := range u {
			ptrs[j] = &u[j]
		}
		pls, ok := sc.ScheduleGang(ptrs)
		for j, p := range ptrs {
			if !ok {
				fmt.Fprintf(&sb, "%s %s -> FAILED\n", p.Name, podShape(p))
				continue
			}
			fmt.Fprintf(&sb, "%s %s -> %s GPU%v\n", p.Name, podShape(p), nodes[pls[j].Node].Name, pls[j].GPUs)
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range nodes {
		fmt.Fprintf(&sb, "%s: cpu %d/%d free, GPUs free %v, frag %.1f\n", n.Name, s.FreeCPU(i), n.MilliCPU, s.FreeGPUs(i), target.NodeFrag(n.Model, s.FreeCPU(i), s.FreeGPUs(i)))
	}
	fmt.Fprintf(&sb, "allocated %s of %d GPUs, cluster frag %.1f milli\n", gpus(s.UsedGPUMilli()), cluster.GPUCapacity(nodes), target.Frag(s))
	return sb.String()
}

func gpus(milli int64) string {
	return strconv.FormatFloat(float64(milli)/cluster.MilliGPU, 'f', -1, 64)
}

func podShape(p *cluster.Pod) string {
	s := fmt.Sprintf("cpu=%d", p.MilliCPU)
	if p.NumGPU > 0 {
		s += fmt.Sprintf(" gpu=%dx%d", p.NumGPU, p.MilliGPU)
	}
	if len(p.GPUSpec) > 0 {
		s += " spec=" + strings.Join(p.GPUSpec, "|")
	}
	if p.Job != "" {
		s += " job=" + p.Job
	}
	return s
}

func fields(t *testing.T, line string) (string, map[string]string) {
	f := strings.Fields(line)
	kv := map[string]string{}
	for _, x := range f[1:] {
		k, v, ok := strings.Cut(x, "=")
		if !ok {
			t.Fatalf("%q: %q is not key=value", line, x)
		}
		kv[k] = v
	}
	return f[0], kv
}

func atoi(t *testing.T, s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func parseNodes(t *testing.T, in string) []cluster.Node {
	var out []cluster.Node
	for _, line := range strings.Split(strings.TrimSpace(in), "\n") {
		name, kv := fields(t, line)
		n := cluster.Node{Name: name, MilliCPU: atoi(t, kv["cpu"]), MemoryMiB: 1 << 20, GPUs: int(atoi(t, kv["gpus"])), Model: kv["model"]}
		if m, ok := kv["mem"]; ok {
			n.MemoryMiB = atoi(t, m)
		}
		out = append(out, n)
	}
	return out
}

func parsePods(t *testing.T, in string) []cluster.Pod {
	var out []cluster.Pod
	for _, line := range strings.Split(strings.TrimSpace(in), "\n") {
		name, kv := fields(t, line)
		p := cluster.Pod{Name: name, MilliCPU: atoi(t, kv["cpu"]), MemoryMiB: 1024, Job: kv["job"]}
		if m, ok := kv["mem"]; ok {
			p.MemoryMiB = atoi(t, m)
		}
		if g, ok := kv["gpu"]; ok {
			n, m, _ := strings.Cut(g, "x")
			p.NumGPU, p.MilliGPU = int(atoi(t, n)), atoi(t, m)
		}
		if s, ok := kv["spec"]; ok {
			p.GPUSpec = strings.Split(s, "|")
		}
		if f, msg := p.Check(); f != "" {
			t.Fatalf("%q: %s %s", line, f, msg)
		}
		out = append(out, p)
	}
	return out
}

func TestWorkload(t *testing.T) {
	var pods []cluster.Pod
	for i := range 10 {
		pods = append(pods, cluster.Pod{Name: fmt.Sprintf("p%d", i), MilliCPU: 1000, NumGPU: 1, MilliGPU: 1000})
	}
	// 10 GPUs asked on a 20-GPU cluster: inflate to 26 (130%), the next copy
	// would make 27 > 26.
	up := Workload(pods, 20*cluster.MilliGPU, 1.3, false, rand.New(rand.NewPCG(1, 1)))
	if len(up) != 26 || !strings.Contains(up[25].Name, "-tuned-") {
		t.Errorf("inflated to %d pods, last %q; want 26 ending in a tuned copy", len(up), up[len(up)-1].Name)
	}
	// 10 GPUs on a 5-GPU cluster: trim to 6 (6.5 allowed).
	down := Workload(pods, 5*cluster.MilliGPU, 1.3, false, rand.New(rand.NewPCG(1, 1)))
	if len(down) != 6 {
		t.Errorf("trimmed to %d pods, want 6", len(down))
	}
	// The same seed gives the same sequence; another seed another order.
	again := Workload(pods, 20*cluster.MilliGPU, 1.3, false, rand.New(rand.NewPCG(1, 1)))
	if !reflect.DeepEqual(up, again) {
		t.Error("same seed, different workloads")
	}
	other := Workload(pods, 20*cluster.MilliGPU, 1.3, false, rand.New(rand.NewPCG(2, 1)))
	if reflect.DeepEqual(up, other) {
		t.Error("different seeds, same workload")
	}
	// The original pods are all there, each once, before the copies.
	seen := map[string]bool{}
	for _, p := range up[:10] {
		seen[p.Name] = true
	}
	if len(seen) != 10 {
		t.Errorf("the first 10 pods are not the shuffled originals: %v", seen)
	}
}

func TestCurve(t *testing.T) {
	// Capacity 10 GPUs. Samples at 1.04, 1.06 and 3 GPUs arrived: percents
	// 10.4 -> 10, 10.6 -> 11, 30.
	ss := []cluster.Sample{
		{ArrivedMilli: 1040, AllocatedMilli: 1000, IdleMilli: 9000, FragMilli: 900},
		{ArrivedMilli: 1060, AllocatedMilli: 1060, IdleMilli: 8940, FragMilli: 0},
		{ArrivedMilli: 3000, AllocatedMilli: 2000, IdleMilli: 8000, FragMilli: 800, WholeFreeNodes: 3},
	}
	c := Curve(ss, 10*cluster.MilliGPU, 40)
	if p := c[10]; p.Samples != 1 || p.AllocRatio != 0.1 || p.FragTotal != 0.09 || p.FragRate != 0.1 || p.UnallocatedGPUs != 9 {
		t.Errorf("at 10%%: %+v", p)
	}
	// 12% has no sample: its neighbours 11% (one sample) and 13% (none).
	if p := c[12]; p.Samples != 1 || p.AllocRatio != 0.106 {
		t.Errorf("at 12%%: %+v", p)
	}
	if p := c[30]; p.WholeFreeNodes != 3 || math.Abs(p.FragRate-0.1) > 1e-12 {
		t.Errorf("at 30%%: %+v", p)
	}
	if c[20].Samples != 0 {
		t.Errorf("at 20%%: %+v, want no samples", c[20])
	}
}

func TestExperimentDeterministic(t *testing.T) {
	nodes := clustertest.Nodes(t, clustertest.Testdata(t, "openb_nodes_head40.csv"))
	pods := clustertest.Pods(t, clustertest.Testdata(t, "openb_pods_gpuspec33_head60.csv"))
	for _, spec := range append(cluster.PolicyNames(), "recommended", "mostallocated:gpu=1", "volcano-binpack:gpu=2") {
		a, err := Experiment(nodes, pods, spec, 42, Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Experiment(nodes, pods, spec, 42, Options{})
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs of seed 42 differ", spec)
		}
		p, ok := a.At(100)
		if !ok || p.AllocRatio <= 0 || p.AllocRatio > 1 || p.FragTotal < 0 || p.FragRate > 1+1e-9 {
			t.Errorf("%s: at 100%%: %+v", spec, p)
		}
	}
	if _, err := Experiment(nodes, nil, "fgd", 1, Options{}); err == nil {
		t.Error("no pods: no error")
	}
}

func TestFirstFailure(t *testing.T) {
	nodes := []cluster.Node{nodeT4}
	pods := []cluster.Pod{
		{Name: "a", MilliCPU: 1000, NumGPU: 1, MilliGPU: 1000},
		{Name: "b", MilliCPU: 1000, NumGPU: 1, MilliGPU: 1000},
	}
	// Ratio 2: two copies are appended (4 GPUs on 2); the third pod fails
	// with 3 GPUs arrived (150%) and nothing idle.
	r, err := Experiment(nodes, pods, "bestfit", 1, Options{Ratio: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := &FirstFailure{Pod: 2, ArrivedShare: 1.5, UnallocatedShare: 0}
	if r.Pods != 4 || r.Failed != 2 || !reflect.DeepEqual(r.FirstFailure, want) {
		t.Errorf("pods %d failed %d first failure %+v, want 4, 2, %+v", r.Pods, r.Failed, r.FirstFailure, want)
	}
	s := Aggregate([]*Run{r, r})
	if s.FirstFailures != 2 || s.FirstFailureArrived.Mean != 1.5 {
		t.Errorf("aggregate: %d first failures at %v", s.FirstFailures, s.FirstFailureArrived)
	}
	// Ratio 1: every pod runs.
	if r, _ := Experiment(nodes, pods, "bestfit", 1, Options{Ratio: 1}); r.FirstFailure != nil {
		t.Errorf("ratio 1: first failure %+v", r.FirstFailure)
	}
}
