package protocol

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/gpufrag/gpufrag/cluster"
)

// DefaultRatio is the FGD protocol's workload size: the pod list is
// inflated or trimmed to 130% of the cluster's GPU capacity, so every
// policy runs out of room well before the last pod and the curves show
// how each behaves past saturation.
const DefaultRatio = 1.3

// Random streams of a seed. Workload preparation and scheduling draw from
// separate streams, so every policy of a seed sees the same pod sequence.
const (
	streamWorkload  = 1
	streamScheduler = 2
	streamNodeOrder = 3
)

// Options configure an experiment. The zero value means the FGD protocol.
type Options struct {
	Ratio    float64 // GPU demand as a multiple of capacity; 0 means DefaultRatio
	Coverage float64 // share of pods the target workload covers; 0 means DefaultCoverage
	// Gang schedules the pods of a job (Pod.Job) all or nothing, and keeps
	// them together when the list is shuffled and resampled.
	Gang bool
	// RandomTies breaks equal best scores at random on every pod, as
	// upstream kube-scheduler does, instead of by a random node order fixed
	// for the run, as the FGD artifact does (see Scheduler).
	RandomTies bool
}

func (o Options) withDefaults() Options {
	if o.Ratio == 0 {
		o.Ratio = DefaultRatio
	}
	if o.Coverage == 0 {
		o.Coverage = cluster.DefaultCoverage
	}
	return o
}

func unitMilli(u []cluster.Pod) int64 {
	var t int64
	for i := range u {
		t += u[i].GPUMilli()
	}
	return t
}

// Workload prepares the pod sequence of the FGD protocol from pods for a
// cluster of capMilli GPU milli: sort by name, shuffle with rng, then
// append copies of uniformly drawn pods of the original list (named
// NAME-tuned-K) until the next would pass ratio*capMilli, or, when the list
// already asks for more, remove uniformly drawn pods until it does not.
// With gang, jobs move as units.
func Workload(pods []cluster.Pod, capMilli int64, ratio float64, gang bool, rng *rand.Rand) []cluster.Pod {
	orig := cluster.Units(pods, gang)
	us := slices.Clone(orig)
	slices.SortFunc(us, func(a, b []cluster.Pod) int { return cmp.Compare(a[0].Name, b[0].Name) })
	rng.Shuffle(len(us), func(i, j int) { us[i], us[j] = us[j], us[i] })
	var total int64
	for _, u := range us {
		total += unitMilli(u)
	}
	target := ratio * float64(capMilli)
	switch {
	case float64(total) > target:
		// Remove the k-th unit still in the list, k uniform, as often as
		// needed: an order-statistic tree finds it in O(log n), where
		// deleting from the slice each time was quadratic.
		alive := newRankTree(len(us))
		for float64(total) > target && alive.n > 0 {
			k := alive.remove(rng.IntN(alive.n))
			total -= unitMilli(us[k])
			us[k] = nil
		}
		us = slices.DeleteFunc(us, func(u []cluster.Pod) bool { return u == nil })
	case float64(total) < target && total > 0:
		var slab []cluster.Pod // the copies' pods, carved from few allocations
		for n := 0; ; n++ {
			u := orig[rng.IntN(len(orig))]
			if float64(total+unitMilli(u)) > target {
				break
			}
			if len(slab) < len(u) {
				slab = make([]cluster.Pod, max(len(u), 256))
			}
			c := slab[:len(u):len(u)]
			slab = slab[len(u):]
			suffix := "-tuned-" + strconv.Itoa(n)
			for j := range u {
				c[j] = u[j]
				c[j].Name = u[j].Name + suffix
				if c[j].Job != "" {
					c[j].Job = u[j].Job + suffix
				}
			}
			us = append(us, c)
			total += unitMilli(u)
		}
	}
	size := 0
	for _, u := range us {
		size += len(u)
	}
	out := make([]cluster.Pod, 0, size)
	for _, u := range us {
		out = append(out, u...)
	}
	return out
}

// rankTree is the set {0, ..., n-1} with removal by rank: a Fenwick tree
// of ones.
type rankTree struct {
	tree []int // 1-based Fenwick sums
	n    int   // elements left
	top  int   // highest power of two <= len(tree)-1
}

func newRankTree(n int) *rankTree {
	t := &rankTree{tree: make([]int, n+1), n: n, top: 1}
	for i := 1; i <= n; i++ {
		t.tree[i]++
		if j := i + i&-i; j <= n {
			t.tree[j] += t.tree[i]
		}
	}
	for t.top*2 <= n {
		t.top *= 2
	}
	return t
}

// remove takes out the element of rank k (0-based, among those left) and
// returns it.
func (t *rankTree) remove(k int) int {
	pos := 0
	for step := t.top; step > 0; step /= 2 {
		if next := pos + step; next < len(t.tree) && t.tree[next] <= k {
			pos, k = next, k-t.tree[next]
		}
	}
	// pos+1 is the 1-based index of the element.
	for i := pos + 1; i < len(t.tree); i += i & -i {
		t.tree[i]--
	}
	t.n--
	return pos
}

// Point is the mean of the samples at one integer percent of arrived GPU
// demand (samples whose demand rounds to it; when none, those within one
// percent), as the FGD artifact's analysis resamples its log. Ratios are
// fractions of 1.
type Point struct {
	Arrived         int     `json:"arrived_pct"`
	AllocRatio      float64 `json:"alloc_ratio"`       // allocated / capacity
	UnallocatedGPUs float64 `json:"unallocated_gpus"`  // capacity - allocated, in GPUs
	FragTotal       float64 `json:"frag_total"`        // F(M) / capacity
	FragRate        float64 `json:"frag_rate"`         // F(M) / idle
	WholeFreeNodes  float64 `json:"whole_free_nodes"`  // nodes with every GPU free
	StrandedNodes   float64 `json:"stranded_nodes"`    // nodes whose idle GPUs no target type can use
	PartlyUsedNodes float64 `json:"partly_used_nodes"` // nodes with some GPUs in use and some free
	Samples         int     `json:"samples"`
}

// Run is one policy on one prepared workload.
type Run struct {
	Policy        string `json:"policy"`
	Seed          uint64 `json:"seed"`
	Pods          int    `json:"pods"`
	Failed        int    `json:"failed"`
	CapacityMilli int64  `json:"capacity_milli"`
	// FirstFailure is the cluster right after the first pod that fit
	// nowhere (DESIGN.md §4: the unallocated GPU share when the first job
	// fails); nil when every pod ran.
	FirstFailure *FirstFailure `json:"first_failure,omitempty"`
	Curve        []Point       `json:"curve"` // index = arrived percent
}

// FirstFailure is when a run first turned a pod away.
type FirstFailure struct {
	Pod              int     `json:"pod"`               // 0-based arrival index
	ArrivedShare     float64 `json:"arrived_share"`     // arrived GPU demand / capacity
	UnallocatedShare float64 `json:"unallocated_share"` // idle GPU milli / capacity
}

// At returns the curve point at pct percent of arrived demand; ok is false
// when the run has no samples there.
func (r *Run) At(pct int) (Point, bool) {
	if pct < 0 || pct >= len(r.Curve) || r.Curve[pct].Samples == 0 {
		return Point{}, false
	}
	return r.Curve[pct], true
}

// Simulate runs the pods, in order, through the policy on an empty
// cluster of the nodes, with no departures, measuring after every arrival;
// the target workload measures fragmentation; order, when not nil, is the
// scheduler's tie-break order (Scheduler.SetOrder). It returns the samples and
// the number of pods (units, with gang) that failed.
func Simulate(nodes []cluster.Node, pods []cluster.Pod, policy cluster.Policy, target *cluster.Target, opts Options, order []int, rng *rand.Rand) ([]cluster.Sample, int) {
	samples := make([]cluster.Sample, 0, len(pods))
	failed := simulate(nodes, pods, policy, target, opts, order, rng, func(sm cluster.Sample) { samples = append(samples, sm) })
	return samples, failed
}

// simulate is Simulate giving each sample to sample as it is taken.
func simulate(nodes []cluster.Node, pods []cluster.Pod, policy cluster.Policy, target *cluster.Target, opts Options, order []int, rng *rand.Rand, sample func(cluster.Sample)) int {
	gang := opts.Gang
	s := cluster.NewState(nodes)
	sc := cluster.NewScheduler(s, policy, rng)
	sc.RandomTies = opts.RandomTies
	if order != nil {
		sc.SetOrder(order)
	}
	m := cluster.NewMeter(s, target)
	// Without gang every pod is a unit of its own: no list of units.
	var units [][]cluster.Pod
	n := len(pods)
	if gang {
		units = cluster.Units(pods, gang)
		n = len(units)
	}
	var arrived int64
	failed := 0
	for k := range n {
		u := pods[k : k+1 : k+1] // a unit of one pod, as Units makes it
		if gang {
			u = units[k]
		}
		arrived += unitMilli(u)
		if len(u) == 1 {
			pl, ok := sc.Schedule(&u[0])
			if ok {
				m.Touch(pl.Node)
			} else {
				failed++
			}
		} else {
			ptrs := make([]*cluster.Pod, len(u))
			for j := range u {
				ptrs[j] = &u[j]
			}
			pls, ok := sc.ScheduleGang(ptrs)
			if !ok {
				failed++
			}
			for _, pl := range pls {
				m.Touch(pl.Node)
			}
		}
		sm := m.Sample(arrived)
		sm.Failed = failed
		sample(sm)
	}
	sc.Release()
	return failed
}

// Curve resamples samples at every integer percent of arrived demand from
// 0 to maxPct, for a cluster of capMilli GPU milli (see Point).
func Curve(samples []cluster.Sample, capMilli int64, maxPct int) []Point {
	cb := newCurveBuilder(capMilli, maxPct)
	for _, sm := range samples {
		cb.add(sm)
	}
	return cb.points()
}

// curveBuilder is Curve taking the samples one at a time.
type curveBuilder struct {
	buckets []curveAcc
	c       float64 // capacity in milli
}

// curveAcc adds up the samples of one percent.
type curveAcc struct {
	n                                          int
	alloc, frag, rate, whole, stranded, partly float64
}

func newCurveBuilder(capMilli int64, maxPct int) *curveBuilder {
	return &curveBuilder{buckets: make([]curveAcc, maxPct+1), c: float64(capMilli)}
}

// add takes the next sample.
func (cb *curveBuilder) add(sm cluster.Sample) {
	c := cb.c
	b := int(math.RoundToEven(100 * float64(sm.ArrivedMilli) / c))
	if b < 0 || b >= len(cb.buckets) {
		return
	}
	a := &cb.buckets[b]
	a.n++
	a.alloc += float64(sm.AllocatedMilli) / c
	a.frag += sm.FragMilli / c
	if sm.IdleMilli > 0 {
		a.rate += sm.FragMilli / float64(sm.IdleMilli)
	}
	a.whole += float64(sm.WholeFreeNodes)
	a.stranded += float64(sm.StrandedNodes)
	a.partly += float64(sm.PartlyUsed)
}

// points is the curve of the samples taken.
func (cb *curveBuilder) points() []Point {
	buckets, c, maxPct := cb.buckets, cb.c, len(cb.buckets)-1
	out := make([]Point, maxPct+1)
	for x := range out {
		a := buckets[x]
		if a.n == 0 { // no sample rounds to x: use its neighbours
			for _, y := range []int{x - 1, x + 1} {
				if y >= 0 && y <= maxPct {
					b := buckets[y]
					a.n += b.n
					a.alloc, a.frag, a.rate = a.alloc+b.alloc, a.frag+b.frag, a.rate+b.rate
					a.whole, a.stranded, a.partly = a.whole+b.whole, a.stranded+b.stranded, a.partly+b.partly
				}
			}
		}
		p := Point{Arrived: x, Samples: a.n}
		if a.n > 0 {
			n := float64(a.n)
			p.AllocRatio = a.alloc / n
			p.UnallocatedGPUs = (1 - p.AllocRatio) * c / cluster.MilliGPU
			p.FragTotal, p.FragRate = a.frag/n, a.rate/n
			p.WholeFreeNodes, p.StrandedNodes, p.PartlyUsedNodes = a.whole/n, a.stranded/n, a.partly/n
		}
		out[x] = p
	}
	return out
}

// Experiment runs the FGD protocol for one policy spec and seed: the target
// workload from the original pod list, the workload prepared with the
// seed's workload stream, a random tie-break order of the nodes from a
// third stream, the policy's random choices from the scheduler stream.
func Experiment(nodes []cluster.Node, pods []cluster.Pod, spec string, seed uint64, opts Options) (*Run, error) {
	pr, err := prepare(nodes, pods, seed, opts)
	if err != nil {
		return nil, err
	}
	return pr.run(spec)
}

// prepared is what every policy of one seed shares in Experiment: it
// depends on the nodes, the pods, the seed and the options, not on the
// policy, so a Grid prepares it once per seed. Its runs only read it.
type prepared struct {
	nodes    []cluster.Node
	seed     uint64
	opts     Options // with defaults
	capMilli int64
	target   *cluster.Target
	demand   int64         // GPU milli the original pods ask for
	w        []cluster.Pod // the workload
	order    []int         // the tie-break order
}

func prepare(nodes []cluster.Node, pods []cluster.Pod, seed uint64, opts Options) (*prepared, error) {
	opts = opts.withDefaults()
	capMilli := int64(cluster.GPUCapacity(nodes)) * cluster.MilliGPU
	if capMilli == 0 || len(pods) == 0 {
		return nil, fmt.Errorf("%w: %d nodes with %d GPUs, %d pods", cluster.ErrEmpty, len(nodes), capMilli/cluster.MilliGPU, len(pods))
	}
	pr := &prepared{nodes: nodes, seed: seed, opts: opts, capMilli: capMilli, target: cluster.NewTarget(pods, opts.Coverage)}
	for i := range pods {
		pr.demand += pods[i].GPUMilli()
	}
	if pr.demand > 0 {
		pr.w = Workload(pods, capMilli, opts.Ratio, opts.Gang, rand.New(rand.NewPCG(seed, streamWorkload)))
		pr.order = rand.New(rand.NewPCG(seed, streamNodeOrder)).Perm(len(nodes))
	}
	return pr, nil
}

// run is Experiment's run of the policy spec on the prepared workload.
func (pr *prepared) run(spec string) (*Run, error) {
	policy, err := cluster.NewPolicy(spec, pr.target)
	if err != nil {
		return nil, err
	}
	if pr.demand == 0 {
		return nil, fmt.Errorf("%w: no pod asks for a GPU", cluster.ErrEmpty)
	}
	capMilli := pr.capMilli
	run := &Run{Policy: cluster.PolicyName(spec), Seed: pr.seed, Pods: len(pr.w), CapacityMilli: capMilli}
	// The samples go into the curve as they come (Curve of Simulate's
	// samples, without keeping them).
	cb := newCurveBuilder(capMilli, int(math.Ceil(100*pr.opts.Ratio)))
	k := 0
	run.Failed = simulate(pr.nodes, pr.w, policy, pr.target, pr.opts, pr.order, rand.New(rand.NewPCG(pr.seed, streamScheduler)), func(sm cluster.Sample) {
		cb.add(sm)
		if sm.Failed > 0 && run.FirstFailure == nil {
			run.FirstFailure = &FirstFailure{Pod: k, ArrivedShare: float64(sm.ArrivedMilli) / float64(capMilli),
				UnallocatedShare: float64(sm.IdleMilli) / float64(capMilli)}
		}
		k++
	})
	run.Curve = cb.points()
	return run, nil
}
