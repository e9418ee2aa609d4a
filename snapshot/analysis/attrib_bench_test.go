package analysis_test

import (
	"fmt"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// attribSnapshot is a snapshot of many blocks with deep stacks: segs
// segments of four blocks (three live), 200 distinct stacks of 60 frames
// (native, torch, library and user frames interleaved, as real stacks
// are). With shared, blocks of one stack share one frames list (the
// decoder hands out one []Frame per list a pickle shares); without, each
// block has its own list of the same frames, as PyTorch writes them: one
// list per captured traceback, that is per allocation, its frame dicts
// shared (the shared kkaitlyn111 snapshot: 903 live blocks with stacks,
// 903 lists, 34 distinct stacks).
func attribSnapshot(segs int, shared bool) *snapshot.Snapshot {
	stacks := make([][]snapshot.Frame, 200)
	for i := range stacks {
		for j := range 60 {
			switch j % 4 {
			case 0:
				stacks[i] = append(stacks[i], snapshot.Frame{Filename: "??", Name: fmt.Sprintf("c10::fn%d", j)})
			case 1:
				stacks[i] = append(stacks[i], snapshot.Frame{Filename: "/v/lib/python3.12/site-packages/torch/nn/modules/module.py", Line: int64(1700 + j), Name: "_call_impl"})
			case 2:
				stacks[i] = append(stacks[i], snapshot.Frame{Filename: "/v/lib/python3.12/site-packages/vllm/layer.py", Line: int64(i), Name: "forward"})
			default:
				stacks[i] = append(stacks[i], snapshot.Frame{Filename: "/srv/app/model.py", Line: int64(i*60 + j), Name: "step"})
			}
		}
	}
	s := &snapshot.Snapshot{Format: snapshot.FormatModern}
	addr := uint64(0x7f0000000000)
	list := func(k int) []snapshot.Frame {
		if shared {
			return stacks[k]
		}
		return append([]snapshot.Frame(nil), stacks[k]...)
	}
	for i := range segs {
		seg := stackSeg(addr,
			snapshot.Block{Size: 1 << 20, RequestedSize: 1<<20 - 100, Frames: list(i % 200)},
			snapshot.Block{Size: 2 << 20, RequestedSize: 2 << 20, Frames: list((i * 7) % 200)},
			snapshot.Block{Size: 1 << 20, State: snapshot.StateInactive},
			snapshot.Block{Size: 4 << 20, RequestedSize: 4<<20 - 512, Frames: list((i * 13) % 200)})
		s.Segments = append(s.Segments, seg)
		addr += 16 << 20
	}
	return s
}

// BenchmarkAnalyzeAttribution: the diagnosis (with the attribution) of
// 20,000 segments, 60,000 live blocks with 60-frame stacks, their frames
// lists shared among blocks (full=...) or one per block as PyTorch writes
// them (full=.../lists=per-block).
//
//	go test ./snapshot/analysis -run '^$' -bench AnalyzeAttribution -benchmem -count 6
func BenchmarkAnalyzeAttribution(b *testing.B) {
	for _, c := range []struct {
		full   bool
		shared bool
	}{{false, true}, {true, true}, {false, false}, {true, false}} {
		name := fmt.Sprintf("full=%v", c.full)
		if !c.shared {
			name += "/lists=per-block"
		}
		b.Run(name, func(b *testing.B) {
			s := attribSnapshot(20000, c.shared)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := analysis.Analyze(s, analysis.Options{NoReplay: true, FullStacks: c.full}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAnalyzeAttributionDistinct: the diagnosis of 5,000 segments,
// 15,000 live blocks each of its own stack of 60 frames (the innermost
// user frame's line differs), one frames list per block: a snapshot whose
// stacks are nearly all distinct, as long-lived tensors allocated from many
// places leave.
//
//	go test ./snapshot/analysis -run '^$' -bench AnalyzeAttributionDistinct -benchmem -count 6
func BenchmarkAnalyzeAttributionDistinct(b *testing.B) {
	base := attribSnapshot(1, true).Segments[0].Blocks[0].Frames
	s := &snapshot.Snapshot{Format: snapshot.FormatModern}
	addr := uint64(0x7f0000000000)
	n := 0
	stack := func() []snapshot.Frame {
		f := append([]snapshot.Frame(nil), base...)
		f[3].Line = int64(100000 + n) // the first user frame: the call site
		n++
		return f
	}
	for range 5000 {
		s.Segments = append(s.Segments, stackSeg(addr,
			snapshot.Block{Size: 1 << 20, RequestedSize: 1<<20 - 100, Frames: stack()},
			snapshot.Block{Size: 2 << 20, RequestedSize: 2 << 20, Frames: stack()},
			snapshot.Block{Size: 1 << 20, State: snapshot.StateInactive},
			snapshot.Block{Size: 4 << 20, RequestedSize: 4<<20 - 512, Frames: stack()}))
		addr += 16 << 20
	}
	for _, full := range []bool{false, true} {
		b.Run(fmt.Sprintf("full=%v", full), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := analysis.Analyze(s, analysis.Options{NoReplay: true, FullStacks: full}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
