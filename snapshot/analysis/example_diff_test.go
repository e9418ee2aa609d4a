package analysis_test

import (
	"fmt"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// Which code holds a snapshot's memory, and what changed when one more
// segment was allocated from a call site.
func ExampleDiffReports() {
	before := snap(nil, stackSeg(segA,
		snapshot.Block{Size: 4 << 20, RequestedSize: 3 << 20, Frames: at("model.py", 10, "attn")},
		snapshot.Block{Size: 16 << 20, State: snapshot.StateInactive}))
	after := snap(nil, before.Segments[0], stackSeg(segB,
		snapshot.Block{Size: 8 << 20, RequestedSize: 8 << 20, Frames: at("cache.py", 5, "grow")},
		snapshot.Block{Size: 12 << 20, State: snapshot.StateInactive}))
	a, err := analysis.Analyze(before, analysis.Options{NoReplay: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := analysis.Analyze(after, analysis.Options{NoReplay: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range b.Devices[0].Attribution.Sites {
		fmt.Printf("%s: %d MiB allocated, %d MiB stranded\n", s.Site, s.Allocated>>20, s.Stranded>>20)
	}
	d := analysis.DiffReports(a, b, analysis.DiffOptions{}).Devices[0]
	fmt.Printf("%d segment appeared; %s moved by %+d MiB\n", d.AppearedCount, d.Sites[0].Site, d.Sites[0].HeldDelta()>>20)
	// Output:
	// cache.py:5 grow: 8 MiB allocated, 12 MiB stranded
	// model.py:10 attn: 4 MiB allocated, 16 MiB stranded
	// 1 segment appeared; cache.py:5 grow moved by +20 MiB
}
