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
		{[]string{"experiments", "run", "--root", "no-such-dir", "int8-kv"}, 2, "--root no-such-dir"},
	} {
		code, _, stderr := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("gpufrag %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
}
