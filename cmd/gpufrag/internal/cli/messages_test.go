package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// goPackageNames returns the names of the module's Go packages (every
// directory of non-test .go files under the repository root, by its base
// name, which is each package's name here), so that a message that starts
// a clause with one ("model: ", "strategy: ") is found whatever package it
// comes from.
func goPackageNames(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(filepath.Join("..", "..", "..", ".."), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != filepath.Join("..", "..", "..", "..") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			seen[filepath.Base(filepath.Dir(path))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, std := range []string{"strconv", "time", "strconv.ParseFloat", "strconv.ParseInt", "strconv.ParseUint", "strconv.ParseBool", "json", "yaml"} {
		seen[std] = true
	}
	delete(seen, "gpufrag") // cmd/gpufrag: "gpufrag: " starts every message
	var names []string
	for n := range seen {
		names = append(names, regexp.QuoteMeta(n))
	}
	sort.Strings(names)
	return names
}

// TestMessagesNoPackagePrefix runs a table of mistakes across the commands
// (issue 29): each exits with its status, names the flag it is about, and
// no message shows a Go package's name as a clause of its own ("--gpu:
// model: unknown gpu", "strategy: bad strategy spec", "mem: bad size"),
// which says where the code is, not what the user did.
func TestMessagesNoPackagePrefix(t *testing.T) {
	names := goPackageNames(t)
	if len(names) < 20 {
		t.Fatalf("found only %d package names: %v", len(names), names)
	}
	// A clause starts the message, follows ": " or opens a parenthesis;
	// "bad strategy spec: " is words, not package spec.
	prefix := regexp.MustCompile(`(?m)(?:^(?:gpufrag: )?|: |\()(` + strings.Join(names, "|") + `): `)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("not,a,trace\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte("name: x\nmodell: llama-3.1-8b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(snapshotFixtures, "modern_p4.pickle")
	trace := filepath.Join("..", "..", "..", "..", "examples", "azure_conv.csv")
	advise := []string{"advise", "--trace", trace, "--model", "llama-3.1-8b", "--gpu", "a100-80g"}
	for _, tc := range []struct {
		args []string
		code int
		want string // a part of stderr: the flag named, the hint given
	}{
		// Names: a flag, a value.
		{[]string{"simulate", "--gpus", "h100-80g"}, 2, "unknown flag: --gpus; did you mean --gpu?"},
		{[]string{"simulate", "-gpu", "h100-80g"}, 2, "in -gpu; did you mean --gpu?"},
		{[]string{"analyze", "--capcity", "1GiB", snap}, 2, "unknown flag: --capcity; did you mean --capacity?"},
		{[]string{"replay", "--allocs", "caching"}, 2, "unknown flag: --allocs; did you mean --alloc?"},
		{[]string{"cluster", "simulate", "--node", "x.csv"}, 2, "unknown flag: --node; did you mean --nodes?"},
		{[]string{"rules", "--histroy", "x.csv"}, 2, "unknown flag: --histroy; did you mean --history?"},
		{[]string{"exporter", "--snapshot", "x"}, 2, "unknown flag: --snapshot; did you mean --snapshots?"},
		{[]string{"experiments", "run", "--jsn"}, 2, "unknown flag: --jsn; did you mean --json?"},
		{[]string{"simulate", "--frobnicate"}, 2, "unknown flag: --frobnicate\n"},
		{[]string{"simulate", "--gpu", "foo"}, 2, `--gpu: unknown gpu: "foo"`},
		{[]string{"defrag", "--gpu", "foo", snap}, 2, "--gpu"},
		{[]string{"simulate", "--model", "foo"}, 2, `--model "foo"`},
		{[]string{"simulate", "--kv", "pagedd:16"}, 2, `--kv pagedd:16: bad strategy spec: unknown strategy "pagedd"`},
		{[]string{"simulate", "--kv", "paged:x"}, 2, "--kv paged:x"},
		{[]string{"simulate", "--alloc", "cachng"}, 2, "--alloc cachng"},
		{[]string{"replay", "--alloc", "tlsf"}, 2, "--alloc"},
		{append(advise, "--kv", "padged:16"), 2, "--kv padged:16"},
		{[]string{"analyze", "--whatif", "cachng", snap}, 2, "--whatif"},
		{[]string{"defrag", "--allocator", "cachng", snap}, 2, "--allocator"},
		{[]string{"simulate", "--kv-dtype", "fp33"}, 2, "--kv-dtype"},
		{[]string{"simulate", "--engine", "vllm-v2"}, 2, "--engine"},
		{[]string{"simulate", "--engine-version", "9.9"}, 2, "--engine-version"},
		{[]string{"simulate", "--trace", trace, "--format", "azur"}, 2, "--format"},
		// Values.
		{[]string{"analyze", "--capacity", "4XB", snap}, 2, `--capacity "4XB": bad size: "4XB"`},
		{[]string{"replay", "--capacity", "0"}, 2, "--capacity 0B"},
		// --capacity 0 read as not given (analyze, diff, exporter), silently.
		{[]string{"analyze", "--capacity", "0", snap}, 2, "--capacity 0: a device of 0 bytes holds nothing; give its memory, such as 80GiB, or leave --capacity out"},
		{[]string{"diff", "--capacity", "0GiB", snap, snap}, 2, "--capacity 0: a device of 0 bytes holds nothing"},
		// (A bad --listen too, so that the exporter exits if it takes the 0.)
		{[]string{"exporter", "--snapshots", dir, "--capacity", "0", "--listen", "nope"}, 2, "--capacity 0: a device of 0 bytes holds nothing"},
		{[]string{"analyze", "--capacity", "0.5B", snap}, 2, `--capacity "0.5B": bad size: "0.5B" is less than a byte`},
		{[]string{"replay", "--capacity", "1GiB", "--other", "2GiB"}, 2, "--other 2GiB"},
		{[]string{"simulate", "--rate", "x"}, 2, `--rate "x": want a number`},
		{[]string{"simulate", "--rate", "1e9"}, 2, "--rate 1e+09"},
		{[]string{"simulate", "--duration", "5"}, 2, `--duration "5": want a duration`},
		{[]string{"simulate", "--seed", "-1"}, 2, `--seed "-1": want a whole number`},
		{[]string{"defrag", "--goal", "fit:2XB", snap}, 2, "--goal"},
		{[]string{"exporter", "--max-file-bytes", "lots"}, 2, `--max-file-bytes "lots"`},
		{[]string{"exporter", "--cluster", "a\x1bb"}, 2, "--cluster: label cluster value"},
		{[]string{"exporter", "--snapshots", dir, "--capture-dir", dir}, 2, "--capture-dir " + dir},
		{[]string{"cluster", "simulate", "--nodes", "x.csv", "--pods", "y.csv", "--policy", "bestfi"}, 2, "--policy"},
		// Files: each error names its flag.
		{[]string{"simulate", "--trace", dir}, 1, "--trace " + dir + ": is a directory"},
		{[]string{"simulate", "--trace", bad}, 1, "--trace " + bad},
		{[]string{"simulate", "--scenario", dir}, 1, "--scenario " + dir + ": is a directory"},
		{[]string{"simulate", "--scenario", scen}, 1, scen + `: line 2: field "modell": unknown field`},
		{[]string{"simulate", "--model", dir + "/"}, 1, "--model " + dir},
		{[]string{"simulate", "--profile", dir + "/p.yaml"}, 1, "--profile " + dir + "/p.yaml"},
		{[]string{"advise", "--trace", dir, "--model", "llama-3.1-8b", "--gpu", "a100-80g"}, 1, "--trace " + dir},
		{[]string{"rules", "--history", dir}, 1, "--history " + dir},
		{[]string{"cluster", "simulate", "--nodes", dir, "--pods", dir}, 1, "--nodes " + dir},
		{[]string{"calibrate", "--gpu", "h100-80g", "--ops", dir}, 1, "--ops " + dir},
		{[]string{"analyze", dir}, 1, dir + ": is a directory"},
		// Flags a mode ignores.
		{[]string{"simulate", "--print-scenario", "--trace", trace}, 2, "--trace has no effect with --print-scenario"},
		{[]string{"simulate", "--format", "azure"}, 2, "--format has no effect without --trace"},
		{[]string{"analyze", "--no-replay", "--whatif", "caching", snap}, 2, "--whatif has no effect with --no-replay"},
		{[]string{"simulate", "--print-profile", "--gpu", "h100-80g", "--kv", "paged:16"}, 2, "--kv has no effect with --print-profile"},
		{[]string{"simulate", "--print-scenario", "--json"}, 2, "--json has no effect with --print-scenario"},
		{append(advise, "--refine-top", "2"), 2, "--refine-top has no effect without --refine"},
		{[]string{"calibrate", "--ops", dir, "--gpu", "h100-80g", "--holdout", "x.json"}, 2, "--holdout has no effect with --ops"},
		{[]string{"exporter", "--kubeconfig", "k"}, 2, "--kubeconfig has no effect without --cluster"},
	} {
		code, _, stderr := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("gpufrag %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
		if m := prefix.FindStringSubmatch(stderr); m != nil {
			t.Errorf("gpufrag %s: the message shows package %q as a clause: %q", strings.Join(tc.args, " "), m[1], stderr)
		}
	}
}
