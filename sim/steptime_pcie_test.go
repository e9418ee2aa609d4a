package sim

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/model"
)

// ncclTable is one all_reduce_perf table of sim/testdata/allreduce-pcie:
// the GPUs it spans and its out-of-place time (ns) by message size (bytes).
type ncclTable struct {
	name  string
	gpus  int
	bytes []float64
	ns    []float64
}

// readNCCLTables reads sim/testdata/allreduce-pcie/*.tsv (origin and
// licence in its README.md): a "# gpus: N" line, then rows of bytes,
// out-of-place time in µs and busbw in GB/s. It checks each row's busbw
// against its time, so that a mistyped row fails here.
func readNCCLTables(t *testing.T) []ncclTable {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "allreduce-pcie", "*.tsv"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tables in testdata/allreduce-pcie (%v)", err)
	}
	sort.Strings(files)
	var out []ncclTable
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		tab := ncclTable{name: filepath.Base(f)}
		sc := bufio.NewScanner(fh)
		line := 0
		for sc.Scan() {
			line++
			l := sc.Text()
			if v, ok := strings.CutPrefix(l, "# gpus: "); ok {
				if tab.gpus, err = strconv.Atoi(v); err != nil || tab.gpus < 2 {
					t.Fatalf("%s:%d: gpus %q", f, line, v)
				}
				continue
			}
			if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
				continue
			}
			fs := strings.Fields(l)
			if len(fs) != 3 {
				t.Fatalf("%s:%d: want bytes, time_us, busbw_GBps: %q", f, line, l)
			}
			var v [3]float64
			for i, s := range fs {
				if v[i], err = strconv.ParseFloat(s, 64); err != nil {
					t.Fatalf("%s:%d: field %d: %v", f, line, i+1, err)
				}
			}
			if tab.gpus == 0 {
				t.Fatalf("%s:%d: a row before the \"# gpus:\" line", f, line)
			}
			// busbw = bytes ÷ time × 2(n−1)/n, printed to 2 decimals.
			n := float64(tab.gpus)
			if busbw := v[0] / v[1] / 1e3 * 2 * (n - 1) / n; math.Abs(busbw-v[2]) > 0.011+0.01*v[2] {
				t.Errorf("%s:%d: busbw %.2f GB/s, but %.0f B in %.2f µs is %.3f", f, line, v[2], v[0], v[1], busbw)
			}
			tab.bytes = append(tab.bytes, v[0])
			tab.ns = append(tab.ns, v[1]*1e3)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if len(tab.bytes) < 20 {
			t.Fatalf("%s: %d rows", f, len(tab.bytes))
		}
		out = append(out, tab)
	}
	return out
}

// The message sizes of the fits. Latency: the plateau of the smallest
// messages (up to 4 KiB), where a ring's hops, not its bytes, take the
// time. Bandwidth: one token of Llama-3.1-70B's activations (8192 × 2 B,
// 16 KiB) to 2,048 tokens (32 MiB), the sizes a serving step all-reduces.
const (
	pcieLatencyMaxBytes = 4096
	pcieBWMinBytes      = 16384
	pcieBWMaxBytes      = 32 << 20
)

// fitPCIeAllReduce fits the step model's PCIe all-reduce to the tables:
// latency(tp) = lat2 × (1 + (tp−2) × perGPU) by least squares through each
// table's median time of its smallest messages, then one ns per byte
// crossing a link, s, minimising the squared log error of latency(tp) +
// 2(tp−1)/tp × bytes × s over the 8-GPU tables' serving-sized messages. The
// 2- and 4-GPU tables time latency only: their large messages run at 2.2 to
// 3.9 GB/s of bus bandwidth, a link far narrower than the 8-GPU box's Gen4
// x16 slots (14.5 GB/s without P2P, 20.6 with), which is what the PCIe
// presets are.
func fitPCIeAllReduce(tabs []ncclTable) (lat2, perGPU, s, rmsLog float64, lats map[string]float64) {
	lats = map[string]float64{}
	var xs, ys []float64
	for _, tab := range tabs {
		var small []float64
		for i, b := range tab.bytes {
			if b <= pcieLatencyMaxBytes {
				small = append(small, tab.ns[i])
			}
		}
		slices.Sort(small)
		med := small[len(small)/2]
		if len(small)%2 == 0 {
			med = (small[len(small)/2-1] + small[len(small)/2]) / 2
		}
		lats[tab.name] = med
		xs = append(xs, float64(tab.gpus-2))
		ys = append(ys, med)
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	slope := sxy / sxx
	lat2 = my - slope*mx
	perGPU = slope / lat2

	type row struct{ lat, ring, bytes, ns float64 }
	var rows []row
	for _, tab := range tabs {
		if tab.gpus != 8 {
			continue
		}
		n := float64(tab.gpus)
		for i, b := range tab.bytes {
			if b >= pcieBWMinBytes && b <= pcieBWMaxBytes {
				rows = append(rows, row{lat2 + (n-2)*slope, 2 * (n - 1) / n, b, tab.ns[i]})
			}
		}
	}
	obj := func(logS float64) float64 {
		sv := math.Exp(logS)
		var sum float64
		for _, r := range rows {
			sum += math.Pow(math.Log((r.lat+r.ring*r.bytes*sv)/r.ns), 2)
		}
		return sum
	}
	// Golden-section search on log s: one minimum (each term is convex in s
	// around its own root, and the sum is unimodal over the bracket).
	a, b := math.Log(1e-4), math.Log(10)
	g := (math.Sqrt(5) - 1) / 2
	for range 200 {
		c, d := b-g*(b-a), a+g*(b-a)
		if obj(c) < obj(d) {
			b = d
		} else {
			a = c
		}
	}
	s = math.Exp((a + b) / 2)
	return lat2, perGPU, s, math.Sqrt(obj(math.Log(s)) / float64(len(rows))), lats
}

// TestAllReducePCIeFromNCCLTests: the prior's all_reduce_pcie.latency_ns
// (to the µs), AllReducePCIeLatencyPerGPU (to 3 decimals) and
// all_reduce_pcie.bw_eff (to 2 decimals, of a PCIe Gen4 x16 preset's
// one-way link) are the fit of the committed nccl-tests tables. Changing a
// constant, the prior or a table without redoing the others fails here.
func TestAllReducePCIeFromNCCLTests(t *testing.T) {
	tabs := readNCCLTables(t)
	lat2, perGPU, s, rms, lats := fitPCIeAllReduce(tabs)
	for _, tab := range tabs {
		t.Logf("%s: %d GPUs, %.2f µs up to %d B", tab.name, tab.gpus, lats[tab.name]/1e3, pcieLatencyMaxBytes)
	}
	g4090, err := model.LookupGPU("rtx4090-24g") // the tables' GPU: PCIe Gen4 x16, 32 GB/s each way
	if err != nil {
		t.Fatal(err)
	}
	link := g4090.LinkBandwidth
	t.Logf("fit: %.0f ns at TP 2, %.3f of it a further GPU; %.2f GB/s crossing a link (%.3f of %.0f GB/s); rms log error %.3f",
		lat2, perGPU, 1/s, 1/(s*link/1e9), link/1e9, rms)
	j := PriorJoint()
	if got, want := j.AllReducePCIe.LatencyNs, int64(math.Round(lat2/1000))*1000; got != want {
		t.Errorf("prior.yaml all_reduce_pcie.latency_ns = %d, want %d (the tables' TP 2 latency %.0f ns)", got, want, lat2)
	}
	if got, want := AllReducePCIeLatencyPerGPU, math.Round(perGPU*1000)/1000; got != want {
		t.Errorf("AllReducePCIeLatencyPerGPU = %v, want %v", got, want)
	}
	if got, want := j.AllReducePCIe.BWEff, math.Round(100/(s*link/1e9))/100; got != want {
		t.Errorf("prior.yaml all_reduce_pcie.bw_eff = %v, want %v (%.2f GB/s of a %.0f GB/s link)", got, want, 1/s, link/1e9)
	}
	if rms > 0.3 {
		t.Errorf("the form fits the 8-GPU tables with rms log error %.3f: not the 0.27 the comments quote", rms)
	}
	// Every PCIe preset of the tables' generation has their link.
	for _, name := range []string{"l40s-48g", "a10g-24g", "rtx-a6000-48g", "rtx4090-24g"} {
		if g, err := model.LookupGPU(name); err != nil || g.LinkBandwidth != link {
			t.Errorf("%s: link %g B/s, the tables' Gen4 x16 is %g", name, g.LinkBandwidth, link)
		}
	}
	text := string(PriorYAML())
	if !strings.Contains(text, "blog.chlc.cc") || !strings.Contains(text, "kalavai-net/kalavai-client") {
		t.Errorf("prior.yaml's comments do not cite the nccl-tests tables")
	}
}

// TestAllReducePCIeLatencyScale: over PCIe the fixed cost of a call grows
// by AllReducePCIeLatencyPerGPU of the TP 2 cost with each further GPU,
// and the step model charges it (the same call at TP 8 costs 1 + 6 ×
// AllReducePCIeLatencyPerGPU of TP 2's); over NVLink the scale is
// AllReduceLatencyScale's.
func TestAllReducePCIeLatencyScale(t *testing.T) {
	for _, c := range []struct {
		tp   int
		want float64
	}{{1, 1}, {2, 1}, {3, 1 + AllReducePCIeLatencyPerGPU}, {4, 1 + 2*AllReducePCIeLatencyPerGPU}, {8, 1 + 6*AllReducePCIeLatencyPerGPU}} {
		if got := AllReducePCIeLatencyScale(c.tp); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("AllReducePCIeLatencyScale(%d) = %v, want %v", c.tp, got, c.want)
		}
	}
	for _, link := range []float64{1e11, PCIeLinkBytesPerS} {
		p := toyProfile()
		p.Peak.LinkBytesPerS = link
		fixed := func(tp int) float64 {
			s := toyShape()
			s.TP = tp
			return p.Compile(s).arFixedNs
		}
		scale := AllReducePCIeLatencyScale
		if link > PCIeLinkBytesPerS {
			scale = AllReduceLatencyScale
		}
		for _, tp := range []int{2, 4, 8} {
			// toyShape: 2 layers, 2 calls each.
			if got, want := fixed(tp), 4*float64(p.AllReduce.LatencyNs)*scale(tp); !near(got, want) {
				t.Errorf("link %g B/s, TP %d: fixed all-reduce %v ns a step, want %v", link, tp, got, want)
			}
		}
	}
}
