package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// readProfile parses a profile file as go tool pprof does.
func readProfile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

func sampleTypes(p *profile.Profile) string {
	var s []string
	for _, st := range p.SampleType {
		s = append(s, st.Type+"/"+st.Unit)
	}
	return strings.Join(s, " ")
}

// TestProfileFlags: --cpuprofile and --memprofile write profiles that pprof
// reads, for a command that runs (analyze) and for one whose mode flag
// takes no other flag (--print-scenario: the profile flags are no
// command's flags, so its rule does not refuse them).
func TestProfileFlags(t *testing.T) {
	dir := t.TempDir()
	cpu, heap := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "heap.prof")
	code, _, errs := run(t, "", "analyze", "../../../../examples/snapshot.pickle", "--cpuprofile", cpu, "--memprofile", heap)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	if p := readProfile(t, cpu); sampleTypes(p) != "samples/count cpu/nanoseconds" {
		t.Errorf("CPU profile has sample types %s", sampleTypes(p))
	}
	p := readProfile(t, heap)
	if got := sampleTypes(p); got != "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes" {
		t.Errorf("heap profile has sample types %s", got)
	}
	if len(p.Sample) == 0 {
		t.Error("heap profile has no samples: analyze allocates megabytes")
	}

	cpu2 := filepath.Join(dir, "scenario.prof")
	code, out, errs := run(t, "", "simulate", "--print-scenario", "--cpuprofile", cpu2)
	if code != 0 || !strings.Contains(out, "model:") {
		t.Fatalf("code %d: %s", code, errs)
	}
	readProfile(t, cpu2)
}

// TestProfileFlagsRefused: a profile file goes through the output checks
// before it is created: not over an input (an argument or any other
// flag's file), not over the other profile, not in a missing directory;
// each is a usage error and the input is left as it was.
func TestProfileFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.csv")
	const body = "timestamp,input_tokens,output_tokens\n0,10,10\n"
	if err := os.WriteFile(trace, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "s.pickle")
	if err := os.WriteFile(snap, []byte("not a pickle"), 0o644); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(dir, "alias.csv") // the trace under another name
	if err := os.Link(trace, alias); err != nil {
		t.Skip(err)
	}
	p := filepath.Join(dir, "p.prof")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--trace", trace, "--cpuprofile", trace}, "--cpuprofile " + trace + " is the input file given to --trace"},
		{[]string{"simulate", "--trace", alias, "--memprofile", trace}, "--memprofile " + trace + " is the input file given to --trace (" + alias + ")"},
		{[]string{"analyze", snap, "--memprofile", snap}, "is the input file given to the arguments"},
		{[]string{"simulate", "--cpuprofile", p, "--memprofile", p}, "--cpuprofile and --memprofile both write"},
		{[]string{"simulate", "--cpuprofile", filepath.Join(dir, "no", "c.prof")}, "does not exist"},
	} {
		code, _, errs := run(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: code %d, want %d with %q: %s", tc.args, code, exitUsage, tc.want, errs)
		}
	}
	if b, _ := os.ReadFile(trace); string(b) != body {
		t.Errorf("the trace was overwritten: %q", b)
	}
	if b, _ := os.ReadFile(snap); string(b) != "not a pickle" {
		t.Errorf("the snapshot was overwritten: %q", b)
	}
	if _, err := os.Stat(p); err == nil {
		t.Error("a refused command line created its profile")
	}
}

// TestProfileFlagsChangeNoOutput: profiling a run changes nothing it
// prints (simulate's "about" line once listed --cpuprofile among the flags
// that changed the scenario).
func TestProfileFlagsChangeNoOutput(t *testing.T) {
	dir := t.TempDir()
	args := []string{"simulate", "--duration", "20s", "--json"}
	code, plain, errs := run(t, "", args...)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	code, profiled, errs := run(t, "", append(args, "--cpuprofile", filepath.Join(dir, "c.prof"), "--memprofile", filepath.Join(dir, "m.prof"))...)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	if plain != profiled {
		t.Errorf("--json differs with the profile flags:\n%s\nagainst\n%s", profiled, plain)
	}
}
