// Package probe holds gpufrag-probe, the Python package that dumps a
// running PyTorch server's allocator snapshots for the exporter (see
// README.md). This Go file only runs its pytest suite, so that
// `go test ./...` covers the Python side too.
package probe

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/internal/testkit"
)

// suiteTimeout bounds the pytest run: about 17 CPU-s, 87 s wall on a
// 2-core machine at load 24 (of which test_packaging.py's offline installs
// into a venv of each CPython found, 12 CPU-s); five minutes is a hang, not
// a slow machine.
const suiteTimeout = 5 * time.Minute

// python returns the first interpreter that can import pytest:
// $GPUFRAG_PYTHON, python3 on PATH, then Debian's /usr/bin/python3 (where
// apt's python3-pytest lives when PATH leads to another Python).
func python(t *testing.T) (string, []string) {
	t.Helper()
	var tried []string
	for _, c := range []string{os.Getenv("GPUFRAG_PYTHON"), "python3", "/usr/bin/python3"} {
		if c == "" {
			continue
		}
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c+": not found")
			continue
		}
		if out, err := exec.Command(path, "-c", "import pytest").CombinedOutput(); err != nil {
			tried = append(tried, path+": no pytest ("+firstLine(out)+")")
			continue
		}
		return path, tried
	}
	return "", tried
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}

// TestPytest runs probe/tests with pytest against the fake torch in
// probe/tests/fake_torch (no GPU, no network). Without python3 and pytest
// it skips, except under CI=true, where it fails: CI installs them
// (apt-get install python3-pytest).
func TestPytest(t *testing.T) {
	if testing.Short() || testkit.SlowBuild {
		t.Skip("the pytest suite runs once, in the plain `go test ./...` (not under -short, -race or -tags invariants)")
	}
	py, tried := python(t)
	if py == "" {
		msg := "no python3 with pytest (tried: " + strings.Join(tried, "; ") + "); install it with: apt-get install python3-pytest"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
	defer cancel()
	// -p no:cacheprovider and no bytecode: the run leaves nothing in the tree.
	cmd := exec.CommandContext(ctx, py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s -m pytest tests: no result after %v:\n%s", py, suiteTimeout, out)
	}
	if err != nil {
		t.Fatalf("%s -m pytest tests: %v:\n%s", py, err, out)
	}
	t.Logf("%s -m pytest tests:\n%s", py, out)
}
