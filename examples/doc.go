// Package examples holds no code: its directory holds the small input files
// the README's commands use (a trace of each format, a model config, a
// PyTorch memory snapshot, an allocation op trace, a node and a pod list;
// origins and licences in examples/README.md), and its tests.
//
// TestExampleFiles regenerates every file from its generator (copies and
// cuts of ../shared/data where that is present, the project's own
// generators otherwise) and fails when a committed file differs; with
// -update it writes them:
//
//	go test ./examples -run TestExampleFiles -update
//
// TestReadme runs every command of the README's sh blocks from a directory
// that stands for a fresh clone (no ../shared) and fails, naming the
// README line and the command's stderr, when one exits non-zero or when a
// shown output no longer matches what its command prints. TestReadmeFiles,
// its quick part that -short runs too, checks that no command names
// ../shared and that every examples/ file a command names exists.
package examples
