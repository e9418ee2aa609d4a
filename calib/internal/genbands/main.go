// Command genbands rewrites, from the residuals calib embeds
// (calib/residuals.yaml, written by go run ./calib/cmd/refit), the table of
// error bands in docs/calibrate.md ("Error bands") and calib's band points
// as a Go literal (calib.BandPointsPath, which the commands read instead of
// decoding the YAML). go generate runs it in calib/:
//
//	go generate ./calib
//
// calib's TestBandsDoc and TestBandPointsCurrent fail when either is stale.
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
	points := flag.String("points", calib.BandPointsPath, "the Go file of band points to write (the default is seen from calib/)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: genbands [-doc FILE] [-points FILE]")
		os.Exit(2)
	}
	err := run(*doc)
	if err == nil {
		err = writePoints(*points)
	}
	if err != nil {
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

// writePoints writes calib's band points (calib.BandPointsSource of the
// embedded residuals) to path; a file that is current is left untouched.
func writePoints(path string) error {
	f, err := calib.EmbeddedResiduals()
	if err != nil {
		return err
	}
	src := calib.BandPointsSource(f)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, src) {
		return nil
	}
	return os.WriteFile(path, src, 0o644)
}
