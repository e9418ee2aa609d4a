// Package simreport holds the documents of `gpufrag simulate` beside
// sim/scenario's Report (the --json document's results): what a run
// describes of itself (Run, Describe, Apply: the --json "run" object, the
// text header and the HTML title of a run that flags changed), the error
// bands of its figures (AddBands, from calib's held-out errors), the text
// report (WriteText: memory and service tables, bands, the recommendation,
// compaction and fragmentation notes) and the HTML page (WriteHTML: the
// tables and, per run, memory, health and requests over time with event
// markers).
//
// The command line parses flags and builds the plan; this package decides
// what the reports say. Names that come from input files (scenario, model,
// trace, profile) are printed through untrusted.Printable.
package simreport
