// Package lint holds gpufrag's project rules as an ordinary Go test, in the
// manner of pebble's internal/lint: `go test ./internal/lint/` parses every Go
// file of the module with go/parser (no external tools, no network) and fails
// with file:line for each violation. The package has no code of its own; it
// exists so that `go test ./...` enforces the rules in CI and on every laptop.
//
// The rules (see rules in lint_test.go; each runs as its own subtest):
//
//   - determinism: the deterministic core (mem, alloc/..., frag, kv/..., sim,
//     defrag, cluster, model, workload) reads no wall clock (time.Now,
//     time.Since, time.Sleep, timers and tickers), starts no goroutines, and
//     uses no global random source (math/rand and math/rand/v2 top-level
//     functions such as rand.IntN or rand.Float64). A component takes its own
//     *rand.Rand from rand.New(rand.NewPCG(seed, stream)). The random-source
//     rule also covers the core's _test.go files, so failures replay from a
//     seed; the clock and goroutine rules do not.
//     cluster/kube/live, the API server's client, is I/O under cluster/:
//     the clock and goroutine rules leave it out.
//   - io-boundary: github.com/prometheus/... and net/http are imported only
//     under exporter/, cmd/ (the CLI included) and cluster/kube/live/ (the
//     Kubernetes API server's client).
//   - errorf-wrap: fmt.Errorf formats an argument named err with %w, so
//     callers can still errors.Is / errors.As the cause.
//   - panic-literal: outside _test.go files, panic carries a formatted
//     message or an error, never a bare string literal, so the panic says
//     which values broke the contract.
//   - layering/alloc-impl: sim, kv/strategy, advise and experiments (with
//     their subpackages and tests) import no allocator implementation
//     (alloc/caching, alloc/vmm, alloc/internal/..., any alloc/X but
//     alloc/registry): they build allocators with alloc/registry and use them
//     through package alloc's interfaces, optional capabilities included
//     (allocimpl_test.go).
//   - tuned-constant: outside _test.go files, a constant or variable whose
//     comment says it was tuned names what it was tuned on and what it was
//     validated on ("Tuned on X; validated on Y"; "not tuned" exempts), the
//     rule for tuned constants of issue 17.
//
// TestLayering (layering_test.go) holds docs/architecture.md to the code: it
// reads the table of the section "Allowed imports" (package | may import;
// the grammar is in layering_doc_test.go) and the package column of the
// table "Packages", lists the module's packages with `go list ./...` (the
// one command a test here runs), reads every file's imports with go/parser
// (all build configurations), and fails on an import between gpufrag
// packages that the table does not allow, naming the file and line, on a
// package either table misses, on a package either table names that does
// not exist, and on a test that imports cmd/gpufrag/internal/cli. It skips, saying so,
// when go is not on PATH.
//
// Directories named testdata, vendor, or starting with "." or "_", nested
// modules and generated files are not linted.
//
// Every rule comes with in-memory snippets that must trigger it (lines marked
// "// want") and snippets that must not, checked by TestRulesSelfTest, so a
// rule that silently stops matching fails the build instead of passing
// vacuously.
//
// To add a rule, append to rules with its snippets. To exempt one file, add
// it to the rule's skip map with a TODO naming the owner and the reason. The
// exempted findings still appear in the test log (go test -v), and an
// exemption for a file that no longer exists or no longer violates the rule
// fails the test, so exemptions cannot outlive their reason.
package lint
