// Command refit regenerates the joint step-time model and everything
// judged with it (package calib/refit): run it from the repository root
// after changing calib/published.yaml, the prior sim/profiles/prior.yaml,
// the step-time model or the fit.
//
//	go run ./calib/cmd/refit [-loosen] [-parallel N] [-page] [-folds source:ID,gpu:NAME,sources,never-seen,...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/calib/refit"
)

func main() {
	loosen := flag.Bool("loosen", false, "record a leave-one-source-out median above the ratchet of docs/fidelity.md (say why in the commit)")
	parallel := flag.Int("parallel", 0, "simulations at once (0: one per CPU)")
	root := flag.String("root", ".", "the repository root")
	pageOnly := flag.Bool("page", false, "skip the fits: regenerate docs/fidelity.md and calib/residuals.yaml from the embedded models (rebuild after a refit first: they are embedded)")
	folds := flag.String("folds", "", "fit and judge only these leave-one-out folds, comma-separated (source:ID, gpu:NAME, sources for every source's, or never-seen for the full fit judged on the sources no fit used), print each figure's error, write nothing")
	flag.Parse()
	var fl []string
	if *folds != "" {
		fl = strings.Split(*folds, ",")
	}
	start := time.Now()
	err := refit.Run(context.Background(), refit.Options{Root: *root, Workers: *parallel, Loosen: *loosen, Log: os.Stderr, PageOnly: *pageOnly, Folds: fl, Out: os.Stdout})
	if err != nil {
		fmt.Fprintln(os.Stderr, "refit:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "refit: done in %.0f s\n", time.Since(start).Seconds())
}
