// Command genexample writes the example trace that `gpufrag replay` embeds
// (synth.Example, in the trace format of package optrace). It is run by
// go generate in cmd/gpufrag/internal/cli:
//
//	go generate ./cmd/gpufrag/internal/cli
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/gpufrag/gpufrag/optrace"
	"github.com/gpufrag/gpufrag/optrace/synth"
)

func main() {
	out := flag.String("o", "", "write the trace to this file (required)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: genexample -o FILE")
		os.Exit(2)
	}
	ops, err := synth.GenerateServing(synth.Example())
	if err == nil {
		var buf bytes.Buffer
		if err = optrace.Write(&buf, ops); err == nil {
			err = os.WriteFile(*out, buf.Bytes(), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genexample:", err)
		os.Exit(1)
	}
}
