package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster/protocol/pages"
)

const (
	clusterNodes = "../../../../cluster/testdata/openb_nodes_head40.csv"
	clusterPods  = "../../../../cluster/testdata/openb_pods_gpuspec33_head60.csv"
)

func runCluster(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append([]string{"cluster", "simulate"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestClusterSimulateJSON(t *testing.T) {
	code, out, errs := runCluster(t, "--nodes", clusterNodes, "--pods", clusterPods, "--policy", "bestfit,fgd,recommended", "--seeds", "42-43", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if errs != "" {
		t.Errorf("stderr not empty off a terminal: %q", errs)
	}
	// The exact shape of issue 7.
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if got := keys(doc); !reflect.DeepEqual(got, []string{"gpus", "nodes", "results"}) {
		t.Errorf("top-level keys %v", got)
	}
	if doc["nodes"].(float64) != 40 {
		t.Errorf("nodes = %v, want 40", doc["nodes"])
	}
	results := doc["results"].([]any)
	if len(results) != 3 {
		t.Fatalf("%d results, want 3", len(results))
	}
	r := results[2].(map[string]any)
	// The text table's columns, each with its deviation: failed_pods and
	// first_failure were left out, frag_total_at and
	// whole_free_nodes_at_100 had means only (they keep that type; their
	// deviations are the _std_ fields).
	want := []string{"alloc_ratio_at_100", "failed_pods", "first_failure", "frag_total_at", "frag_total_std_at", "policy", "seeds",
		"unallocated_gpu_share_at_100", "unallocated_gpus_at_100", "whole_free_nodes_at_100", "whole_free_nodes_std_at_100"}
	if got := keys(r); !reflect.DeepEqual(got, want) {
		t.Errorf("result keys %v, want %v", got, want)
	}
	if r["policy"] != "recommended" || r["seeds"].(float64) != 2 {
		t.Errorf("policy %v seeds %v", r["policy"], r["seeds"])
	}
	ft := r["frag_total_at"].(map[string]any)
	fs := r["frag_total_std_at"].(map[string]any)
	for _, m := range []map[string]any{ft, fs} {
		if got := keys(m); !reflect.DeepEqual(got, []string{"60", "80", "90"}) {
			t.Errorf("frag_total_at / frag_total_std_at keys %v", got)
		}
	}
	for _, k := range []string{"60", "80", "90"} {
		if _, ok := ft[k].(float64); !ok {
			t.Errorf("frag_total_at.%s is %v, want a number (its type since issue 7)", k, ft[k])
		}
		if _, ok := fs[k].(float64); !ok {
			t.Errorf("frag_total_std_at.%s is %v, want a number", k, fs[k])
		}
	}
	for _, k := range []string{"whole_free_nodes_at_100", "whole_free_nodes_std_at_100"} {
		if _, ok := r[k].(float64); !ok {
			t.Errorf("%s is %v, want a number", k, r[k])
		}
	}
	ff, _ := r["first_failure"].(map[string]any)
	if got := keys(ff); !reflect.DeepEqual(got, []string{"arrived_share", "seeds", "unallocated_share"}) {
		t.Errorf("first_failure keys %v", got)
	}
	for k, v := range map[string]any{"alloc_ratio_at_100": r["alloc_ratio_at_100"], "unallocated_gpus_at_100": r["unallocated_gpus_at_100"],
		"unallocated_gpu_share_at_100": r["unallocated_gpu_share_at_100"],
		"failed_pods":                  r["failed_pods"], "first_failure.arrived_share": ff["arrived_share"], "first_failure.unallocated_share": ff["unallocated_share"]} {
		if m, ok := v.(map[string]any); !ok || !reflect.DeepEqual(keys(m), []string{"mean", "std"}) {
			t.Errorf("%s is %v, want {mean, std}", k, v)
		}
	}
	a := r["alloc_ratio_at_100"].(map[string]any)["mean"].(float64)
	u := r["unallocated_gpu_share_at_100"].(map[string]any)["mean"].(float64)
	if a <= 0 || a > 1 || a+u < 0.999999 || a+u > 1.000001 {
		t.Errorf("alloc %v + unallocated share %v != 1", a, u)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestClusterSimulateParallelIsDeterministic(t *testing.T) {
	args := []string{"--nodes", clusterNodes, "--pods", clusterPods, "--policy", "random,fgd,packing", "--seeds", "1-4", "--json"}
	_, one, _ := runCluster(t, append(args, "--parallel", "1")...)
	_, four, _ := runCluster(t, append(args, "--parallel", "4")...)
	if one == "" || one != four {
		t.Errorf("--parallel 1 and 4 differ:\n%s\n%s", one, four)
	}
}

func TestClusterSimulateTable(t *testing.T) {
	code, out, errs := runCluster(t, "--nodes", clusterNodes, "--pods", clusterPods, "--seeds", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"policy", "unallocated GPUs", "random", "dotprod", "clustering", "packing", "bestfit", "fgd", "recommended", "1 seed (7)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestClusterSimulateFiles(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "c.html")
	png := filepath.Join(dir, "png")
	code, _, errs := runCluster(t, "--nodes", clusterNodes, "--pods", clusterPods, "--policy", "bestfit,fgd", "--seeds", "1", "--html", html, "--png", png)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(html)
	if err != nil || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("fgd")) {
		t.Errorf("HTML report: %v, %d bytes", err, len(b))
	}
	for _, name := range pages.ChartFiles {
		p := filepath.Join(png, "cluster-"+name+".png")
		if b, err := os.ReadFile(p); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestClusterSimulateJSONInput(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "c.json")
	doc := `{"nodes":[{"name":"a","cpu_milli":32000,"memory_mib":65536,"gpus":2,"model":"T4"}],
"pods":[{"name":"p","cpu_milli":1000,"memory_mib":10,"num_gpu":1,"gpu_milli":500},{"name":"q","cpu_milli":1000,"memory_mib":10,"num_gpu":1,"gpu_milli":1000}]}`
	if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCluster(t, "--nodes", f, "--pods", f, "--policy", "fgd", "--seeds", "1", "--json")
	if code != 0 || !strings.Contains(out, `"gpus": 2`) {
		t.Errorf("exit %d, %s%s", code, out, errs)
	}
}

func TestClusterSimulateErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("sn,cpu_milli,memory_mib,gpu,model\nn0,x,1,1,T4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--pods", clusterPods}, 2, "--nodes and --pods are required"},
		{[]string{"--nodes", clusterNodes, "--pods", clusterPods, "--seeds", "9-3"}, 2, `--seeds: "9-3" is not a range N-M with N <= M`},
		{[]string{"--nodes", clusterNodes, "--pods", clusterPods, "--policy", "fgd,nope"}, 2, `--policy: unknown policy "nope"`},
		{[]string{"--nodes", clusterNodes, "--pods", clusterPods, "--ratio", "0"}, 2, "--ratio 0"},
		{[]string{"--nodes", clusterNodes, "--pods", clusterPods, "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"--nodes", bad, "--pods", clusterPods}, 1, `bad.csv: line 2: field "cpu_milli": "x" is not an integer`},
		{[]string{"--nodes", "/nonexistent.csv", "--pods", clusterPods}, 1, "no such file"},
	} {
		code, _, errs := runCluster(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errs, tc.code, tc.msg)
		}
	}
}

func TestClusterSimulateTimed(t *testing.T) {
	code, out, errs := runCluster(t, "--nodes", clusterNodes, "--pods", clusterPods, "--policy", "fgd,bestfit", "--seeds", "1-2", "--timed")
	if code != 0 || !strings.Contains(out, "peak allocated") || !strings.Contains(out, "bestfit") {
		t.Errorf("exit %d: %s%s", code, out, errs)
	}
	// The 5-column lists carry no times: an error naming a pod.
	code, _, errs = runCluster(t, "--nodes", clusterNodes, "--pods", "../../../../cluster/testdata/openb_pods_multigpu50_head60.csv", "--timed")
	if code != 1 || !strings.Contains(errs, "has no creation time") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

func TestClusterVolcanoConfig(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main([]string{"cluster", "volcano-config", "--nodes", clusterNodes, "--pods", clusterPods, "--seeds", "1-2"}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{"binpack.weight: 10", "binpack.cpu:", "kind: KubeSchedulerConfiguration", "scoringStrategy:", "volcano-binpack:cpu=1,memory=1,gpu=0"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	// A policy without a stock configuration is a usage error.
	out.Reset()
	errb.Reset()
	code = Main([]string{"cluster", "volcano-config", "--nodes", clusterNodes, "--pods", clusterPods, "--policy", "fgd"}, strings.NewReader(""), &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "only volcano-binpack, mostallocated and rtcr") {
		t.Errorf("--policy fgd: exit %d, %s", code, errb.String())
	}
	// Given settings are printed as they are: rtcr with its shape.
	out.Reset()
	code = Main([]string{"cluster", "volcano-config", "--nodes", clusterNodes, "--pods", clusterPods, "--seeds", "1", "--policy", "rtcr:gpu=2"}, strings.NewReader(""), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "type: RequestedToCapacityRatio") || !strings.Contains(out.String(), "name: nvidia.com/gpu\n          weight: 2") {
		t.Errorf("--policy rtcr:gpu=2: exit %d\n%s", code, out.String())
	}
}

func TestClusterInspect(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main([]string{"cluster", "inspect", "--from", "../../../../cluster/kube/testdata/cluster.json"}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"4 nodes, 3 with GPUs, 10 GPUs; 2.50 GPUs requested", "gpu-a", "pending pods: 3, of which 2 fit nowhere", "ml/big-0", "Insufficient cpu"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := Main([]string{"cluster", "inspect", "--from", "../../../../cluster/kube/testdata/cluster.json", "--json"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("--json: exit %d", code)
	}
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc["gpus"].(float64) != 10 {
		t.Errorf("--json: %v %v", err, doc["gpus"])
	}
	// Without --from it reads the live cluster; with no kubeconfig anywhere
	// that is a usage error that names --from.
	errb.Reset()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if code := Main([]string{"cluster", "inspect"}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "--from cluster.json") {
		t.Errorf("no kubeconfig: exit %d, %s", code, errb.String())
	}
}

// TestClusterSimulateHostileFiles: binary input and files without line
// breaks fail at once with the file and line (issue 13, case 10); a JSON
// list is told from CSV by its content as well as its name.
func TestClusterSimulateHostileFiles(t *testing.T) {
	dir := t.TempDir()
	noBreaks := filepath.Join(dir, "nodes.csv")
	if err := os.WriteFile(noBreaks, []byte("sn,cpu_milli,memory_mib,gpu,model"+strings.Repeat(",model", 20000)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCluster(t, "--nodes", noBreaks, "--pods", clusterPods)
	if code != 1 || !strings.Contains(errs, "nodes.csv: line 1: longer than 64 KiB (lists.MaxLineBytes)") {
		t.Errorf("no line breaks: exit %d, %s", code, errs)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		code, _, errs := runCluster(t, "--nodes", "/dev/zero", "--pods", clusterPods)
		if code != 1 || !strings.Contains(errs, "/dev/zero: line 1: not a text file: byte 0 is NUL") {
			t.Errorf("/dev/zero: exit %d, %s", code, errs)
		}
	}
	js := filepath.Join(dir, "cluster.txt") // JSON without the .json name
	doc := `{"nodes":[{"name":"a","cpu_milli":32000,"memory_mib":65536,"gpus":2,"model":"T4"}],
"pods":[{"name":"p","cpu_milli":1000,"memory_mib":10,"num_gpu":1,"gpu_milli":500}]}`
	if err := os.WriteFile(js, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCluster(t, "--nodes", js, "--pods", js, "--policy", "fgd", "--seeds", "1", "--json"); code != 0 || !strings.Contains(out, `"gpus": 2`) {
		t.Errorf("JSON named .txt: exit %d, %s%s", code, out, errs)
	}
}

// TestClusterSimulateRefusesOverwritingInput: --html naming the node or
// pod list is a usage error naming both flags, and the list is untouched.
func TestClusterSimulateRefusesOverwritingInput(t *testing.T) {
	dir := t.TempDir()
	nodes := filepath.Join(dir, "nodes.csv")
	data, err := os.ReadFile(clusterNodes)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nodes, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCluster(t, "--nodes", nodes, "--pods", clusterPods, "--seeds", "1", "--policy", "fgd", "--html", nodes)
	if code != 2 || !strings.Contains(errs, "--html "+nodes+" is the input file given to --nodes: refusing to overwrite it") {
		t.Errorf("exit %d, %s", code, errs)
	}
	if again, _ := os.ReadFile(nodes); !bytes.Equal(again, data) {
		t.Error("the node list was changed")
	}
}

// A pod no node can hold even when empty fails in every run: simulate
// warns, naming it and its line (it said nothing), and the header counts
// the pods submitted, not placed.
func TestClusterSimulateOversizedPod(t *testing.T) {
	list, err := os.ReadFile(clusterPods)
	if err != nil {
		t.Fatal(err)
	}
	pods := filepath.Join(t.TempDir(), "pods.csv")
	if err := os.WriteFile(pods, append(list, "openb-pod-x,1000,1,64,1000,,LS,Running,0,1,0\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCluster(t, "--nodes", clusterNodes, "--pods", pods, "--policy", "fgd", "--seeds", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "gpufrag: warning: --pods " + pods + `: line 62: pod "openb-pod-x" fits no node even when empty (it asks 64 GPUs; no node has more than 8), ` +
		"so no run can place it (nor the copies inflation makes of it), and each try counts in the failed pods; remove it or add a node that can hold it\n"
	if errs != want {
		t.Errorf("stderr %q\nwant   %q", errs, want)
	}
	if !strings.HasPrefix(out, "Submitted ") {
		t.Errorf("header %q", strings.SplitN(out, "\n", 2)[0])
	}
	// volcano-config replays the same pods, so it warns the same way (it
	// said nothing).
	var vout, verr bytes.Buffer
	if code := Main([]string{"cluster", "volcano-config", "--nodes", clusterNodes, "--pods", pods, "--seeds", "1", "--policy", "rtcr:gpu=2"},
		strings.NewReader(""), &vout, &verr); code != 0 || verr.String() != want {
		t.Errorf("volcano-config: exit %d, stderr %q\nwant %q", code, verr.String(), want)
	}
	// Past five such pods, the rest are counted.
	for i := range 6 {
		list = append(list, fmt.Sprintf("openb-pod-y%d,1000,1,64,1000,,LS,Running,0,1,0\n", i)...)
	}
	if err := os.WriteFile(pods, list, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, errs = runCluster(t, "--nodes", clusterNodes, "--pods", pods, "--policy", "fgd", "--seeds", "1")
	if lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n"); len(lines) != 6 || lines[5] != "gpufrag: warning: --pods "+pods+": and 1 more pod that no node can hold" {
		t.Errorf("six pods: stderr %q", errs)
	}
}

// TestClusterPolicyNamesNone: a --policy that names no policy ("," or "")
// is a usage error in every command that takes one; before, simulate and
// volcano-config ran no policy and printed an empty report with status 0,
// and judge failed with status 1 blaming an "empty cluster or workload".
func TestClusterPolicyNamesNone(t *testing.T) {
	for _, cmd := range [][]string{
		{"cluster", "simulate", "--nodes", clusterNodes, "--pods", clusterPods, "--seeds", "1"},
		{"cluster", "volcano-config", "--nodes", clusterNodes, "--pods", clusterPods, "--seeds", "1"},
		{"cluster", "judge", "--nodes", clusterNodes, "--set", "none", "--list", clusterPods, "--seeds", "1"},
	} {
		for _, p := range []string{",", "", " , "} {
			var out, errb bytes.Buffer
			code := Main(append(cmd[:len(cmd):len(cmd)], "--policy", p), strings.NewReader(""), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), "names no policy") || out.Len() > 0 {
				t.Errorf("%s --policy %q: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, \"names no policy\"", cmd[1], p, code, out.String(), errb.String())
			}
		}
	}
}

// TestClusterPolicyTwice: a policy named twice (in any case, in one
// --policy or two) is a usage error in every command that takes one: it
// ran twice and printed two identical rows under one name.
func TestClusterPolicyTwice(t *testing.T) {
	for _, cmd := range [][]string{
		{"cluster", "simulate", "--nodes", clusterNodes, "--pods", clusterPods, "--seeds", "1", "--policy", "fgd,FGD"},
		{"cluster", "volcano-config", "--nodes", clusterNodes, "--pods", clusterPods, "--seeds", "1", "--policy", "mostallocated", "--policy", "mostallocated"},
		{"cluster", "judge", "--nodes", clusterNodes, "--set", "none", "--list", clusterPods, "--seeds", "1", "--policy", "bestfit, bestfit"},
	} {
		var out, errb bytes.Buffer
		code := Main(cmd, strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "given twice: name each policy once") || out.Len() > 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and \"given twice\"", cmd[1], code, out.String(), errb.String())
		}
	}
}

// TestClusterJudgeSetNoneNoPods: --pods and --specs generate the lists of
// --set tune and judge; with --set none they had no effect and were read
// anyway (the help's first example passed --pods), which the root help
// says is a usage error.
func TestClusterJudgeSetNoneNoPods(t *testing.T) {
	for _, extra := range [][]string{{"--pods", clusterPods}, {"--specs", clusterPods}} {
		var out, errb bytes.Buffer
		code := Main(append([]string{"cluster", "judge", "--nodes", clusterNodes, "--set", "none", "--list", clusterPods, "--seeds", "1"}, extra...),
			strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "--pods and --specs have no effect with --set none") {
			t.Errorf("%s: exit %d, stderr %q; want exit 2", extra[0], code, errb.String())
		}
	}
}

// TestClusterJudgeNamesRef: a bad --ref is reported as --ref's, not as
// --policy's (before: "--policy: unknown policy "nosuch"" for --ref nosuch,
// with --policy not given at all).
func TestClusterJudgeNamesRef(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"--ref", "nosuch", `gpufrag: --ref: unknown policy "nosuch"`},
		{"--ref", "", `gpufrag: --ref: unknown policy ""`},
		{"--ref", "fgd:x=1", `gpufrag: --ref: bad policy options "fgd:x=1": fgd takes no options`},
		{"--policy", "spread:cpu=-1", `gpufrag: --policy: bad policy options "spread:cpu=-1": option cpu=-1: want an integer weight from 0 to 1000`},
		{"--policy", "nosuch", `gpufrag: --policy: unknown policy "nosuch"`},
	} {
		var out, errb bytes.Buffer
		code := Main([]string{"cluster", "judge", "--nodes", clusterNodes, "--set", "none", "--list", clusterPods, "--seeds", "1", tc.flag, tc.value}, strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.HasPrefix(errb.String(), tc.want) {
			t.Errorf("%s %q: exit %d, stderr %q; want exit 2 and %q", tc.flag, tc.value, code, errb.String(), tc.want)
		}
	}
}

// TestClusterEmptyLists: a node list without a GPU or a pod list without a
// pod fails at once, naming the file, with no warnings before it. Before,
// a node list of a header alone drew a warning for each pod that it "fits
// no node ... no node has that model" (pods that name no model), then
// failed with "empty cluster or workload: 0 nodes with 0 GPUs, 400 pods",
// no file named.
func TestClusterEmptyLists(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	header := write("header.csv", "sn,cpu_milli,memory_mib,gpu,model\n")
	cpuOnly := write("cpu.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,0,\nn1,64000,262144,0,\n")
	cpuOne := write("cpu1.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,0,\n")
	noNodes := write("nonodes.json", `{"nodes":[]}`)
	noPods := write("nopods.json", `{"nodes":[{"name":"a","cpu_milli":1000,"memory_mib":100,"gpus":2,"model":"T4"}],"pods":[]}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "--nodes", header, "--pods", clusterPods}, "gpufrag: --nodes " + header + ": empty cluster or workload: the list holds no node"},
		{[]string{"simulate", "--nodes", noNodes, "--pods", clusterPods}, "gpufrag: --nodes " + noNodes + ": empty cluster or workload: the list holds no node"},
		{[]string{"simulate", "--nodes", cpuOnly, "--pods", clusterPods}, "gpufrag: --nodes " + cpuOnly + ": empty cluster or workload: its 2 nodes have no GPU"},
		{[]string{"simulate", "--nodes", cpuOne, "--pods", clusterPods, "--timed"}, "gpufrag: --nodes " + cpuOne + ": empty cluster or workload: its one node has no GPU"},
		{[]string{"simulate", "--nodes", noPods, "--pods", noPods}, "gpufrag: --pods " + noPods + ": empty cluster or workload: the list holds no pod"},
		{[]string{"volcano-config", "--nodes", header, "--pods", clusterPods}, "gpufrag: " + header + ": empty cluster or workload: the list holds no node"},
		{[]string{"judge", "--nodes", header, "--set", "none", "--list", clusterPods}, "gpufrag: --nodes " + header + ": empty cluster or workload: the list holds no node"},
	} {
		var out, errb bytes.Buffer
		code := Main(append(append([]string{"cluster"}, tc.args...), "--seeds", "1"), strings.NewReader(""), &out, &errb)
		if code != 1 || !strings.HasPrefix(errb.String(), tc.want) || strings.Contains(errb.String(), "warning") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and only %q...", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestClusterSimulatePNGNotADirectory: --png onto a file, or under one, is
// a usage error before the run, naming the flag; before, the whole run
// went first, its table was not printed and it failed with status 1 and
// "mkdir FILE: not a directory". A directory to make, parents and all,
// is still made.
func TestClusterSimulatePNGNotADirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ png, want string }{
		{file, "gpufrag: --png " + file + ": not a directory; give a directory to write into (made if missing)\n"},
		{filepath.Join(file, "sub"), "gpufrag: --png " + filepath.Join(file, "sub") + ": " + file + " is not a directory, so it cannot be made\n"},
	} {
		code, out, errs := runCluster(t, "--nodes", clusterNodes, "--pods", clusterPods, "--policy", "fgd", "--seeds", "1", "--png", tc.png)
		if code != 2 || !strings.HasPrefix(errs, tc.want) || out != "" {
			t.Errorf("--png %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.png, code, out, errs, tc.want)
		}
	}
	deep := filepath.Join(dir, "a", "b")
	if code, _, errs := runCluster(t, "--nodes", clusterNodes, "--pods", clusterPods, "--policy", "fgd", "--seeds", "1", "--png", deep); code != 0 {
		t.Fatalf("--png %s: exit %d: %s", deep, code, errs)
	}
	if _, err := os.Stat(filepath.Join(deep, "cluster-"+pages.ChartFiles[0]+".png")); err != nil {
		t.Error(err)
	}
}
