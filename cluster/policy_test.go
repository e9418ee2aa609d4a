package cluster

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// scoreCase is one Score call on a hand-built state.
type scoreCase struct {
	name  string
	setup func(t testing.TB, s *State) // placements before scoring; nil for an idle cluster
	pod   *Pod
	node  int // 0: the G2 node (96 cores, 8 GPUs), 1: the T4 node (104 cores, 2 GPUs)
	want  float64
}

func runScoreCases(t *testing.T, p Policy, cases []scoreCase) {
	t.Helper()
	for _, tc := range cases {
		s := NewState([]Node{nodeG2, nodeT4})
		if tc.setup != nil {
			tc.setup(t, s)
		}
		if !s.Fits(tc.pod, tc.node) {
			t.Fatalf("%s: the pod does not fit", tc.name)
		}
		if got := p.Score(s, tc.pod, tc.node); got != tc.want {
			t.Errorf("%s %s: Score = %v, want %v", p.Name(), tc.name, got, tc.want)
		}
	}
}

func TestBestFitScore(t *testing.T) {
	runScoreCases(t, BestFit{}, []scoreCase{
		// Left after placement on the G2 node: CPU 88000/128000 = 0.6875, GPU
		// 7000/8000 = 0.875; 100*(1 - (0.5*0.6875 + 0.5*0.875)) = 21.875 -> 21.
		{"g2-whole", nil, gpuPod("p", 8000, 1, 1000), 0, 21},
		// T4: CPU 96000/128000 = 0.75, GPU 1000/8000 = 0.125;
		// 100*(1 - 0.4375) = 56.25 -> 56.
		{"t4-whole", nil, gpuPod("p", 8000, 1, 1000), 1, 56},
		// CPU-only pod of 8 cores on T4: CPU 0.75, GPU 2000/8000 = 0.25:
		// 100*(1 - 0.5) = 50.
		{"t4-cpu", nil, cpuPod("c", 8000), 1, 50},
	})
	// NormalizeScore: integer min-max to 0..100: (30-21)*100/(56-21) = 25.7 -> 25.
	sc := []float64{21, 56, 30}
	BestFit{}.Normalize(sc)
	if sc[0] != 0 || sc[1] != 100 || sc[2] != 25 {
		t.Errorf("Normalize = %v, want [0 100 25]", sc)
	}
	eq := []float64{7, 7}
	BestFit{}.Normalize(eq)
	if eq[0] != 0 || eq[1] != 0 {
		t.Errorf("Normalize of equal scores = %v, want zeros", eq)
	}
}

func TestDotProductScore(t *testing.T) {
	runScoreCases(t, DotProduct{}, []scoreCase{
		// Free (96000/128000, 8000/8000) = (0.75, 1); request (8000/128000,
		// 1000/8000) = (0.0625, 0.125); dot = 0.046875 + 0.125 = 0.171875;
		// 100*(1 - dot/2) = 91.41 -> 91.
		{"g2", nil, gpuPod("p", 8000, 1, 1000), 0, 91},
		// T4 free (0.8125, 0.25): dot = 0.05078125 + 0.03125 = 0.08203125;
		// 100*(1 - 0.041015625) = 95.9 -> 95. The emptier-looking G2 node
		// aligns more with the request, so it scores lower.
		{"t4", nil, gpuPod("p", 8000, 1, 1000), 1, 95},
	})
}

func TestClusteringScore(t *testing.T) {
	onePod := func(t testing.TB, s *State) { mustPlace(t, s, gpuPod("w", 8000, 1, 1000), 0, 0) }
	mixed := func(t testing.TB, s *State) {
		onePod(t, s)
		mustPlace(t, s, gpuPod("s", 4000, 1, 500), 0, 1)
	}
	runScoreCases(t, Clustering{}, []scoreCase{
		// Idle node: tier (25, 50]; inside 25*(8000-8000)/8000 = 0 -> 25.
		{"idle-g2", nil, gpuPod("p", 8000, 1, 1000), 0, 25},
		// Idle T4: 25*(8000-2000)/8000 = 18.75 -> 18, + 25 = 43.
		{"idle-t4", nil, gpuPod("p", 8000, 1, 1000), 1, 43},
		// Only 1-GPU pods run there: tier (75, 100]; 25*(8000-7000)/8000 = 3 -> 78.
		{"same-only", onePod, gpuPod("p", 8000, 1, 1000), 0, 78},
		// A 1-GPU pod and a sharing pod: tier (50, 75]; free 6500:
		// 25*1500/8000 = 4.69 -> 4, + 50 = 54.
		{"same-among-others", mixed, gpuPod("p", 8000, 1, 1000), 0, 54},
		// A 2-GPU pod where only 1-GPU pods run: tier (0, 25]: 3.
		{"other-shape", onePod, gpuPod("p", 8000, 2, 1000), 0, 3},
		{"cpu-only", onePod, cpuPod("c", 1000), 0, 0},
	})
}

func TestPackingScore(t *testing.T) {
	partly := func(t testing.TB, s *State) { mustPlace(t, s, gpuPod("s", 4000, 1, 300), 0, 0) }
	runScoreCases(t, Packing{}, []scoreCase{
		// Idle 8-GPU node: case 3, max(33 - 8, 8) = 25.
		{"idle-g2", nil, gpuPod("p", 4000, 1, 500), 0, 25},
		// Idle 2-GPU node: max(33 - 2, 2) = 31: small idle nodes first.
		{"idle-t4", nil, gpuPod("p", 4000, 1, 500), 1, 31},
		// GPU0 has 700 free and holds 500: case 1, 100 - (700*100/1000)/10 = 93.
		{"shared-gpu", partly, gpuPod("p", 4000, 1, 500), 0, 93},
		// 800 does not fit GPU0's 700: a fully free GPU on a used node,
		// case 2: 50 - 1 = 49.
		{"free-gpu-used-node", partly, gpuPod("p", 4000, 1, 800), 0, 49},
		// Two whole GPUs on the used node: 50 - 2 = 48.
		{"two-gpus-used-node", partly, gpuPod("p", 4000, 2, 1000), 0, 48},
		{"cpu-only", partly, cpuPod("c", 1000), 0, 0},
	})
}

func TestFGDScore(t *testing.T) {
	f := &FGD{Target: testTarget()}
	halfOnGPU0 := func(t testing.TB, s *State) { mustPlace(t, s, gpuPod("s", 4000, 1, 500), 1, 0) }
	runScoreCases(t, f, []scoreCase{
		// Idle T4 has fragmentation 0 (see TestNodeFrag "idle"). A sharing pod
		// on either GPU leaves [500 1000]: 250 (TestNodeFrag "half-used").
		// Decrease -250 milli: 100*sigmoid(-0.25) = 43.78 -> 43.
		{"share-on-idle", nil, gpuPod("p", 4000, 1, 500), 1, 43},
		// GPU0 already has 500 free: fragmentation 250. On GPU0 the node
		// becomes [0 1000], fragmentation 0: decrease 250, 100*sigmoid(0.25)
		// = 56.2 -> 56; on GPU1 [500 500], fragmentation 500: 43. Best: 56.
		{"share-completes-gpu", halfOnGPU0, gpuPod("p", 4000, 1, 500), 1, 56},
		// A whole GPU on the idle T4 leaves [0 1000]: 0 -> 0, sigmoid(0) = 50.
		{"whole-on-idle", nil, gpuPod("p", 8000, 1, 1000), 1, 50},
		// A CPU-only pod of 100 cores leaves 4000: the whole type (8000
		// cores) now lacks CPU: 0.5*2000 = 1000 more fragment:
		// 100*sigmoid(-1) = 26.9 -> 26.
		{"cpu-drain", nil, cpuPod("c", 100000), 1, 26},
	})
	s := NewState([]Node{nodeG2, nodeT4})
	halfOnGPU0(t, s)
	if g := f.GPUs(s, gpuPod("p", 4000, 1, 500), 1, nil); len(g) != 1 || g[0] != 0 {
		t.Errorf("FGD GPUs = %v, want [0] (the GPU it completes)", g)
	}
}

func TestKubeFitScore(t *testing.T) {
	p := &Pod{Name: "p", MilliCPU: 8000, MemoryMiB: 16384, NumGPU: 1, MilliGPU: 1000}
	c := &Pod{Name: "c", MilliCPU: 8000, MemoryMiB: 16384}
	// On the idle T4 node (104 cores, 512 GiB, 2 GPUs):
	// CPU requested 8000/104000 -> 7 (7.69); free share (104000-8000)*100/104000 = 92 (92.3).
	// Memory 16384/524288 -> 3 (3.125); free share 96 (96.875).
	// GPU 1000/2000 -> 50.
	for _, tc := range []struct {
		spec string
		pod  *Pod
		want float64
	}{
		{"spread", p, 94},                // (92 + 96) / 2
		{"mostallocated", p, 5},          // (7 + 3) / 2
		{"rtcr", p, 5},                   // round((7 + 3) / 2)
		{"mostallocated:gpu=1", p, 20},   // (7 + 3 + 50) / 3
		{"rtcr:gpu=1", p, 20},            // round(60 / 3)
		{"mostallocated:gpu=1", c, 3},    // (7 + 3 + 0) / 3 = 3.33 -> 3
		{"rtcr:gpu=1", c, 5},             // the GPU scores 0 and drops out: round(10 / 2)
		{"spread:cpu=3,memory=1", p, 93}, // (3*92 + 96) / 4 = 93
	} {
		pol, err := NewPolicy(tc.spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		runScoreCases(t, pol, []scoreCase{{tc.spec + "/" + tc.pod.Name, nil, tc.pod, 1, tc.want}})
	}
}

func TestVolcanoBinpackScore(t *testing.T) {
	p := &Pod{Name: "p", MilliCPU: 8000, MemoryMiB: 16384, NumGPU: 1, MilliGPU: 1000}
	// Idle T4: CPU 8000/104000 = 0.0769231, memory 16384/524288 = 0.03125.
	def, _ := NewPolicy("volcano-binpack", nil)
	// Defaults (weight 1, cpu 1, memory 1, GPU not listed):
	// (0.0769231 + 0.03125) / 2 * 100 = 5.40865.
	s := NewState([]Node{nodeG2, nodeT4})
	if got := def.Score(s, p, 1); !near(got, 5.408653846) {
		t.Errorf("default: %v, want 5.40865", got)
	}
	// gpu=2 lists nvidia.com/gpu: + 2 * 1000/2000 = 1; (1.1081731)/4 * 100 = 27.704.
	withGPU, _ := NewPolicy("volcano-binpack:gpu=2", nil)
	if got := withGPU.Score(s, p, 1); !near(got, 27.70432692) {
		t.Errorf("gpu=2: %v, want 27.7043", got)
	}
	// weight=10 scales the node score by 10.
	w10, _ := NewPolicy("volcano-binpack:weight=10", nil)
	if got := w10.Score(s, p, 1); !near(got, 54.08653846) {
		t.Errorf("weight=10: %v, want 54.0865", got)
	}
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

func TestRandomPolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	s := NewState([]Node{nodeG2, nodeT4})
	mustPlace(t, s, gpuPod("s", 1000, 1, 300), 1, 0)
	counts := map[int]int{}
	for range 400 {
		n := Random{}.Choose(s, cpuPod("c", 1), []int{0, 1}, rng)
		counts[n]++
		// A 500-milli pod fits T4's GPU0 (700 free) and GPU1.
		g := Random{}.GPUs(s, gpuPod("p", 1, 1, 500), 1, rng)
		counts[10+g[0]]++
	}
	// Each of the two choices should come up about 200 times in 400; 120 is
	// more than 8 standard deviations (10) below.
	for _, k := range []int{0, 1, 10, 11} {
		if counts[k] < 120 {
			t.Errorf("choice %d came up %d times in 400: %v", k, counts[k], counts)
		}
	}
}

func TestNewPolicy(t *testing.T) {
	tg := testTarget()
	for _, name := range PolicyNames() {
		p, err := NewPolicy(name, tg)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.Name() != name {
			t.Errorf("NewPolicy(%q).Name() = %q", name, p.Name())
		}
	}
	if p, err := NewPolicy("recommended", tg); err != nil || p.Name() != Aliases["recommended"] {
		t.Errorf("recommended: %v, %v", p, err)
	}
	for _, bad := range []string{"nope", "bestfit:x=1", "spread:cpu=-1", "spread:gpu", "volcano-binpack:disk=1"} {
		if _, err := NewPolicy(bad, tg); !errors.Is(err, ErrUnknownPolicy) {
			t.Errorf("NewPolicy(%q) = %v, want ErrUnknownPolicy", bad, err)
		}
	}
	if _, err := NewPolicy("fgd", nil); err == nil {
		t.Error("fgd without a target workload succeeded")
	}
	// Options of a known policy are ErrPolicyOptions (and so
	// ErrUnknownPolicy too); weights that score every node the same are
	// refused: a real scheduler's other scorers would place the pods.
	for _, bad := range []string{"bestfit:x=1", "spread:cpu=-1", "mostallocated:cpu=0,memory=0", "rtcr:cpu=0,memory=0,gpu=0",
		"volcano-binpack:weight=0", "volcano-binpack:cpu=0,memory=0"} {
		if _, err := NewPolicy(bad, tg); !errors.Is(err, ErrPolicyOptions) || !strings.HasPrefix(err.Error(), "bad policy options") {
			t.Errorf("NewPolicy(%q) = %v, want ErrPolicyOptions", bad, err)
		}
	}
	for _, good := range []string{"mostallocated:cpu=0,memory=0,gpu=1", "volcano-binpack:cpu=0,memory=0,gpu=2"} {
		if _, err := NewPolicy(good, tg); err != nil {
			t.Errorf("NewPolicy(%q): %v", good, err)
		}
	}
}

// TestFGDReserveOptions: the options parse, and bad ones are refused.
func TestFGDReserveOptions(t *testing.T) {
	target := NewTarget([]Pod{{Name: "x", MilliCPU: 1, NumGPU: 1, MilliGPU: 1000}}, 1)
	p, err := NewPolicy("fgd-reserve:scarcity=7.5", target)
	if err != nil {
		t.Fatal(err)
	}
	if f := p.(*FGDReserve); f.Scarcity != 7.5 || f.FitTies || f.Threshold != DefaultThreshold {
		t.Errorf("options: %+v", f)
	}
	if p, err := NewPolicy("fgd-reserve:threshold=0,tie=fit", target); err != nil || !p.(*FGDReserve).FitTies || p.(*FGDReserve).Threshold != 0 {
		t.Errorf("the first design's options: %v %+v", err, p)
	}
	for _, bad := range []string{"fgd-reserve:threshold=1", "fgd-reserve:scarcity=-1", "fgd-reserve:scarcity=x", "fgd-reserve:tie=random", "fgd-reserve:depth=2"} {
		if _, err := NewPolicy(bad, target); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestSplitPolicies(t *testing.T) {
	got := SplitPolicies([]string{"fgd,spread:cpu=1,gpu=1", "volcano-binpack:gpu=8,memory=1,bestfit", " , "})
	want := []string{"fgd", "spread:cpu=1,gpu=1", "volcano-binpack:gpu=8,memory=1", "bestfit"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SplitPolicies = %q, want %q", got, want)
	}
}

// CheckPolicy is NewPolicy's verdict without a pod list.
func TestCheckPolicy(t *testing.T) {
	for _, spec := range append(PolicyNames(), "recommended", "fgd-reserve:scarcity=10", "spread:cpu=1,gpu=1") {
		if err := CheckPolicy(spec); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
	if err := CheckPolicy("fgdx"); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("fgdx: %v", err)
	}
	if err := CheckPolicy("fgd-reserve:threshold=1"); err == nil {
		t.Errorf("a bad option: %v", err)
	}
}

// Every policy is named at the start of a line, and no line passes 80
// columns.
func TestPoliciesText(t *testing.T) {
	text := PoliciesText()
	for _, p := range Policies {
		if !strings.Contains(text, "\n  "+p.Name+" ") && !strings.HasPrefix(text, "  "+p.Name+" ") {
			t.Errorf("%s not listed", p.Name)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if utf8.RuneCountInString(line) > 80 {
			t.Errorf("line of %d columns: %q", utf8.RuneCountInString(line), line)
		}
	}
}
