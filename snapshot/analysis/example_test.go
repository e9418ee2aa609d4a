package analysis_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// Analyze a snapshot file: its memory classes, how well the caching model
// replays its trace, and the recommended allocator setting.
func ExampleAnalyze() {
	f, err := os.Open(filepath.Join("..", "testdata", "replay.pickle"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	s, err := snapshot.Read(f, "replay.pickle")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := analysis.Analyze(s, analysis.Options{WhatIf: []string{"caching:expandable_segments:True"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	d := r.Devices[0]
	fmt.Printf("reserved %d MiB, allocated %d MiB, health %.2f\n", d.Classes.Reserved>>20, d.Classes.Allocated>>20, d.Metrics.Health)
	fmt.Printf("replay: %d of %d alloc addresses, %d of %d segment sizes\n",
		d.Replay.AddressMatches, d.Replay.Allocs, d.Replay.SegmentSizeMatches, d.Replay.SegmentAllocs)
	fmt.Println(d.WhatIf.Recommendation)
	// Output:
	// reserved 34 MiB, allocated 32 MiB, health 1.00
	// replay: 7 of 7 alloc addresses, 3 of 3 segment sizes
	// PYTORCH_ALLOC_CONF=
}
