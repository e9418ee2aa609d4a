package snapshot_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
)

// sharedDir holds the real snapshots of the development set, outside the
// repository (see its README.md and MANIFEST.json).
var sharedDir = filepath.Join("..", "..", "shared", "data", "snapshots")

type manifestEntry struct {
	Bytes                int64          `json:"bytes"`
	Format               string         `json:"format"`
	NSegments            int            `json:"n_segments"`
	NBlocks              int            `json:"n_blocks"`
	NExpandable          int            `json:"n_expandable_segments"`
	NAnnotations         int            `json:"n_external_annotations"`
	SumTotalSize         int64          `json:"sum_total_size"`
	SumAllocatedSize     int64          `json:"sum_allocated_size"`
	SumActiveSize        int64          `json:"sum_active_size"`
	SumRequestedSize     int64          `json:"sum_requested_size"`
	TraceEventsPerDevice []int          `json:"trace_events_per_device"`
	TraceActions         map[string]int `json:"trace_actions"`
	BlockStates          map[string]int `json:"block_states"`
	SegmentsByType       map[string]int `json:"segments_by_type"`
	AllocatorSettings    map[string]any `json:"allocator_settings"`
}

// sharedSnapshots returns the manifest of the shared real snapshots, or
// skips the test when the directory is absent (a checkout without ../shared).
func sharedSnapshots(t testing.TB) map[string]manifestEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sharedDir, "MANIFEST.json"))
	if os.IsNotExist(err) {
		t.Skipf("real snapshots not available: %s is absent (they live in the shared data set outside the repository)", sharedDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]manifestEntry
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSharedSnapshots(t *testing.T) {
	for file, want := range sharedSnapshots(t) {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(sharedDir, file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			s, err := snapshot.Read(f, file)
			if err != nil {
				t.Fatal(err)
			}
			var nBlocks, nExp int
			var total, allocated, active, requested int64
			states, types := map[string]int{}, map[string]int{}
			for _, seg := range s.Segments {
				nBlocks += len(seg.Blocks)
				total += seg.TotalSize
				allocated += seg.AllocatedSize
				active += seg.ActiveSize
				requested += seg.RequestedSize
				types[seg.SegmentType]++
				if seg.IsExpandable {
					nExp++
				}
				for _, b := range seg.Blocks {
					states[b.State]++
				}
			}
			check := func(name string, got, want any) {
				t.Helper()
				if got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
			check("n_segments", len(s.Segments), want.NSegments)
			check("n_blocks", nBlocks, want.NBlocks)
			check("n_expandable_segments", nExp, want.NExpandable)
			check("n_external_annotations", len(s.ExternalAnnotations), want.NAnnotations)
			check("sum_total_size", total, want.SumTotalSize)
			check("sum_allocated_size", allocated, want.SumAllocatedSize)
			check("sum_active_size", active, want.SumActiveSize)
			check("sum_requested_size", requested, want.SumRequestedSize)
			for k, n := range want.BlockStates {
				check("block_states["+k+"]", states[k], n)
			}
			for k, n := range want.SegmentsByType {
				check("segments_by_type["+k+"]", types[k], n)
			}
			check("len(device_traces)", len(s.DeviceTraces), len(want.TraceEventsPerDevice))
			actions := map[string]int{}
			for d, n := range want.TraceEventsPerDevice {
				if d < len(s.DeviceTraces) {
					check("len(device_traces[d])", len(s.DeviceTraces[d]), n)
					for _, e := range s.DeviceTraces[d] {
						actions[e.Action]++
					}
				}
			}
			for k, n := range want.TraceActions {
				check("trace_actions["+k+"]", actions[k], n)
			}
			switch want.Format {
			case "modern":
				check("format", s.Format, snapshot.FormatModern)
			case "legacy-history (<=2.0)":
				check("format", s.Format, snapshot.FormatLegacy)
			}
			if want.AllocatorSettings == nil {
				check("allocator_settings present", s.AllocatorSettings != nil, false)
			} else {
				conf, _ := s.AllocatorSettings.Conf()
				check("PYTORCH_CUDA_ALLOC_CONF", conf, want.AllocatorSettings["PYTORCH_CUDA_ALLOC_CONF"])
				ms, _ := s.AllocatorSettings.MaxSplitSize()
				check("max_split_size", float64(ms), want.AllocatorSettings["max_split_size"])
				exp, _ := s.AllocatorSettings.ExpandableSegments()
				check("expandable_segments", exp, want.AllocatorSettings["expandable_segments"])
				gc, _ := s.AllocatorSettings.GarbageCollectionThreshold()
				check("garbage_collection_threshold", gc, want.AllocatorSettings["garbage_collection_threshold"])
			}
			if err := checkInvariants(s); err != nil {
				t.Error(err)
			}
			l := s.Layout(0, 80<<30)
			if err := l.Check(); err != nil {
				t.Errorf("Layout: %v", err)
			}
			if c := l.Classes(); c.Reserved() != total || c.Allocated() != active {
				t.Errorf("layout reserved %d allocated %d, want %d and %d", c.Reserved(), c.Allocated(), total, active)
			}
		})
	}
}

// BenchmarkRead decodes and converts the largest shared snapshot.
//
//	go test ./snapshot -run '^$' -bench Read -benchmem
func BenchmarkRead(b *testing.B) {
	m := sharedSnapshots(b)
	var name string
	for f, e := range m {
		if name == "" || e.Bytes > m[name].Bytes {
			name = f
		}
	}
	data, err := os.ReadFile(filepath.Join(sharedDir, name))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := snapshot.ReadBytes(data, name); err != nil {
			b.Fatal(err)
		}
	}
}
