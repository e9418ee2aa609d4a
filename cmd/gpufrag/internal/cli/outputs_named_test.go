package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/experiments"
)

// TestOutputOntoNamedInput: simulate --scenario S --html X, where S names
// X as its profile: or model:, replaced X with HTML and exited 0 (issue
// 28, item 1): the output check saw only the files the flags name. Every
// file a document names is now checked as a flag's file is (the same path,
// another spelling, a link), and so is the config.json inside a --model
// directory. Each is a usage error naming both, and the input is left as
// it was.
func TestOutputOntoNamedInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "model", "testdata", "llama-3-8b.synthetic.json"))
	if err != nil {
		t.Fatal(err)
	}
	trace, err := os.ReadFile(adviseTrace)
	if err != nil {
		t.Fatal(err)
	}
	config := write("mdir/config.json", cfg)
	mdir := filepath.Dir(config)
	profile := write("study/p.yaml", []byte("gpu: h100-80g\n"))
	tr := write("t.csv", trace)
	scen := write("study/s.yaml", []byte("model: "+mdir+"\ngpu: h100-80g\nprofile: p.yaml\nworkload:\n  trace: {file: "+tr+", rate: 1}\n"+
		"runs: [{kv: 'paged:16', alloc: caching}]\n"))
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink(config, link); err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, p := range []string{config, profile, tr, scen} {
		before[p], _ = os.ReadFile(p)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"onto the scenario's profile", []string{"simulate", "--scenario", scen, "--html", profile},
			[]string{"--html " + profile + " is the input file named by profile: in --scenario " + scen, "refusing to overwrite"}},
		{"onto the scenario's model directory's config.json", []string{"simulate", "--scenario", scen, "--html", config},
			[]string{"the input file named by model: in --scenario " + scen}},
		{"through a link to the model's config.json", []string{"simulate", "--scenario", scen, "--html", link},
			[]string{"--html " + link + " is the input file named by model: in --scenario " + scen + " (" + config + ")"}},
		{"onto the scenario's trace", []string{"simulate", "--scenario", scen, "--html", tr},
			[]string{"the input file named by workload.trace.file: in --scenario " + scen}},
		{"onto the profile a flag names", []string{"simulate", "--scenario", scen, "--profile", profile, "--html", profile},
			[]string{"the input file given to --profile"}},
		{"onto a --model directory's config.json", []string{"simulate", "--model", mdir, "--gpu", "h100-80g", "--html", config},
			[]string{"the input file given to --model"}},
		{"advise --out onto a --model directory's config.json", []string{"advise", "--trace", tr, "--model", mdir, "--gpu", "a100-80g", "--shard", "0/2", "--out", config},
			[]string{"--out " + config + " is the input file given to --model"}},
		{"calibrate --output onto a --model directory's config.json", []string{"calibrate", tr, "--model", mdir, "--gpu", "a100-80g", "--output", config},
			[]string{"--output " + config + " is the input file given to --model"}},
	} {
		t.Run(tc.name, func(t *testing.T) { refusesOutput(t, before, tc.args, tc.want) })
	}
}

// refusesOutput runs args, which must be a usage error whose message says
// each of want, and leave every file of before as it was.
func refusesOutput(t *testing.T, before map[string][]byte, args, want []string) {
	t.Helper()
	code, _, errs := run(t, "", args...)
	if code != exitUsage {
		t.Errorf("exit %d, want %d; stderr %q", code, exitUsage, errs)
	}
	for _, w := range want {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr %q does not say %q", errs, w)
		}
	}
	for p, b := range before {
		if now, _ := os.ReadFile(p); !bytes.Equal(now, b) {
			t.Fatalf("%s changed", p)
		}
	}
}

// TestFindingsOutputsOntoInputs: experiments run --write-findings writes
// docs/findings.md and plots below --root, and reads the scenario files and
// traces the experiments name below it; a findings file that is one of
// them (through a link) is refused before any experiment runs, naming the
// experiment file and its field.
func TestFindingsOutputsOntoInputs(t *testing.T) {
	root := t.TempDir()
	scen := filepath.Join(root, "docs", "scenarios", "long-chat-hours.yaml")
	if err := os.MkdirAll(filepath.Dir(scen), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scen, []byte("model: llama-3.1-8b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "experiments"), 0o755); err != nil {
		t.Fatal(err)
	}
	findings := filepath.Join(root, "docs", "findings.md")
	if err := os.Symlink(scen, findings); err != nil {
		t.Fatal(err)
	}
	all, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	err = checkFindingsOutputs(newRoot(nil, nil, nil), all, experiments.Options{Root: root})
	want := "--write-findings " + findings + " is the input file named by scenario_file in experiments/08-compaction-threshold.yaml (" + scen + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
	// Without the link, nothing is refused.
	if err := os.Remove(findings); err != nil {
		t.Fatal(err)
	}
	if err := checkFindingsOutputs(newRoot(nil, nil, nil), all, experiments.Options{Root: root}); err != nil {
		t.Errorf("no collision: %v", err)
	}
}
