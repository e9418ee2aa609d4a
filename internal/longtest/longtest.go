// Package longtest is the switch of gpufrag's long tests: the suites that
// take several CPU-seconds each (a README run, a fidelity table rebuilt,
// a tuning sweep, a probe installed into a venv) and that together made
// `go test ./...` cost some 330 CPU-seconds. By default `go test ./...` runs
// a fast subset of every package; with GPUFRAG_LONG=1 in the environment it
// runs everything, as CI does (.ci/run exports it):
//
//	go test ./...                  # the fast subset
//	GPUFRAG_LONG=1 go test ./...   # everything
//
// A long test calls Skip as its first statement and nothing else reads the
// variable; internal/lint holds the tests to that and to the table of long
// tests in docs/architecture.md ("Long tests").
//
// Why an environment variable rather than -short: Go users expect plain
// `go test` to run a package's tests, and -short to be the opt-out; the
// project wants the opposite default for ./... (a newcomer's first run fast),
// and inverting -short would surprise everyone who knows it. -short keeps
// its meaning here (fewer property-test cases, as the race run in CI uses
// it). A build tag would hide the long tests from go vet and editors and
// rebuild every test binary when flipped; the test cache, by contrast,
// records the environment variables a test reads, so flipping GPUFRAG_LONG
// reruns exactly the packages that read it.
package longtest

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// Env is the environment variable that turns the long tests on.
const Env = "GPUFRAG_LONG"

// Skip skips t unless the long tests are on. Call it first in a long test.
// A value of Env that is no boolean (1, true, 0, false, ...) fails t: a
// typo must not silently skip what CI meant to run.
func Skip(t testing.TB) {
	t.Helper()
	on, err := enabled(os.LookupEnv(Env))
	if err != nil {
		t.Fatal(err)
	}
	if !on {
		t.Skipf("long test: set %s=1 to run it (README, \"Testing\")", Env)
	}
}

// enabled reads Env's value: unset or empty is off.
func enabled(v string, set bool) (bool, error) {
	if !set || v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want 1 or 0 (true or false)", Env, v)
	}
	return on, nil
}
