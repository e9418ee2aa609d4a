package experiments

import "strings"

// ListEntry is one element of `gpufrag experiments list --json`: what an
// experiment claims and how it tests it.
type ListEntry struct {
	Name           string `json:"name"`
	File           string `json:"file"`
	Claim          string `json:"claim"`
	Source         string `json:"source,omitempty"`
	Kind           string `json:"kind"`
	Runs           int    `json:"runs"`  // entries of its runs list
	Rules          int    `json:"rules"` // decision rules that give its verdict
	CannotSimulate string `json:"cannot_simulate,omitempty"`
}

// List describes exps in their order.
func List(exps []*Experiment) []ListEntry {
	out := make([]ListEntry, 0, len(exps))
	for _, e := range exps {
		out = append(out, ListEntry{Name: e.Name, File: e.File, Claim: strings.TrimSpace(e.Claim),
			Source: strings.TrimSpace(e.Source), Kind: e.Kind(), Runs: len(e.Runs), Rules: len(e.Decide),
			CannotSimulate: strings.TrimSpace(e.CannotSimulate)})
	}
	return out
}
