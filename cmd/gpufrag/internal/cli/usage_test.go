package cli

import (
	"strings"
	"testing"
)

// TestUsageErrorsExit2: a bad flag value exits 2 in every command, with a
// hint for a near name; a file that cannot be read exits 1 naming its flag.
func TestUsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"simulate", "--gpu", "h100"}, 2, `did you mean "h100-80g"?`},
		{[]string{"simulate", "--model", "llama3-8b"}, 2, `did you mean "llama-3-8b"?`},
		{[]string{"simulate", "--alloc", "cachng"}, 2, `--alloc cachng: `},
		{[]string{"simulate", "--kv", "pagd:16"}, 2, `did you mean "paged"?`},
		{[]string{"simulate", "--kv", "vmm:2MiB", "--alloc", "caching"}, 2, "--kv vmm:2MiB and --alloc caching cannot run together"},
		{[]string{"simulate", "--tp", "3", "--model", "llama-3.1-8b"}, 2, "--tp 3 with --model llama-3.1-8b"},
		{[]string{"simulate", "--trace", "testdata/none.csv", "--format", "azur"}, 2, `did you mean "azure"?`},
		{[]string{"simulate", "--kv-dtype", "fp33"}, 2, "--kv-dtype"},
		{[]string{"simulate", "--engine", "vllm-v2"}, 2, `did you mean "vllm-v1" or "vllm-v0"?`},
		{[]string{"simulate", "--defrag", "thresh"}, 2, `did you mean "threshold"?`},
		{[]string{"simulate", "--trace", "testdata/no-such-trace.csv"}, 1, "--trace testdata/no-such-trace.csv: open testdata/no-such-trace.csv: no such file"},
		{[]string{"simulate", "--model", "./no-such-config.json"}, 1, "--model ./no-such-config.json: open ./no-such-config.json: no such file"},
		{[]string{"simulate", "--scenario", "no-such.yaml"}, 1, "--scenario no-such.yaml: open no-such.yaml"},
		{[]string{"defrag", "--gpu", "h100", "x.pickle"}, 2, `did you mean "h100-80g"?`},
		{[]string{"advise", "--trace", "x.csv", "--model", "llama3-8b", "--gpu", "h100-80g"}, 2, `did you mean "llama-3-8b"?`},
		{[]string{"advise", "--trace", "../../../../examples/azure_conv.csv", "--model", "llama-3.1-8b", "--gpu", "a100-80g", "--kv", "padged:16"}, 2, `--kv padged:16: bad strategy spec: unknown strategy "padged"`},
		{[]string{"advise", "--trace", "../../../../examples/azure_conv.csv", "--model", "llama-3.1-8b", "--gpu", "a100-80g", "--alloc", "cachng"}, 2, `did you mean "caching"?`},
		{[]string{"calibrate", "--gpu", "h100", "--model", "llama-3-8b", "x.json"}, 2, `did you mean "h100-80g"?`},
		{[]string{"cluster", "gen-pods", "--pods", "x.csv", "--family", "cpu", "--share", "2"}, 2, "--share 2"},
		{[]string{"cluster", "gen-pods", "--pods", "x.csv", "--family", "gpuspc", "--share", "0.2"}, 2, `did you mean "gpuspec"?`},
		{[]string{"cluster", "gen-pods", "--pods", "x.csv", "--family", "multigpu", "--share", "-0.5"}, 2, "--share -0.5: want a share from 0 to 1"},
		{[]string{"cluster", "gen-pods", "--pods", "x.csv", "--family", "multigpu"}, 2, "--pods, --family and --share are required"},
		// --specs only feeds --family gpuspec; elsewhere it was read and ignored.
		{[]string{"cluster", "gen-pods", "--pods", "x.csv", "--family", "cpu", "--share", "0.5", "--specs", "x.csv"}, 2,
			"--specs has no effect with --family cpu, which draws no gpu_spec values (only --family gpuspec does)"},
		{[]string{"cluster", "gen-pods", "--pods", "x.csv", "--family", "multigpu", "--share", "0.5", "--specs", "x.csv"}, 2, "--specs has no effect with --family multigpu"},
		{[]string{"cluster", "gen-pods", "--pods", "x.csv", "--family", "multigpu", "--share", "0"}, 1, "--pods x.csv: open x.csv"},
		{[]string{"experiments", "run", "--root", "no-such-dir", "int8-kv"}, 2, "--root no-such-dir"},
		{[]string{"replay", "--alloc", "cachng"}, 2, `--alloc cachng: bad allocator spec: unknown allocator "cachng" (known: caching, sizeclass, arena, buddy, async, direct, vmm); did you mean "caching"?`},
		{[]string{"replay", "--alloc", "direct", "--alloc", "budy:0.9"}, 2, `--alloc budy:0.9: bad allocator spec: unknown allocator "budy" (known: caching, sizeclass, arena, buddy, async, direct, vmm); did you mean "buddy"?`},
		{[]string{"analyze", "--whatif", "sizeclas", "x.pickle"}, 2, `--whatif sizeclas: bad allocator spec: unknown allocator "sizeclas" (known: caching, sizeclass, arena, buddy, async, direct, vmm); did you mean "sizeclass"?`},
	} {
		code, _, stderr := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("gpufrag %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
}

// TestCommandWordsExit2: a word where a command takes none, or an unknown
// subcommand or help topic, is a usage error (exit 2) on stderr that points
// at the help of the command it was given to, with the near command names.
func TestCommandWordsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "simulat"}, "gpufrag: unknown command \"simulat\" for \"gpufrag cluster\"; did you mean \"simulate\"?\nRun 'gpufrag cluster --help' for usage.\n"},
		{[]string{"experiments", "lst"}, "gpufrag: unknown command \"lst\" for \"gpufrag experiments\"; did you mean \"list\"?\nRun 'gpufrag experiments --help' for usage.\n"},
		{[]string{"cluster", "nosuch"}, "gpufrag: unknown command \"nosuch\" for \"gpufrag cluster\"\nRun 'gpufrag cluster --help' for usage.\n"},
		{[]string{"cluster", "simulate", "extra"}, "gpufrag: \"gpufrag cluster simulate\" takes no arguments, got [\"extra\"]\nRun 'gpufrag cluster simulate --help' for usage.\n"},
		{[]string{"cluster", "inspect", "extra"}, "gpufrag: \"gpufrag cluster inspect\" takes no arguments, got [\"extra\"]\nRun 'gpufrag cluster inspect --help' for usage.\n"},
		{[]string{"cluster", "judge", "extra"}, "gpufrag: \"gpufrag cluster judge\" takes no arguments, got [\"extra\"]\nRun 'gpufrag cluster judge --help' for usage.\n"},
		{[]string{"cluster", "gen-pods", "extra"}, "gpufrag: \"gpufrag cluster gen-pods\" takes no arguments, got [\"extra\"]\nRun 'gpufrag cluster gen-pods --help' for usage.\n"},
		{[]string{"cluster", "volcano-config", "extra"}, "gpufrag: \"gpufrag cluster volcano-config\" takes no arguments, got [\"extra\"]\nRun 'gpufrag cluster volcano-config --help' for usage.\n"},
		{[]string{"experiments", "list", "extra"}, "gpufrag: \"gpufrag experiments list\" takes no arguments, got [\"extra\"]\nRun 'gpufrag experiments list --help' for usage.\n"},
		{[]string{"exporter", "extra"}, "gpufrag: \"gpufrag exporter\" takes no arguments, got [\"extra\"]\nRun 'gpufrag exporter --help' for usage.\n"},
		{[]string{"help", "simulat"}, "gpufrag: unknown help topic \"simulat\"; did you mean \"simulate\"?\nRun 'gpufrag --help' for usage.\n"},
		{[]string{"help", "nosuch"}, "gpufrag: unknown help topic \"nosuch\"\nRun 'gpufrag --help' for usage.\n"},
		{[]string{"help", "cluster", "simulat"}, "gpufrag: unknown help topic \"cluster simulat\"; did you mean \"cluster simulate\"?\nRun 'gpufrag --help' for usage.\n"},
	} {
		code, stdout, stderr := run(t, "", tc.args...)
		if code != exitUsage || stderr != tc.want || stdout != "" {
			t.Errorf("gpufrag %s: exit %d, stdout %q\nstderr %q\nwant   %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
	// A known topic still prints that command's help, on stdout, exit 0.
	for _, args := range [][]string{{"help", "cluster", "simulate"}, {"help", "replay"}} {
		code, stdout, stderr := run(t, "", args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage:\n  gpufrag "+strings.Join(args[1:], " ")) {
			t.Errorf("gpufrag %s: exit %d, stderr %q, stdout:\n%s", strings.Join(args, " "), code, stderr, stdout)
		}
	}
}

// TestHelpShowsNoSentinelDefault: a required flag's help shows no
// "(default -1)", a value the flag refuses.
func TestHelpShowsNoSentinelDefault(t *testing.T) {
	code, out, _ := run(t, "", "cluster", "gen-pods", "--help")
	if code != 0 || strings.Contains(out, "(default -1)") {
		t.Errorf("exit %d, help shows a default of -1:\n%s", code, out)
	}
}
