// Package examples holds no code: its directory holds the small input files
// the README's commands use (a trace of each format, a model config, a
// PyTorch memory snapshot, an allocation op trace, a node and a pod list;
// origins and licences in examples/README.md), the program that writes
// them, and the test of the README.
//
// The command internal/genexamples writes every file (copies and cuts of
// ../shared/data where that is present, the project's own generators
// otherwise), run by go generate:
//
//	go generate ./examples
//
// Its test TestExampleFiles regenerates them and fails when a committed
// file differs.
//
// TestReadme runs every command of the README's sh blocks from a directory
// that stands for a fresh clone (no ../shared) and fails, naming the
// README line and the command's stderr, when one exits non-zero or when a
// shown output no longer matches what its command prints. TestReadmeFiles,
// its quick part that -short runs too, checks that no command names
// ../shared and that every examples/ file a command names exists.
package examples

//go:generate go run ./internal/genexamples
