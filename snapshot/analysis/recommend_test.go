package analysis

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/optrace"
	"github.com/gpufrag/gpufrag/snapshot"
)

// snapshotEntry shortens test tables.
type snapshotEntry = snapshot.TraceEntry

func TestRecommend(t *testing.T) {
	const g = mem.GiB
	rec := Alternative{Settings: "caching", Recorded: true, PeakReserved: 10 * g, OOMs: 2, PeakFragRate: 0.5}
	tests := []struct {
		name   string
		alts   []Alternative
		line   string
		reason string // a substring
	}{
		{"an alternative avoids the OOMs", []Alternative{rec,
			{Settings: "caching:max_split_size_mb:128", PeakReserved: 11 * g, OOMs: 0},
			{Settings: "caching:expandable_segments:True", PeakReserved: 9 * g, OOMs: 1}},
			"PYTORCH_ALLOC_CONF=max_split_size_mb:128", "avoids 2 of the 2"},
		{"same OOMs, 10% less memory", []Alternative{rec,
			{Settings: "caching:expandable_segments:True", PeakReserved: 9 * g, OOMs: 2, PeakFragRate: 0.1}},
			"PYTORCH_ALLOC_CONF=expandable_segments:True", "10% less"},
		{"0.5% less is noise: keep", []Alternative{rec,
			{Settings: "caching:expandable_segments:True", PeakReserved: 10*g - 50*mem.MiB, OOMs: 2}},
			"PYTORCH_ALLOC_CONF=", "keep the recorded settings"},
		{"only gpufrag allocators do better: keep", []Alternative{rec,
			{Settings: "vmm", PeakReserved: 5 * g, OOMs: 0}},
			"PYTORCH_ALLOC_CONF=", "no alternative that PYTORCH_ALLOC_CONF can select"},
		{"cudaMallocAsync when it is clearly best", []Alternative{rec,
			{Settings: "async", PeakReserved: 8 * g, OOMs: 0},
			{Settings: "caching:expandable_segments:True", PeakReserved: 9 * g, OOMs: 0}},
			"PYTORCH_ALLOC_CONF=backend:cudaMallocAsync", "avoids 2"},
		{"a caching setting within 1% beats switching the backend", []Alternative{rec,
			{Settings: "async", PeakReserved: 8 * g, OOMs: 0},
			{Settings: "caching:expandable_segments:True", PeakReserved: 8*g + 10*mem.MiB, OOMs: 0}},
			"PYTORCH_ALLOC_CONF=expandable_segments:True", "avoids 2"},
		{"an alternative without private pools says it pooled their requests", []Alternative{rec,
			{Settings: "async", PeakReserved: 8 * g, OOMs: 0, UnroutedPrivate: 7}},
			"PYTORCH_ALLOC_CONF=backend:cudaMallocAsync", "served the 7 requests of private pools (CUDA graphs, MemPool) from its default pools"},
		{"garbage collection says what it needs", []Alternative{rec,
			{Settings: "caching:garbage_collection_threshold:0.8,per_process_memory_fraction:1.0", PeakReserved: 9 * g, OOMs: 0}},
			"PYTORCH_ALLOC_CONF=garbage_collection_threshold:0.8,per_process_memory_fraction:1.0", "set_per_process_memory_fraction"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line, reason := recommend(tc.alts)
			if line != tc.line || !strings.Contains(reason, tc.reason) {
				t.Errorf("got %q because %q\nwant %q because …%s…", line, reason, tc.line, tc.reason)
			}
		})
	}
}

// buildOps must give optrace a valid trace whatever the recorded events:
// lost frees, frees of unknown addresses, huge stream handles.
func TestBuildOps(t *testing.T) {
	pre := preTrace{}
	trace := []struct {
		action string
		addr   uint64
		size   int64
		stream int64
	}{
		{"alloc", 0x1000, 512, 93824992235296},
		{"alloc", 0x1000, 512, 0}, // the free of the first was lost
		{"free_completed", 0x2000, 512, 0},
		{"free_completed", 0x1000, 512, 0},
		{"segment_free", 0x1000, 2 * mem.MiB, 0},
		{"segment_free", 0x3000, 2 * mem.MiB, 0},
		{"alloc", 0x1000, 0, 0},
	}
	var tr []snapshotEntry
	for _, e := range trace {
		tr = append(tr, snapshotEntry{Action: e.action, Addr: e.addr, Size: e.size, Stream: e.stream})
	}
	ops := buildOps(snapshot.TraceOf(tr), pre, nil, false)
	var kinds []string
	for _, op := range ops {
		kinds = append(kinds, op.Kind.String()+":"+op.ID)
	}
	// An id is reused once its allocation is freed.
	if got, want := strings.Join(kinds, " "), "alloc:a0 free:a0 alloc:a0 free:a0 empty_cache:"; got != want {
		t.Errorf("ops %q, want %q", got, want)
	}
	if ops[0].Stream != 1 || ops[2].Stream != 0 {
		t.Errorf("streams %d %d, want 1 0", ops[0].Stream, ops[2].Stream)
	}
	if err := optrace.Validate(ops, "ops"); err != nil {
		t.Error(err)
	}
	// Consumed, the trace gives the same ops and is empty afterwards.
	packed := snapshot.TraceOf(tr)
	if got := buildOps(packed, pre, nil, true); !reflect.DeepEqual(got, ops) || packed.Len() != 0 {
		t.Errorf("consumed: ops %v (want %v), %d entries left", got, ops, packed.Len())
	}
}

// TestAlternativeConf: what PYTORCH_CUDA_ALLOC_CONF selects each default
// alternative (alloc/registry's PyTorchConf), and which are settings of the
// caching allocator itself.
func TestAlternativeConf(t *testing.T) {
	for _, s := range DefaultWhatIf {
		a := Alternative{Settings: s}
		conf, ok := a.conf()
		name, args, _ := strings.Cut(s, ":")
		switch name {
		case "caching":
			if !ok || conf != args || !a.native() {
				t.Errorf("%s: conf %q, %v, native %v; want its arguments, native", s, conf, ok, a.native())
			}
		case "async":
			if !ok || conf != "backend:cudaMallocAsync" || a.native() {
				t.Errorf("%s: conf %q, %v, native %v; want the backend switch", s, conf, ok, a.native())
			}
		default:
			if ok || a.native() {
				t.Errorf("%s: conf %q, %v, native %v; PyTorch cannot select it", s, conf, ok, a.native())
			}
		}
	}
	a := Alternative{Settings: "async:release_threshold:1GiB"}
	if conf, ok := a.conf(); !ok || conf != "backend:cudaMallocAsync" {
		t.Errorf("async with arguments: %q, %v", conf, ok)
	}
}
