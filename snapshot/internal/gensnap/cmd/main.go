// Command gensnap writes a synthetic PyTorch memory snapshot of an
// LLM-serving allocation pattern (package gensnap) for benchmarks:
//
//	go run ./snapshot/internal/gensnap/cmd -size 1GB -o /tmp/snap1g.pickle
//	go run ./snapshot/internal/gensnap/cmd -size 100MB -graphs -o /tmp/graphs.pickle
//
// -size takes a number of bytes with an optional KB, MB or GB suffix
// (powers of 1000).
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/snapshot/internal/gensnap"
)

func main() {
	size := flag.String("size", "10MB", "size of the pickle to write (bytes, or with a KB, MB or GB suffix)")
	out := flag.String("o", "", "output file (required)")
	seed := flag.Uint64("seed", 1, "seed of the batch sizes and stacks")
	oom := flag.Int("oom-every", 0, "record an oom entry every N serving steps (0: none)")
	graphs := flag.Bool("graphs", false, "capture a CUDA graph per decode bucket into a private pool first (segment_pool_id (1, 0))")
	pinned := flag.Int("pinned", 0, "long-lived tensors allocated before serving, a third freed again (many segments and live blocks)")
	sites := flag.Int("sites", 0, "distinct call sites (0: 400)")
	depth := flag.Int("depth", 0, fmt.Sprintf("most frames in a stack, at least %d (0: 20)", gensnap.MinDepth))
	frames := flag.Int("frames", 0, "distinct frames the stacks draw from (0: 3000)")
	leak := flag.Int("leak", 0, "tensors of -leak-size bytes kept after the last step, from one call site of their own ("+gensnap.LeakSite+")")
	leakSize := flag.Int64("leak-size", 1<<20, "bytes of each -leak tensor")
	flag.Parse()
	n, err := parseSize(*size)
	o := gensnap.Options{Bytes: n, Seed: *seed, OOMEvery: *oom, GraphPool: *graphs,
		Pinned: *pinned, Sites: *sites, Depth: *depth, Frames: *frames, Leak: *leak, LeakSize: *leakSize}
	if err == nil {
		err = o.Validate() // before -o is created
	}
	if err != nil || *out == "" || flag.NArg() > 0 {
		if err == nil {
			err = fmt.Errorf("-o is required and no arguments are taken")
		}
		fmt.Fprintln(os.Stderr, "gensnap:", strings.TrimPrefix(err.Error(), "gensnap: "))
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gensnap:", err)
		os.Exit(1)
	}
	st, err := gensnap.Write(f, o)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gensnap:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d bytes, %d segments, %d blocks, %d events (%d allocs, %d ooms), %d steps, %d frames, %d tracebacks\n",
		*out, st.Bytes, st.Segments, st.Blocks, st.Events, st.Allocs, st.OOMs, st.Steps, st.Frames, st.Tracebacks)
	if *graphs {
		fmt.Printf("graph pool: %d segments at the end, %d allocs; peak reserved %d bytes\n", st.PrivateSegments, st.PrivateAllocs, st.PeakReserved)
	}
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 || v*float64(mult) > 1<<44 {
		return 0, fmt.Errorf("-size %q: want a positive size such as 100MB", s)
	}
	return int64(v * float64(mult)), nil
}
