package analysis_test

import (
	"fmt"
	"testing"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// attribSnapshot is a snapshot of many blocks with deep stacks, shared
// among blocks as PyTorch's pickles share frame lists (the decoder hands
// out one []Frame per shared list): segs segments of four blocks (three
// live), 200 distinct stacks of 60 frames (native, torch, library and user
// frames interleaved, as real stacks are).
func attribSnapshot(segs int) *snapshot.Snapshot {
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
	for i := range segs {
		seg := stackSeg(addr,
			snapshot.Block{Size: 1 << 20, RequestedSize: 1<<20 - 100, Frames: stacks[i%200]},
			snapshot.Block{Size: 2 << 20, RequestedSize: 2 << 20, Frames: stacks[(i*7)%200]},
			snapshot.Block{Size: 1 << 20, State: snapshot.StateInactive},
			snapshot.Block{Size: 4 << 20, RequestedSize: 4<<20 - 512, Frames: stacks[(i*13)%200]})
		s.Segments = append(s.Segments, seg)
		addr += 16 << 20
	}
	return s
}

// BenchmarkAnalyzeAttribution: the diagnosis (with the attribution) of
// 20,000 segments, 60,000 live blocks with 60-frame stacks.
//
//	go test ./snapshot/analysis -run '^$' -bench AnalyzeAttribution -benchmem -count 6
func BenchmarkAnalyzeAttribution(b *testing.B) {
	for _, full := range []bool{false, true} {
		b.Run(fmt.Sprintf("full=%v", full), func(b *testing.B) {
			s := attribSnapshot(20000)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := analysis.Analyze(s, analysis.Options{NoReplay: true, FullStacks: full}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
