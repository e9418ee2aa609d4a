package experiments

import (
	"cmp"
	"path/filepath"
)

// Input is a file an experiment reads: the experiment file and the field
// that name it, and the path as it is opened.
type Input struct {
	File, Field, Path string
}

// Inputs returns the files the experiments read under opts: their scenario
// files, the files their scenarios name (a model's config.json, a profile,
// a trace; scenario.Scenario.Files, relative to opts.Root as the runs open
// them) and their cluster traces, for a caller that writes files to check
// its outputs against (issue 28: an output must not replace a file a
// document names). A scenario file that cannot be read is left out: the
// run reports it.
func Inputs(exps []*Experiment, opts Options) []Input {
	var out []Input
	for _, e := range exps {
		if e.ScenarioFile != "" {
			out = append(out, Input{e.File, "scenario_file", opts.path(e.ScenarioFile)})
		}
		if c := e.Cluster; c != nil {
			nodes, pods := c.Nodes, c.Pods
			if r := e.Reduced; opts.Reduced && r != nil {
				nodes, pods = cmp.Or(r.Nodes, nodes), cmp.Or(r.Pods, pods)
			}
			out = append(out, Input{e.File, "cluster.nodes", opts.path(nodes)}, Input{e.File, "cluster.pods", opts.path(pods)})
		}
		if e.Kind() != "scenario" {
			continue
		}
		s, err := readScenario(e, opts)
		if err != nil {
			continue
		}
		field := "scenario."
		if e.ScenarioFile != "" {
			field = e.ScenarioFile + ": "
		}
		for _, f := range s.Files() {
			p := f.Path
			if f.Field != "model" && !filepath.IsAbs(p) {
				p = opts.path(p) // the runs' opener reads profiles and traces below the root
			}
			out = append(out, Input{e.File, field + f.Field, p})
		}
	}
	return out
}
