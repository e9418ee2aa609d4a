// Command genbands rewrites the table of error bands in docs/calibrate.md
// ("Error bands") from the residuals calib embeds (calib/residuals.yaml,
// written by go run ./calib/cmd/refit). go generate runs it in calib/:
//
//	go generate ./calib
//
// calib's TestBandsDoc fails when the table is stale.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpufrag/gpufrag/calib"
)

func main() {
	doc := flag.String("doc", filepath.Join("..", calib.BandsDocPath), "the page to rewrite (the default is seen from calib/)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: genbands [-doc FILE]")
		os.Exit(2)
	}
	if err := run(*doc); err != nil {
		fmt.Fprintln(os.Stderr, "genbands:", err)
		os.Exit(1)
	}
}

// run rewrites path's table of bands; a page whose table is current is
// left untouched.
func run(path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc, err := calib.BandsDoc(old, path)
	if err != nil || bytes.Equal(doc, old) {
		return err
	}
	return os.WriteFile(path, doc, 0o644)
}
