package sim

import (
	"math"
	"strings"
	"testing"
)

// arKernelTableURL is the table AllReduceLatencyTP4 and AllReduceLatencyTP8
// and the prior's all_reduce.latency_ns are drawn from.
const arKernelTableURL = "https://github.com/sgl-project/sglang/pull/2904"

// arKernelTable is sgl-project/sglang#2904's "vllm" table ("unit test
// performance in H100 (without cuda graph)", tests/test_trt_reduce.py):
// vLLM's custom all-reduce, one call's latency in ms at TP 2, 4 and 8.
var arKernelTable = []struct {
	bytes float64
	ms    [3]float64 // TP 2, 4, 8
}{
	{512, [3]float64{0.0095, 0.0091, 0.0101}},
	{4096, [3]float64{0.0088, 0.0085, 0.0093}},
	{32768, [3]float64{0.0087, 0.0092, 0.0118}},
	{262144, [3]float64{0.0129, 0.0206, 0.0241}},
	{524288, [3]float64{0.0177, 0.0269, 0.0304}},
	{1048576, [3]float64{0.0266, 0.0402, 0.0450}},
}

// fitARKernelTable fits the step model's all-reduce form to arKernelTable
// by least squares: t = latency(tp) + 2(tp−1)/tp × bytes × s, one latency
// per TP and one s (ns per byte crossing a link) for all. It returns the
// three latencies (ns), s and the rms log error.
func fitARKernelTable() (lat [3]float64, s, rmsLog float64) {
	tps := [3]float64{2, 4, 8}
	// One row per (size, TP) of the unknowns (lat2, lat4, lat8, s).
	var rows [][]float64
	var y []float64
	for _, r := range arKernelTable {
		for i, tp := range tps {
			x := make([]float64, 4)
			x[i] = 1
			x[3] = 2 * (tp - 1) / tp * r.bytes
			rows = append(rows, x)
			y = append(y, r.ms[i]*1e6)
		}
	}
	sol := leastSquares(rows, y)
	lat = [3]float64{sol[0], sol[1], sol[2]}
	s = sol[3]
	var sum float64
	for _, r := range arKernelTable {
		for i, tp := range tps {
			pred := lat[i] + 2*(tp-1)/tp*r.bytes*s
			sum += math.Pow(math.Log(pred/(r.ms[i]*1e6)), 2)
		}
	}
	return lat, s, math.Sqrt(sum / float64(3*len(arKernelTable)))
}

// TestAllReduceLatencyScaleFromKernelTable: AllReduceLatencyTP4 and
// AllReduceLatencyTP8 are the TP 4 and TP 8 latencies of the fit of the
// cited kernel table over its TP 2 latency, to 3 decimals, and the prior's
// all_reduce.latency_ns is that TP 2 latency to the µs, cited in
// sim/profiles/prior.yaml's comments. Changing a constant, the prior or the
// table without redoing the others fails here.
func TestAllReduceLatencyScaleFromKernelTable(t *testing.T) {
	lat, s, rms := fitARKernelTable()
	t.Logf("fit: %.0f, %.0f, %.0f ns at TP 2, 4, 8; %.2f µs a MB crossing a link; rms log error %.3f", lat[0], lat[1], lat[2], s*1e3, rms)
	round3 := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	if got, want := AllReduceLatencyTP4, round3(lat[1]/lat[0]); got != want {
		t.Errorf("AllReduceLatencyTP4 = %v, want %v (%.0f ÷ %.0f ns)", got, want, lat[1], lat[0])
	}
	if got, want := AllReduceLatencyTP8, round3(lat[2]/lat[0]); got != want {
		t.Errorf("AllReduceLatencyTP8 = %v, want %v (%.0f ÷ %.0f ns)", got, want, lat[2], lat[0])
	}
	// The slope as a share of the table's link (the H100's 450 GB/s one way), to 3 decimals.
	if got, want := AllReduceSmallLinkShare, round3(1/(s*450)); got != want {
		t.Errorf("AllReduceSmallLinkShare = %v, want %v (%.4f ns a byte crossing a 450 GB/s link)", got, want, s)
	}
	if largest := arKernelTable[len(arKernelTable)-1].bytes; AllReduceSmallBytes != largest {
		t.Errorf("AllReduceSmallBytes = %d, want the table's largest message, %.0f", AllReduceSmallBytes, largest)
	}
	if rms > 0.12 {
		t.Errorf("the form fits the table with rms log error %.3f: not the 0.114 the comments quote", rms)
	}
	j := PriorJoint()
	if got, want := j.AllReduce.LatencyNs, int64(math.Round(lat[0]/1000))*1000; got != want {
		t.Errorf("prior.yaml all_reduce.latency_ns = %d, want %d (the table's TP 2 latency %.0f ns)", got, want, lat[0])
	}
	text := string(PriorYAML())
	if !strings.Contains(text, "sgl-project/sglang#2904") && !strings.Contains(text, arKernelTableURL) {
		t.Errorf("prior.yaml's comments do not cite %s", arKernelTableURL)
	}
}

func TestAllReduceLatencyScale(t *testing.T) {
	for _, c := range []struct {
		tp   int
		want float64
	}{
		{1, 1}, {2, 1}, {4, AllReduceLatencyTP4}, {8, AllReduceLatencyTP8},
		{16, 2*AllReduceLatencyTP8 - AllReduceLatencyTP4},
	} {
		if got := AllReduceLatencyScale(c.tp); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("AllReduceLatencyScale(%d) = %v, want %v", c.tp, got, c.want)
		}
	}
	prev := 1.0
	for tp := 2; tp <= 64; tp++ {
		got := AllReduceLatencyScale(tp)
		if got < prev {
			t.Errorf("AllReduceLatencyScale(%d) = %v < %v at TP %d: the latency must not fall with more GPUs", tp, got, prev, tp-1)
		}
		prev = got
	}
}

// TestAllReduceLatencyByTP: over NVLink the fixed part of the all-reduce
// term grows with the TP degree as AllReduceLatencyScale says, and the
// first AllReduceSmallBytes of a message cross the link at
// AllReduceSmallLinkShare of it, the rest at the profile's bw_eff; over
// PCIe the latency grows as AllReducePCIeLatencyScale says, bw_eff
// throughout.
func TestAllReduceLatencyByTP(t *testing.T) {
	for _, link := range []float64{1e11, PCIeLinkBytesPerS} {
		p := toyProfile()
		p.Peak.LinkBytesPerS = link
		for _, tp := range []int{2, 4, 8} {
			s := toyShape() // hidden 1000, 2 B: 2,000 B a token
			s.TP = tp
			ring := 2 * float64(tp-1) / float64(tp)
			for _, n := range []int64{1, 100, 1000} { // prefill tokens: 2 KB, 200 KB, 2 MB messages
				got := p.StepTime(s, Step{PrefillTokens: n, PrefillSeqs: 1, PrefillPairs: 1}).AllReduceNs
				// 2 layers × 2 calls.
				scale, small := AllReducePCIeLatencyScale(tp), 0.0
				if link > PCIeLinkBytesPerS {
					scale, small = AllReduceLatencyScale(tp), min(float64(n)*2000, AllReduceSmallBytes)
				}
				big := float64(n)*2000 - small
				want := 4*1000*scale + 4*ring*(small/(link*AllReduceSmallLinkShare/1e9)+big/(link*0.5/1e9))
				if !near(got, want) {
					t.Errorf("link %g B/s, TP %d, %d tokens: all-reduce %v ns, want %v", link, tp, n, got, want)
				}
			}
		}
	}
}
