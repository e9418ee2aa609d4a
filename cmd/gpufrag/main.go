// Command gpufrag models GPU memory allocators to study fragmentation in LLM
// inference. Run `gpufrag --help`; the commands live in cmd/gpufrag/internal/cli.
package main

import (
	"os"

	"github.com/gpufrag/gpufrag/cmd/gpufrag/internal/cli"
)

func main() {
	os.Exit(cli.MainProcess(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
