package analysis_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

func TestClassifyFrame(t *testing.T) {
	for _, tc := range []struct {
		file string
		line int64
		want analysis.FrameKind
	}{
		{"??", 0, analysis.FrameNative},
		{"CUDACachingAllocator.cpp", 0, analysis.FrameNative},
		{"", 0, analysis.FrameNative},
		{"model.py", 0, analysis.FrameNative}, // no line: not a source line
		{"<frozen importlib._bootstrap>", 241, analysis.FrameFramework},
		{"<string>", 1, analysis.FrameFramework},
		{"/venv/lib/python3.13/site-packages/torch/nn/modules/module.py", 1750, analysis.FrameFramework},
		{"/opt/pytorch/torch/functional.py", 407, analysis.FrameFramework},
		{"torch/_tensor.py", 5, analysis.FrameFramework},
		{`C:\Python311\Lib\site-packages\torch\functional.py`, 3, analysis.FrameFramework},
		{"/usr/lib/python3.11/threading.py", 1016, analysis.FrameFramework},
		{"/usr/local/lib/python3.13t/runpy.py", 88, analysis.FrameFramework},
		{"/venv/lib/python3.13/site-packages/einops/einops.py", 916, analysis.FrameLibrary},
		{"/usr/lib/python3/dist-packages/vllm/worker/model_runner.py", 12, analysis.FrameLibrary},
		{"/venv/lib/python3.13/site-packages/torchvision/ops.py", 3, analysis.FrameLibrary}, // not torch/
		{"/home/u/assignment1/transformer.py", 22, analysis.FrameUser},
		{"model.py", 10, analysis.FrameUser},
		{"/home/u/lib/python_tools/x.py", 1, analysis.FrameUser}, // lib/python_tools is no Python version
	} {
		if got := analysis.ClassifyFrame(snapshot.Frame{Filename: tc.file, Line: tc.line}); got != tc.want {
			t.Errorf("ClassifyFrame(%q:%d) = %s, want %s", tc.file, tc.line, got, tc.want)
		}
	}
}

// The frames of a real block (kkaitlyn111's snapshot, shortened): C++
// frames, PyTorch's Python, a library (einops), the user's model, the
// interpreter, the user's script.
var realStack = []snapshot.Frame{
	{Filename: "??", Name: "torch::unwind::unwind()"},
	{Filename: "CUDACachingAllocator.cpp", Name: "malloc"},
	{Filename: "/venv/lib/python3.13/site-packages/torch/functional.py", Line: 407, Name: "einsum"},
	{Filename: "??", Name: "_PyEval_EvalFrameDefault"},
	{Filename: "/venv/lib/python3.13/site-packages/einops/_backends.py", Line: 288, Name: "einsum"},
	{Filename: "/venv/lib/python3.13/site-packages/einops/einops.py", Line: 916, Name: "einsum"},
	{Filename: "/home/u/transformer.py", Line: 22, Name: "forward"},
	{Filename: "/venv/lib/python3.13/site-packages/torch/nn/modules/module.py", Line: 1750, Name: "_call_impl"},
	{Filename: "/home/u/transformer.py", Line: 298, Name: "forward"},
	{Filename: "??", Name: "Py_RunMain"},
	{Filename: "/home/u/benchmark.py", Line: 440, Name: "<module>"},
}

func TestSiteIndexAndCollapse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		frames   []snapshot.Frame
		site     int
		collapse []int // indexes into frames
	}{
		{"user code wins over libraries", realStack, 6, []int{6, 8, 10}},
		{"a server running from site-packages: the innermost library frame", realStack[:6], 4, []int{4, 5}},
		{"torch only: the innermost frame with a line", realStack[:4], 2, []int{2}},
		{"native only: the innermost frame", realStack[:2], 0, []int{0}},
		{"empty", nil, 0, nil},
	} {
		if got := analysis.SiteIndex(tc.frames); got != tc.site {
			t.Errorf("%s: SiteIndex = %d, want %d", tc.name, got, tc.site)
		}
		var want []snapshot.Frame
		for _, i := range tc.collapse {
			want = append(want, tc.frames[i])
		}
		if got := analysis.CollapseStack(tc.frames); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: CollapseStack = %v, want %v", tc.name, got, want)
		}
	}
}

// stackSeg is a segment of blocks with explicit stacks.
func stackSeg(addr uint64, blocks ...snapshot.Block) snapshot.Segment {
	s := snapshot.Segment{Address: addr, SegmentType: "large"}
	at := addr
	for _, b := range blocks {
		b.Address = at
		if b.State == "" {
			b.State = snapshot.StateAllocated
		}
		if b.State != snapshot.StateInactive {
			s.ActiveSize += b.Size
			s.RequestedSize += b.RequestedSize
			if b.State == snapshot.StateAllocated {
				s.AllocatedSize += b.Size
			}
		}
		s.Blocks = append(s.Blocks, b)
		s.TotalSize += b.Size
		at += uint64(b.Size)
	}
	return s
}

func at(file string, line int64, name string, callers ...snapshot.Frame) []snapshot.Frame {
	return append([]snapshot.Frame{{Filename: "??", Name: "c10::alloc"},
		{Filename: "/x/site-packages/torch/nn/functional.py", Line: 9, Name: "linear"},
		{Filename: file, Line: line, Name: name}}, callers...)
}

func TestAttribution(t *testing.T) {
	mainA := snapshot.Frame{Filename: "serve.py", Line: 5, Name: "main"}
	mainB := snapshot.Frame{Filename: "serve.py", Line: 7, Name: "main"}
	s := snap(nil,
		// 3 live blocks strand 7 bytes... in MiB: 12 MiB free among 4+2+2 MiB live.
		stackSeg(segA,
			snapshot.Block{Size: 4 * mib, RequestedSize: 3 * mib, Frames: at("model.py", 10, "attn", mainA)},
			snapshot.Block{Size: 12 * mib, State: snapshot.StateInactive},
			snapshot.Block{Size: 2 * mib, RequestedSize: 2 * mib, Frames: at("model.py", 10, "attn", mainB)},
			snapshot.Block{Size: 2 * mib, RequestedSize: 2*mib - 512, State: snapshot.StatePendingFree, Frames: at("model.py", 20, "mlp")}),
		// Fully live: nothing stranded.
		stackSeg(segB, snapshot.Block{Size: 20 * mib, RequestedSize: 20 * mib}),
		// Empty segment: releasable, charged to no one.
		stackSeg(segC, snapshot.Block{Size: 2 * mib, State: snapshot.StateInactive}),
	)
	d := analyze(t, s, analysis.Options{NoReplay: true})
	a := d.Attribution
	want := []analysis.SiteStat{
		{Site: analysis.NoStack, Blocks: 1, Segments: 1, Allocated: 20 * mib, Requested: 20 * mib},
		{Site: "model.py:10 attn", Blocks: 2, Segments: 1, Allocated: 6 * mib, Requested: 5 * mib, Rounding: mib, Stranded: 9 * mib},
		{Site: "model.py:20 mlp", Blocks: 1, Segments: 1, Allocated: 2 * mib, Requested: 2*mib - 512, Rounding: 512, Stranded: 3 * mib,
			Stack: []snapshot.Frame{{Filename: "model.py", Line: 20, Name: "mlp"}}},
	}
	if !reflect.DeepEqual(a.Sites, want) {
		t.Errorf("sites:\n got %+v\nwant %+v", a.Sites, want)
	}
	if len(a.Stacks) != 4 {
		t.Errorf("got %d stacks, want 4 (attn is reached from two lines of main)", len(a.Stacks))
	}
	checkAddsUp(t, d)

	full := analyze(t, s, analysis.Options{NoReplay: true, FullStacks: true}).Attribution
	if len(full.Sites) != 4 || len(full.Sites[1].Stack) != 4 {
		t.Errorf("full stacks: got %d rows (want 4), the second of %d frames (want 4)", len(full.Sites), len(full.Sites[1].Stack))
	}
	capped := analyze(t, s, analysis.Options{NoReplay: true, TopSites: 1}).Attribution
	if len(capped.Sites) != 1 || capped.Other.Site != "+2 more sites" || capped.Other.Allocated != 8*mib || capped.Other.Stranded != 12*mib {
		t.Errorf("capped at 1: rows %d, other %+v", len(capped.Sites), capped.Other)
	}
}

// checkAddsUp holds the attribution to the device's classes, exactly.
func checkAddsUp(t *testing.T, d analysis.Device) {
	t.Helper()
	a, c := d.Attribution, d.Classes
	var sum analysis.SiteStat
	for _, s := range a.Stacks {
		sum.Allocated += s.Allocated
		sum.Stranded += s.Stranded
		sum.Rounding += s.Rounding
		sum.Blocks += s.Blocks
	}
	for _, x := range []analysis.SiteStat{sum, a.Total} {
		if x.Allocated != c.Active || x.Stranded != c.Stranded || x.Rounding != c.InternalWaste {
			t.Errorf("attribution allocated %d stranded %d rounding %d; classes active %d stranded %d rounding %d",
				x.Allocated, x.Stranded, x.Rounding, c.Active, c.Stranded, c.InternalWaste)
		}
	}
}

// TestStrandedSharesExact: 1,034 free bytes over three blocks of equal
// size are 345, 345, 344 (the remainder to the lowest addresses), never
// 344 three times.
func TestStrandedSharesExact(t *testing.T) {
	s := snap(nil, stackSeg(segA,
		snapshot.Block{Size: 512, Frames: at("a.py", 1, "a")},
		snapshot.Block{Size: 512, Frames: at("b.py", 1, "b")},
		snapshot.Block{Size: 512, Frames: at("c.py", 1, "c")},
		snapshot.Block{Size: 1024 + 10, State: snapshot.StateInactive}))
	d := analyze(t, s, analysis.Options{NoReplay: true})
	got := map[string]int64{}
	for _, x := range d.Attribution.Sites {
		got[x.Site] = x.Stranded
	}
	if want := map[string]int64{"a.py:1 a": 345, "b.py:1 b": 345, "c.py:1 c": 344}; !reflect.DeepEqual(got, want) {
		t.Errorf("stranded shares %v, want %v", got, want)
	}
	checkAddsUp(t, d)
}

// TestProfileParses writes the profile, parses it back with pprof's own
// reader and checks every sample type's total against the attribution.
func TestProfileParses(t *testing.T) {
	s := snap(nil,
		stackSeg(segA,
			snapshot.Block{Size: 4 * mib, RequestedSize: 3 * mib, Frames: realStack},
			snapshot.Block{Size: 6 * mib, State: snapshot.StateInactive},
			snapshot.Block{Size: 2 * mib, RequestedSize: 2 * mib}),
		stackSeg(segB, snapshot.Block{Size: 8 * mib, RequestedSize: 8*mib - 4096, Frames: at("x.py", 3, "f;g\x1b")}))
	s.Segments[1].Device = 1
	r, err := analysis.Analyze(s, analysis.Options{NoReplay: true})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteProfile(&buf); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("profile.Parse: %v", err)
	}
	if p.DefaultSampleType != "allocated" || len(p.SampleType) != 4 {
		t.Fatalf("sample types %v, default %q", p.SampleType, p.DefaultSampleType)
	}
	totals := make([]int64, 4)
	for _, smp := range p.Sample {
		for i, v := range smp.Value {
			totals[i] += v
		}
	}
	var want []int64
	var blocks int
	var alloc, stranded, rounding int64
	for _, d := range r.Devices {
		blocks += d.Attribution.Total.Blocks
		alloc += d.Classes.Active
		stranded += d.Classes.Stranded
		rounding += d.Classes.InternalWaste
	}
	want = []int64{int64(blocks), alloc, stranded, rounding}
	if !reflect.DeepEqual(totals, want) || alloc != 14*mib || stranded != 6*mib {
		t.Errorf("profile totals %v, want %v", totals, want)
	}
	// The collapsed stack of realStack, leaf first, under a device root.
	var leaves []string
	for _, smp := range p.Sample {
		leaves = append(leaves, smp.Location[0].Line[0].Function.Name+"@"+smp.Location[len(smp.Location)-1].Line[0].Function.Name)
		if smp.Label["device"] == nil {
			t.Errorf("sample without a device label")
		}
	}
	if got := strings.Join(leaves, " "); got != "forward@cuda:0 (no stack recorded)@cuda:0 f;g\\x1b@cuda:1" {
		t.Errorf("samples (leaf@root): %s", got)
	}

	var folded bytes.Buffer
	if err := r.WriteFolded(&folded, "stranded"); err != nil {
		t.Fatal(err)
	}
	wantFolded := "cuda:0;<module> (/home/u/benchmark.py:440);forward (/home/u/transformer.py:298);forward (/home/u/transformer.py:22) 4194304\n" +
		"cuda:0;(no stack recorded) 2097152\n"
	if folded.String() != wantFolded {
		t.Errorf("folded:\n%s\nwant:\n%s", folded.String(), wantFolded)
	}
	folded.Reset()
	if err := r.WriteFolded(&folded, "rounding"); err != nil || !strings.Contains(folded.String(), "f:g\\x1b (x.py:3) 4096") {
		t.Errorf("folded rounding (err %v):\n%s", err, folded.String())
	}
	if err := r.WriteFolded(&folded, "bogus"); !errors.Is(err, analysis.ErrProfileValue) {
		t.Errorf("WriteFolded(bogus) = %v, want ErrProfileValue", err)
	}
}
