package snapshot_test

import (
	"fmt"
	"os"

	"github.com/gpufrag/gpufrag/snapshot"
)

// Read a snapshot written by torch.cuda.memory._dump_snapshot() and look at
// device 0 as a gpufrag layout.
func ExampleRead() {
	f, err := os.Open("testdata/modern_p4.pickle")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	s, err := snapshot.Read(f, "modern_p4.pickle")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Format, len(s.Segments), "segments,", len(s.DeviceTraces[0]), "events on device 0")
	ms, _ := s.AllocatorSettings.MaxSplitSize()
	fmt.Println("max_split_size:", ms)
	l := s.Layout(0, 100<<20)
	c := l.Classes()
	fmt.Println("reserved:", c.Reserved(), "allocated:", c.Allocated(), "requested:", c.Live)
	// Output:
	// modern 3 segments, 5 events on device 0
	// max_split_size: 134217728
	// reserved: 23068672 allocated: 12584448 requested: 12584112
}
