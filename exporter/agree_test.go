package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// sizeSeries maps each byte series of a memory sample to the field of
// `gpufrag analyze --json` (a device of docs/json.md) that says the same;
// device free, which the JSON does not print, is capacity_bytes −
// reserved_bytes there (a snapshot records no other use).
var sizeSeries = map[*prometheus.Desc]string{
	reservedDesc:       "reserved_bytes",
	allocatedDesc:      "allocated_bytes",
	requestedDesc:      "requested_bytes",
	cachedFreeDesc:     "cached_free_bytes",
	largestFreeDesc:    "largest_free_block_bytes",
	maxAllocatableDesc: "max_allocatable_bytes",
	deviceFreeDesc:     "device_free_bytes",
}

// exportedSizes runs the exporter's snapshot path on data (a SnapshotDir
// over a directory holding it, with capacity; 0: none) and returns, per gpu
// label, the byte series it exports by analyze's field name.
func exportedSizes(t *testing.T, data []byte, capacity int64) map[string]map[string]float64 {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "i__m__x.pickle"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := NewSnapshotDir(SnapshotDirConfig{Dir: dir, Capacity: capacity})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	samples, err := d.Collect()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, sm := range samples {
		got := map[string]float64{}
		emit(func(desc *prometheus.Desc, _ prometheus.ValueType, v float64, _ ...string) {
			field, ok := sizeSeries[desc]
			if !ok && strings.Contains(desc.String(), `_bytes"`) {
				t.Errorf("%v: a byte series the comparison does not cover: add it to sizeSeries", desc)
			}
			if ok {
				got[field] = v
			}
		}, sm)
		out[sm.Labels.GPU] = got
	}
	return out
}

// analyzedSizes is `gpufrag analyze --json [--capacity C]` on data: its
// devices, by device index, as JSON fields.
func analyzedSizes(t *testing.T, data []byte, capacity int64) map[string]map[string]any {
	t.Helper()
	s, err := snapshot.ReadBytes(data, "x")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analysis.Analyze(s, analysis.Options{Capacity: capacity})
	if ce := (*analysis.CapacityError)(nil); errors.As(err, &ce) {
		// analyze refuses a capacity below the live blocks; the exporter
		// takes the device's capacity as unknown there.
		rep, err = analysis.Analyze(s, analysis.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep.Doc("x"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Devices []map[string]any `json:"devices"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, dv := range doc.Devices {
		out[strconv.Itoa(int(dv["device"].(float64)))] = dv
	}
	return out
}

// TestSizesAgreeWithAnalyze: on every test snapshot, without a capacity
// and with given ones, each byte series the exporter exports is the figure
// `gpufrag analyze --json` prints for the same file and capacity (one
// definition: analysis.Device.Sizes); device free and max allocatable are
// exported exactly when the capacity is given and holds what the device
// reserves, never as 0 for "unknown" (issue 29: 0 free bytes read as a
// full GPU, and max allocatable 1.9e9 where analyze said 8.76 GiB).
func TestSizesAgreeWithAnalyze(t *testing.T) {
	files := map[string]func(*testing.T) []byte{
		"examples/snapshot.pickle": func(t *testing.T) []byte { return fixture(t, "../examples/snapshot.pickle") },
	}
	names, err := filepath.Glob("../snapshot/testdata/*.pickle")
	if err != nil || len(names) == 0 {
		t.Fatalf("no snapshot/testdata/*.pickle (%v)", err)
	}
	for _, n := range names {
		files["snapshot/testdata/"+filepath.Base(n)] = func(t *testing.T) []byte { return fixture(t, n) }
	}
	for _, n := range []string{"Charran78__DocuBox__dump_snapshot.pickle", "Yiyi-philosophy__LLM-inference__oom_snapshot.pickle",
		"albi2__thesis-text-to-SQL__dump_snapshot.pickle", "kkaitlyn111__cs336-a2-systems__memory_files__memory_ctx128_forward.pickle"} {
		files["shared/"+n] = func(t *testing.T) []byte { return sharedFixture(t, n) }
	}
	for name, read := range files {
		t.Run(name, func(t *testing.T) {
			data := read(t)
			// 16 MiB: below what most of the files reserve (capacity then
			// not known); 80 GiB, the default analyze assumes; 141 GiB (H200).
			for _, capacity := range []int64{0, 16 * mem.MiB, 80 * mem.GiB, 141 * mem.GiB} {
				exp, ana := exportedSizes(t, data, capacity), analyzedSizes(t, data, capacity)
				if len(exp) == 0 {
					t.Fatalf("capacity %d: the exporter exports no device", capacity)
				}
				for gpu, got := range exp {
					dv, ok := ana[gpu]
					if !ok {
						t.Errorf("capacity %d: gpu %s exported, but analyze reports no device %s", capacity, gpu, gpu)
						continue
					}
					reserved := dv["reserved_bytes"].(float64)
					known := capacity > 0 && float64(capacity) >= reserved
					for _, field := range sizeSeries {
						v, exported := got[field]
						want, inJSON := dv[field].(float64)
						if field == "device_free_bytes" {
							want, inJSON = dv["capacity_bytes"].(float64)-reserved, true
						}
						capDependent := field == "device_free_bytes" || field == "max_allocatable_bytes"
						switch {
						case capDependent && !known && exported:
							t.Errorf("capacity %d (reserved %.0f): gpu %s exports %s %v; the capacity is unknown, so it must be absent",
								capacity, reserved, gpu, field, v)
						case capDependent && !known:
						case !exported:
							t.Errorf("capacity %d: gpu %s: %s not exported", capacity, gpu, field)
						case !inJSON:
							t.Errorf("capacity %d: analyze's JSON has no %s", capacity, field)
						case v != want:
							t.Errorf("capacity %d: gpu %s: exporter %s = %.0f, analyze says %.0f", capacity, gpu, field, v, want)
						}
					}
				}
				// Every device with memory in analyze's report is exported.
				for dev, dv := range ana {
					if _, ok := exp[dev]; !ok && dv["segments"].(float64) > 0 {
						t.Errorf("capacity %d: analyze reports device %s with segments; the exporter does not", capacity, dev)
					}
				}
			}
		})
	}
}

// TestScrapeUnknownCapacityIsAbsent: through /metrics, the README's
// examples/snapshot.pickle exports no gpufrag_device_free_bytes and no
// gpufrag_max_allocatable_bytes without a capacity (it was 0 and 1.9e9),
// and with --capacity 80GiB the max allocatable analyze reports with
// --capacity 80GiB (9,405,726,720 bytes, 8.76 GiB) and 80 GiB − reserved free.
func TestScrapeUnknownCapacityIsAbsent(t *testing.T) {
	data := fixture(t, "../examples/snapshot.pickle")
	want := analyzedSizes(t, data, 80*mem.GiB)["0"]
	for _, capacity := range []int64{0, 80 * mem.GiB} {
		d := newDaemon(t, SnapshotDirConfig{Capacity: capacity}, false)
		writeFile(t, filepath.Join(d.dir, "vllm-0__llama__rank0.pickle"), data, t0)
		d.rescan(t)
		fams := scrape(t, d.srv.url)
		lv := []string{"instance", "vllm-0", "model", "llama", "gpu", "0"}
		if _, ok := value(fams, "gpufrag_reserved_bytes", lv...); !ok {
			t.Fatalf("capacity %d: no gpufrag_reserved_bytes for the file", capacity)
		}
		free, hasFree := value(fams, "gpufrag_device_free_bytes", lv...)
		maxA, hasMax := value(fams, "gpufrag_max_allocatable_bytes", lv...)
		if capacity == 0 {
			if hasFree || hasMax {
				t.Errorf("no capacity: device_free %v (exported %v), max_allocatable %v (exported %v): want both absent",
					free, hasFree, maxA, hasMax)
			}
			continue
		}
		if !hasMax || maxA != want["max_allocatable_bytes"].(float64) {
			t.Errorf("capacity 80GiB: max_allocatable %v (exported %v), analyze says %v", maxA, hasMax, want["max_allocatable_bytes"])
		}
		if wantFree := float64(80*mem.GiB) - want["reserved_bytes"].(float64); !hasFree || free != wantFree {
			t.Errorf("capacity 80GiB: device_free %v (exported %v), want %v", free, hasFree, wantFree)
		}
	}
}
