package optrace_test

import (
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/optrace"
)

func ExampleReplay() {
	ops, err := optrace.Read(strings.NewReader(`{"op":"alloc","id":"a","size":3000000}
{"op":"alloc","id":"b","size":1000000}
{"op":"free","id":"a"}
`), "ops.jsonl")
	if err != nil {
		panic(err)
	}
	// The direct allocator takes whole 2 MiB pages from the device for each
	// request and gives them back on free.
	a, err := registry.New("direct", mem.MustDevice(80*mem.GiB, 0))
	if err != nil {
		panic(err)
	}
	r, err := optrace.Replay(ops, a)
	if err != nil {
		panic(err)
	}
	fmt.Printf("peak %s after line %d, end %s\n",
		mem.FormatBytes(r.PeakReservedBytes), r.PeakLine, mem.FormatBytes(r.EndReservedBytes))
	// Output: peak 6MiB after line 2, end 2MiB
}

func ExampleRead_error() {
	_, err := optrace.Read(strings.NewReader(`{"op":"alloc","id":"a1","size":-5}`), "ops.jsonl")
	fmt.Println(err)
	// Output: ops.jsonl: line 1: field "size": must be a positive integer (got -5)
}
