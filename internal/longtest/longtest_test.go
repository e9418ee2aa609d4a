package longtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		v       string
		set     bool
		on, bad bool
	}{
		{"", false, false, false},
		{"", true, false, false},
		{"1", true, true, false},
		{"true", true, true, false},
		{"0", true, false, false},
		{"false", true, false, false},
		{"yes", true, false, true},
		{" 1", true, false, true},
	} {
		on, err := enabled(tc.v, tc.set)
		if on != tc.on || (err != nil) != tc.bad {
			t.Errorf("%q (set %v): %v, %v; want %v, error %v", tc.v, tc.set, on, err, tc.on, tc.bad)
		}
		if err != nil && !strings.Contains(err.Error(), Env+"=") {
			t.Errorf("error %q does not name %s", err, Env)
		}
	}
}

// TestSkip runs this test binary again with Env set three ways, and checks
// that a long test skips, runs, or fails as Skip says.
func TestSkip(t *testing.T) {
	if os.Getenv("LONGTEST_CHILD") == "1" {
		Skip(t)
		t.Log("the long test ran")
		return
	}
	for _, tc := range []struct {
		env, want string
		fail      bool
	}{
		{"", "long test: set GPUFRAG_LONG=1 to run it", false},
		{"1", "the long test ran", false},
		{"maybe", `GPUFRAG_LONG="maybe": want 1 or 0`, true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSkip$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "LONGTEST_CHILD=1", Env+"="+tc.env)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tc.fail || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s=%q: error %v, output:\n%s\nwant %q", Env, tc.env, err, out, tc.want)
		}
	}
}
