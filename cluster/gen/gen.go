package gen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/lists"
)

// Family is a kind of pod list the FGD paper derives from its default
// trace by changing one share (the openb files cpuNNN, gpushareNN,
// gpuspecNN and multigpuNN).
type Family string

// The families GeneratePods makes, and what their share is.
const (
	// FamilyCPU: CPU-only pods as a share of all pods. The GPU pods are
	// the base list's; CPU-only pods are drawn from its CPU-only pods.
	FamilyCPU Family = "cpu"
	// FamilyGPUShare: the GPU request (milli-GPUs) of GPU-sharing pods as
	// a share of all GPU request. The total GPU request and the CPU-only
	// pods are the base list's.
	FamilyGPUShare Family = "gpushare"
	// FamilyMultiGPU: the GPU request of multi-GPU pods as a share of all
	// GPU request, as FamilyGPUShare.
	FamilyMultiGPU Family = "multigpu"
	// FamilyGPUSpec: GPU pods restricted to some GPU models as a share of
	// all GPU pods. The pods are the base list's; the restrictions are
	// drawn from the restricted pods of GenConfig.Specs.
	FamilyGPUSpec Family = "gpuspec"
)

// Families lists the families in the order reports use.
var Families = []Family{FamilyCPU, FamilyGPUShare, FamilyGPUSpec, FamilyMultiGPU}

// FamilyNames returns the names of Families, as the commands take them.
func FamilyNames() []string {
	out := make([]string, len(Families))
	for i, f := range Families {
		out[i] = string(f)
	}
	return out
}

// CheckShare says what is wrong with share for a list of family f, nil
// when nothing: a share runs from 0 to 1, and stays below 1 for cpu (a
// list of CPU-only pods has no GPU demand).
func (f Family) CheckShare(share float64) error {
	switch {
	case f == FamilyCPU && !(share >= 0 && share < 1): // NaN too
		return errors.New("want a share from 0 to below 1 (a list of CPU-only pods has no GPU demand)")
	case !(share >= 0 && share <= 1):
		return errors.New("want a share from 0 to 1")
	}
	return nil
}

// ErrGenerate marks a pod list GeneratePods cannot make from its inputs
// (an unknown family, a share out of range, a base list without pods of a
// class the share needs).
var ErrGenerate = errors.New("cannot generate pod list")

// streamGenerate is the random stream of GeneratePods' seed (the
// experiment's streams are 1-3; a generator seed is not an experiment
// seed, but distinct streams keep them apart even when equal).
const streamGenerate = 4

// GenConfig says which pod list GeneratePods makes.
type GenConfig struct {
	Family Family
	// Share is the family's share (see the Family constants), 0 to 1;
	// below 1 for FamilyCPU.
	Share float64
	// Seed chooses the draws; the same base, config and seed give the
	// same list.
	Seed uint64
	// Specs is a pod list whose GPU pods with a GPUSpec are the pool the
	// restrictions of FamilyGPUSpec are drawn from (openb's gpuspec33, the
	// production share, is the only such list the paper publishes).
	Specs []cluster.Pod
}

// Name is a short label of the config, FAMILY-SHARE-sSEED
// (gpuspec-0.20-s3).
func (c GenConfig) Name() string {
	return fmt.Sprintf("%s-%.2f-s%d", c.Family, c.Share, c.Seed)
}

// podClass is how the families split pods.
type podClass int

const (
	classCPU     podClass = iota // no GPU
	classSharing                 // part of one GPU
	classWhole                   // one whole GPU
	classMulti                   // several whole GPUs
	numPodClasses
)

func classOf(p *cluster.Pod) podClass {
	switch {
	case p.NumGPU == 0:
		return classCPU
	case p.Sharing():
		return classSharing
	case p.NumGPU == 1:
		return classWhole
	}
	return classMulti
}

// GeneratePods makes a pod list of family c.Family with share c.Share from
// base, the way the FGD paper's variants of its default trace were made:
// pods of one class are resampled from base (cpu, gpushare, multigpu) or
// given GPU-model restrictions (gpuspec), everything else stays as in base.
//
// Resampling draws the pods of a class in a random order without
// replacement, starting again in a new order when all were drawn, so a
// list smaller than base's class holds no repeats and a larger one holds
// every pod of the class about equally often. For the GPU-request shares
// (gpushare, multigpu) pods are drawn until the class's request reaches
// share × base's total GPU request, the rest of the GPU pods likewise to
// (1-share) × total, so the share holds to within one pod (8 GPUs of
// 6,087 for openb's default) and the total stays base's, which keeps the
// protocol's inflation to 130% the same. A pod drawn again is named
// NAME-gen-K (K counts the copies made). Creation and deletion times are
// dropped (the FGD protocol does not use them). The output lists kept pods
// in base order, then drawn pods in draw order.
func GeneratePods(base []cluster.Pod, c GenConfig) ([]cluster.Pod, error) {
	if math.IsNaN(c.Share) || c.Share < 0 || c.Share > 1 || (c.Family == FamilyCPU && c.Share >= 1) {
		hi := "1]"
		if c.Family == FamilyCPU {
			hi = "1): a list of CPU-only pods has no GPU demand"
		}
		return nil, fmt.Errorf("%w: share %v of family %s out of [0, %s", ErrGenerate, c.Share, c.Family, hi)
	}
	var byClass [numPodClasses][]cluster.Pod
	for i := range base {
		p := base[i]
		p.GPUSpec, p.Creation, p.Deletion, p.HasTimes, p.Job = nil, 0, 0, false, ""
		byClass[classOf(&p)] = append(byClass[classOf(&p)], p)
	}
	g := &generator{rng: rand.New(rand.NewPCG(c.Seed, streamGenerate)), seen: map[string]bool{}}
	switch c.Family {
	case FamilyCPU:
		gpu := slices.Concat(byClass[classSharing], byClass[classWhole], byClass[classMulti])
		n := int(math.Round(c.Share * float64(len(gpu)) / (1 - c.Share)))
		cpu, err := g.drawCount(byClass[classCPU], n, "CPU-only")
		if err != nil {
			return nil, err
		}
		return slices.Concat(keptInOrder(base, gpu), cpu), nil
	case FamilyGPUShare, FamilyMultiGPU:
		in, out := []podClass{classSharing}, []podClass{classWhole, classMulti}
		what := "GPU-sharing"
		if c.Family == FamilyMultiGPU {
			in, out, what = []podClass{classMulti}, []podClass{classSharing, classWhole}, "multi-GPU"
		}
		pick := func(cs []podClass) []cluster.Pod {
			var out []cluster.Pod
			for _, k := range cs {
				out = append(out, byClass[k]...)
			}
			return keptInOrder(base, out)
		}
		var total int64
		for i := range base {
			total += base[i].GPUMilli()
		}
		a, err := g.drawMilli(pick(in), c.Share*float64(total), what)
		if err != nil {
			return nil, err
		}
		b, err := g.drawMilli(pick(out), (1-c.Share)*float64(total), "other GPU")
		if err != nil {
			return nil, err
		}
		return slices.Concat(byClass[classCPU], a, b), nil
	case FamilyGPUSpec:
		return g.restrict(base, c.Share, c.Specs)
	}
	return nil, fmt.Errorf("%w: unknown family %q (known: %s)", ErrGenerate, c.Family, strings.Join(FamilyNames(), ", "))
}

// keptInOrder returns pods (a subset of base, by name) in base's order.
func keptInOrder(base, pods []cluster.Pod) []cluster.Pod {
	rank := make(map[string]int, len(base))
	for i := range base {
		if _, ok := rank[base[i].Name]; !ok {
			rank[base[i].Name] = i
		}
	}
	out := slices.Clone(pods)
	slices.SortStableFunc(out, func(a, b cluster.Pod) int { return rank[a.Name] - rank[b.Name] })
	return out
}

type generator struct {
	rng    *rand.Rand
	seen   map[string]bool // names already in the output
	copies int             // pods named NAME-gen-K so far
}

// cycle draws the pods of pool in random orders without replacement, a
// new order each time all were drawn.
type cycle struct {
	g     *generator
	pool  []cluster.Pod
	order []int
	next  int
}

func (c *cycle) draw() cluster.Pod {
	if c.next == len(c.order) {
		c.order, c.next = c.g.rng.Perm(len(c.pool)), 0
	}
	p := c.pool[c.order[c.next]]
	c.next++
	if c.g.seen[p.Name] {
		p.Name = fmt.Sprintf("%s-gen-%d", p.Name, c.g.copies)
		c.g.copies++
	}
	c.g.seen[p.Name] = true
	return p
}

func (g *generator) drawCount(pool []cluster.Pod, n int, what string) ([]cluster.Pod, error) {
	if n > 0 && len(pool) == 0 {
		return nil, fmt.Errorf("%w: the base list has no %s pods to draw %d from", ErrGenerate, what, n)
	}
	c := &cycle{g: g, pool: pool}
	out := make([]cluster.Pod, 0, n)
	for range n {
		out = append(out, c.draw())
	}
	return out, nil
}

// drawMilli draws pods of pool until their GPU request reaches target
// milli-GPUs, stopping at the pod that brings it closest.
func (g *generator) drawMilli(pool []cluster.Pod, target float64, what string) ([]cluster.Pod, error) {
	if target <= 0 {
		return nil, nil
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("%w: the base list has no %s pods to draw %.0f milli-GPUs from", ErrGenerate, what, target)
	}
	c := &cycle{g: g, pool: pool}
	var out []cluster.Pod
	var sum float64
	for {
		p := c.draw()
		m := float64(p.GPUMilli())
		// Stop before a pod that would overshoot by more than the
		// shortfall it fills.
		if sum+m > target && sum+m-target > target-sum {
			return out, nil
		}
		out, sum = append(out, p), sum+m
		if sum >= target {
			return out, nil
		}
	}
}

// restrict gives round(share × GPU pods) of base's GPU pods, chosen
// uniformly, a GPUSpec drawn uniformly from the restricted pods of specs
// asking for the same number of GPUs and, for one GPU, the same kind
// (sharing or whole); from all restricted pods of specs when none asks
// for that.
func (g *generator) restrict(base []cluster.Pod, share float64, specs []cluster.Pod) ([]cluster.Pod, error) {
	pools := map[[2]int][][]string{}
	var all [][]string
	for i := range specs {
		p := &specs[i]
		if p.NumGPU == 0 || len(p.GPUSpec) == 0 {
			continue
		}
		k := [2]int{p.NumGPU, int(classOf(p))}
		pools[k] = append(pools[k], p.GPUSpec)
		all = append(all, p.GPUSpec)
	}
	out := make([]cluster.Pod, len(base))
	var gpu []int
	for i := range base {
		out[i] = base[i]
		out[i].GPUSpec, out[i].Creation, out[i].Deletion, out[i].HasTimes, out[i].Job = nil, 0, 0, false, ""
		if base[i].NumGPU > 0 {
			gpu = append(gpu, i)
		}
	}
	n := int(math.Round(share * float64(len(gpu))))
	if n > 0 && len(all) == 0 {
		return nil, fmt.Errorf("%w: family gpuspec draws GPU-model restrictions from a spec list, and it has no GPU pod with a gpu_spec", ErrGenerate)
	}
	perm := g.rng.Perm(len(gpu))
	for _, j := range perm[:n] {
		p := &out[gpu[j]]
		pool := pools[[2]int{p.NumGPU, int(classOf(p))}]
		if len(pool) == 0 {
			pool = all
		}
		p.GPUSpec = slices.Clone(pool[g.rng.IntN(len(pool))])
	}
	return out, nil
}

// FamilyShare measures pods' share of family f as GeneratePods defines it.
func FamilyShare(pods []cluster.Pod, f Family) float64 {
	var n, gpu, spec int
	var milli, sharing, multi int64
	for i := range pods {
		p := &pods[i]
		n++
		if p.NumGPU == 0 {
			continue
		}
		gpu++
		milli += p.GPUMilli()
		switch classOf(p) {
		case classSharing:
			sharing += p.GPUMilli()
		case classMulti:
			multi += p.GPUMilli()
		}
		if len(p.GPUSpec) > 0 {
			spec++
		}
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	switch f {
	case FamilyCPU:
		return ratio(float64(n-gpu), float64(n))
	case FamilyGPUShare:
		return ratio(float64(sharing), float64(milli))
	case FamilyMultiGPU:
		return ratio(float64(multi), float64(milli))
	case FamilyGPUSpec:
		return ratio(float64(spec), float64(gpu))
	}
	return math.NaN()
}

// List is a named pod list and the family it stands for: a list
// GenerateLists made, or a pod list file (FamilyOf its name).
type List struct {
	Name   string
	Family Family // the family it stands for
	Pods   []cluster.Pod
}

// GenerateLists makes the lists of cfgs from base (GeneratePods), each
// named by GenConfig.Name, with restrictions drawn from specs.
func GenerateLists(base, specs []cluster.Pod, cfgs []GenConfig) ([]List, error) {
	out := make([]List, 0, len(cfgs))
	for _, c := range cfgs {
		c.Specs = specs
		pods, err := GeneratePods(base, c)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", c.Name(), err)
		}
		out = append(out, List{Name: c.Name(), Family: c.Family, Pods: pods})
	}
	return out, nil
}

// FamilyOf guesses the family an openb pod list's file name stands for
// (openb_pod_list_gpuspec33.csv: gpuspec; default and unknown names:
// "default").
func FamilyOf(name string) Family {
	for _, f := range Families {
		if strings.Contains(name, "_"+string(f)) {
			return f
		}
	}
	return "default"
}

// ReadList reads the pod list file at path (lists.ReadPodsFile) as a
// List named by the file (openb_pod_list_gpuspec33.csv: gpuspec33) and
// of the family its name stands for (FamilyOf).
func ReadList(path string) (List, error) {
	pods, err := lists.ReadPodsFile(path)
	if err != nil {
		return List{}, err
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return List{Name: strings.TrimPrefix(name, "openb_pod_list_"), Family: FamilyOf(name), Pods: pods}, nil
}

// ReadLists makes the lists of a judgement: those of cfgs generated from
// the base list in the file basePath, restrictions drawn from the list in
// specsPath (both read only when cfgs is not empty), then the list files
// (ReadList).
func ReadLists(cfgs []GenConfig, basePath, specsPath string, files []string) ([]List, error) {
	var out []List
	if len(cfgs) > 0 {
		base, err := lists.ReadPodsFile(basePath)
		if err != nil {
			return nil, err
		}
		specs, err := lists.ReadPodsFile(specsPath)
		if err != nil {
			return nil, err
		}
		if out, err = GenerateLists(base, specs, cfgs); err != nil {
			return nil, err
		}
	}
	for _, path := range files {
		l, err := ReadList(path)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}
