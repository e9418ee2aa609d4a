package exporter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// seriesCases are samples of every kind, with the series each exports.
var seriesCases = []struct {
	name   string
	sample Sample
	series int
}{
	{"memory", Sample{Labels: Labels{Instance: "m"}, Memory: &Memory{}}, 13},
	{"block pool", Sample{Labels: Labels{Instance: "k"}, KV: &KV{}}, 6},
	{"engine, usage only", Sample{Labels: Labels{Instance: "e1"}, Engine: &EngineKV{Usage: 0.5}}, 1},
	{"engine, blocks", Sample{Labels: Labels{Instance: "e2"}, Engine: &EngineKV{HasBlocks: true}}, 3},
	{"engine, preemptions", Sample{Labels: Labels{Instance: "e3"}, Engine: &EngineKV{HasPreemptions: true}}, 2},
	{"engine, prefix", Sample{Labels: Labels{Instance: "e4"}, Engine: &EngineKV{HasPrefix: true}}, 3},
	{"engine, everything", Sample{Labels: Labels{Instance: "e5"},
		Engine: &EngineKV{HasBlocks: true, HasPreemptions: true, HasPrefix: true}}, 6},
	{"gpu, no process", Sample{GPU: &GPUDevice{Index: 0}}, 4},
	{"gpu, two processes", Sample{GPU: &GPUDevice{Index: 1, Processes: []GPUProcess{{PID: 1}, {PID: 2}}}}, 6},
	{"cluster", Sample{Labels: Labels{Cluster: "c"}, Cluster: &ClusterState{}}, 6},
	{"memory and block pool", Sample{Labels: Labels{Instance: "mk"}, Memory: &Memory{}, KV: &KV{}}, 19},
	{"nothing", Sample{Labels: Labels{Instance: "n"}}, 0},
}

// TestCountSeries: the count --max-series is checked against is the
// number of series the Collector exports, for every kind of sample (an
// engine exports only the figures it publishes).
func TestCountSeries(t *testing.T) {
	var all []Sample
	total := 0
	for _, tc := range seriesCases {
		one := []Sample{tc.sample}
		if got := countSeries(one); got != tc.series {
			t.Errorf("%s: countSeries = %d, want %d", tc.name, got, tc.series)
		}
		if got := len(buildMetrics(one, 0)); got != tc.series {
			t.Errorf("%s: %d metrics built, want %d", tc.name, got, tc.series)
		}
		c, err := New(nil, FuncSource{SourceName: "s", Fn: func() ([]Sample, error) { return one, nil }})
		if err != nil {
			t.Fatal(err)
		}
		if got := testutil.CollectAndCount(c) - 1; got != tc.series { // less gpufrag_source_up
			t.Errorf("%s: the Collector exports %d series, want %d", tc.name, got, tc.series)
		}
		all = append(all, tc.sample)
		total += tc.series
	}
	if got := countSeries(all); got != total {
		t.Errorf("all samples: countSeries = %d, want %d", got, total)
	}
}

// TestMaxSeriesExact: the cap admits a source with exactly as many series
// as it allows, and refuses one more; engine samples count the series
// they export, not the six the KV families could hold.
func TestMaxSeriesExact(t *testing.T) {
	engines := func(name string, n int) Source {
		return FuncSource{SourceName: name, Fn: func() ([]Sample, error) {
			var out []Sample
			for i := range n {
				out = append(out, Sample{Labels: Labels{Instance: fmt.Sprint(name, i), Pool: "engine"},
					Engine: &EngineKV{Usage: 0.5, HasPreemptions: true}})
			}
			return out, nil
		}}
	}
	for _, tc := range []struct {
		max  int
		want string
	}{
		{2 * 3, "1"},   // 3 engines × 2 series: exactly the cap
		{2*3 - 1, "0"}, // one short
		{6*3 - 1, "1"}, // the old upper bound (6 per engine, 18) refused this
		{0, "1"},       // no cap
	} {
		reg := prometheus.NewPedanticRegistry()
		if _, err := NewWithOptions(reg, Options{MaxSeries: tc.max}, engines("e", 3)); err != nil {
			t.Fatal(err)
		}
		expect := "# HELP gpufrag_source_up 1 if the source's last collection succeeded, 0 if it failed.\n" +
			"# TYPE gpufrag_source_up gauge\ngpufrag_source_up{source=\"e\"} " + tc.want + "\n"
		if err := testutil.GatherAndCompare(reg, strings.NewReader(expect), "gpufrag_source_up"); err != nil {
			t.Errorf("MaxSeries %d: %v", tc.max, err)
		}
	}
}
