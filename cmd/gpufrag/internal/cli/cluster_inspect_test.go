package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster/kube/live"
)

const inspectFixture = "../../../../cluster/kube/testdata/cluster.json"

// fixtureObjects reads the saved kubectl JSON into nodes and pods (with
// their kind, which live.Snapshot accepts; cluster/kube/live's tests list
// them without, as the API server does).
func fixtureObjects(t *testing.T) (nodes, pods []json.RawMessage) {
	t.Helper()
	data, err := os.ReadFile(inspectFixture)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	for _, raw := range list.Items {
		var o struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		switch o.Kind {
		case "Node":
			nodes = append(nodes, raw)
		case "Pod":
			pods = append(pods, raw)
		}
	}
	return nodes, pods
}

// fakeLive is a live.Client over fixed lists, with an optional error.
type fakeLive struct {
	nodes []json.RawMessage
	pods  []json.RawMessage
	err   error
	got   []string // namespace of each pod list request
}

func (f *fakeLive) ListNodes(context.Context, live.ListOptions) (*live.List, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &live.List{Items: f.nodes}, nil
}

func (f *fakeLive) ListPods(_ context.Context, ns string, _ live.ListOptions) (*live.List, error) {
	f.got = append(f.got, ns)
	var out []json.RawMessage
	for _, p := range f.pods {
		var o struct {
			Metadata struct {
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(p, &o); err != nil {
			return nil, err
		}
		if ns == "" || o.Metadata.Namespace == ns {
			out = append(out, p)
		}
	}
	return &live.List{Items: out}, nil
}

// withLive makes inspect connect through connect for the test's duration.
func withLive(t *testing.T, connect func(live.Config) (live.Client, error)) {
	t.Helper()
	old := liveConnect
	liveConnect = connect
	t.Cleanup(func() { liveConnect = old })
}

func inspect(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(append([]string{"cluster", "inspect"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestClusterInspectLiveFake(t *testing.T) {
	nodes, pods := fixtureObjects(t)
	fake := &fakeLive{nodes: nodes, pods: pods}
	var conf live.Config
	withLive(t, func(c live.Config) (live.Client, error) { conf = c; return fake, nil })

	code, liveJSON, errs := inspect("--json", "--context", "prod", "--kubeconfig", "/k", "--timeout", "7s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if conf.Context != "prod" || conf.Kubeconfig != "/k" || conf.Timeout.Seconds() != 7 {
		t.Errorf("connected with %+v", conf)
	}
	code, fileJSON, errs := inspect("--json", "--from", inspectFixture)
	if code != 0 {
		t.Fatalf("--from: exit %d: %s", code, errs)
	}
	if liveJSON != fileJSON {
		t.Errorf("--json differs between the live cluster and its saved copy:\nlive %s\nfile %s", liveJSON, fileJSON)
	}

	code, text, _ := inspect("--context", "prod")
	for _, want := range []string{"context prod: 4 nodes, 3 with GPUs, 10 GPUs; 2.50 GPUs requested", "pending pods: 3, of which 2 fit nowhere", "ml/big-0"} {
		if code != 0 || !strings.Contains(text, want) {
			t.Errorf("exit %d, output lacks %q:\n%s", code, want, text)
		}
	}

	fake.got = nil
	code, text, _ = inspect("-n", "default", "--json")
	var rep struct {
		Pending []any `json:"pending"`
		Nodes   int   `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(text), &rep); code != 0 || err != nil || len(rep.Pending) != 0 || rep.Nodes != 4 {
		t.Errorf("--namespace default: exit %d, %v, %s", code, err, text)
	}
	if fmt.Sprint(fake.got) != "[default]" {
		t.Errorf("pod lists in namespaces %q, want [default]", fake.got)
	}
}

func TestClusterInspectLiveErrors(t *testing.T) {
	forbidden := &live.StatusError{Code: 403, Reason: "Forbidden",
		Message: `nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope`}
	withLive(t, func(live.Config) (live.Client, error) { return &fakeLive{err: forbidden}, nil })
	code, _, errs := inspect()
	for _, want := range []string{"list nodes cluster-wide: forbidden", `User "alice"`, "RBAC verbs get and list on nodes and pods", "gpufrag-inspect-rbac.yaml", "--from"} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr lacks %q: %s", code, want, errs)
		}
	}

	withLive(t, func(live.Config) (live.Client, error) { return nil, errors.New("boom") })
	for _, args := range [][]string{
		{"--from", inspectFixture, "--context", "x"},
		{"--from", inspectFixture, "-n", "ml"},
		{"--timeout", "0s"},
		{"--coverage", "0"},
	} {
		if code, _, errs := inspect(args...); code != 2 {
			t.Errorf("%q: exit %d, want 2: %s", args, code, errs)
		}
	}
}

// TestClusterInspectNoKubeconfig runs the real connection code in an
// environment with no kubeconfig and no service account.
func TestClusterInspectNoKubeconfig(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none")
	t.Setenv("KUBECONFIG", missing)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	code, _, errs := inspect()
	for _, want := range []string{"no kubeconfig found", missing, "--kubeconfig", "--from"} {
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr lacks %q: %s", code, want, errs)
		}
	}
}

// TestClusterInspectAPIServer runs inspect end to end (kubeconfig, context,
// the HTTP client, paging, field selector, error statuses) against a fake
// API server that answers two items per page. It is a TLS server: live
// sends no credentials to a plain-HTTP one.
func TestClusterInspectAPIServer(t *testing.T) {
	nodes, pods := fixtureObjects(t)
	var queries []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0ken" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		q := r.URL.Query()
		queries = append(queries, r.URL.Path+"?"+r.URL.RawQuery)
		if q.Get("limit") != strconv.Itoa(live.DefaultPageSize) {
			http.Error(w, "limit "+q.Get("limit"), http.StatusBadRequest)
			return
		}
		from, _ := strconv.Atoi(q.Get("continue"))
		var items []json.RawMessage
		var kind string
		switch r.URL.Path {
		case "/api/v1/nodes":
			kind = "NodeList"
			items = nodes
		case "/api/v1/pods":
			if q.Get("fieldSelector") != "status.phase!=Succeeded,status.phase!=Failed" {
				http.Error(w, "field selector "+q.Get("fieldSelector"), http.StatusBadRequest)
				return
			}
			kind = "PodList"
			items = pods
		case "/api/v1/namespaces/secret/pods":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,`+
				`"message":"pods is forbidden: User \"bob\" cannot list resource \"pods\" in the namespace \"secret\""}`)
			return
		default:
			http.NotFound(w, r)
			return
		}
		to := min(from+2, len(items))
		cont := ""
		if to < len(items) {
			cont = strconv.Itoa(to)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"apiVersion": "v1", "kind": kind,
			"metadata": map[string]any{"continue": cont}, "items": items[from:to]})
	}))
	defer srv.Close()

	kubeconfig := filepath.Join(t.TempDir(), "config")
	conf := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- {name: fake, cluster: {server: %q, certificate-authority-data: %s}}
- {name: nowhere, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u, user: {token: t0ken}}
contexts:
- {name: fake, context: {cluster: fake, user: u}}
- {name: nowhere, context: {cluster: nowhere, user: u}}
current-context: nowhere
`, srv.URL, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	if err := os.WriteFile(kubeconfig, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")

	code, liveJSON, errs := inspect("--kubeconfig", kubeconfig, "--context", "fake", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	_, fileJSON, _ := inspect("--from", inspectFixture, "--json")
	if liveJSON != fileJSON {
		t.Errorf("--json differs from the saved copy:\nlive %s\nfile %s", liveJSON, fileJSON)
	}
	// 4 nodes and 8 pods in pages of 2.
	var paths []string
	for _, q := range queries {
		paths = append(paths, q[:strings.Index(q, "?")])
		if strings.Count(q, "continue=") != 0 && !strings.Contains(q, "continue=2") && !strings.Contains(q, "continue=4") && !strings.Contains(q, "continue=6") {
			t.Errorf("unexpected continue token in %s", q)
		}
	}
	want := "[/api/v1/nodes /api/v1/nodes /api/v1/pods /api/v1/pods /api/v1/pods /api/v1/pods]"
	if fmt.Sprint(paths) != want {
		t.Errorf("requests %v, want %s", paths, want)
	}

	code, _, errs = inspect("--kubeconfig", kubeconfig, "--context", "fake", "-n", "secret")
	for _, w := range []string{"list pods in namespace secret: forbidden", `User "bob"`, "RBAC"} {
		if code != 1 || !strings.Contains(errs, w) {
			t.Errorf("exit %d, stderr lacks %s: %s", code, w, errs)
		}
	}
}

// TestClusterInspectHostileFiles holds cases 10, 15 and 16 of issue 13 at
// the command: documents that are no kubectl List fail with exit 1 and say
// what was expected; /dev/zero fails at its first byte; a cluster without
// pods lists its nodes.
func TestClusterInspectHostileFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ body, want string }{
		{"null", "starts with null: want a kubectl List (kubectl get nodes,pods -A -o json > cluster.json)"},
		{`{"kind":"Service","metadata":{"name":"s"}}`, `field "kind": is "Service": want a kubectl List`},
		{`{"kind":"PodList","items":[]}`, "no Node: inspection needs the nodes with their pods"},
	} {
		p := write("c.json", tc.body)
		code, out, errs := inspect("--from", p)
		if code != 1 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 with %q", tc.body, code, out, errs, tc.want)
		}
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		code, _, errs := inspect("--from", "/dev/zero")
		if code != 1 || !strings.Contains(errs, "/dev/zero: starts with a NUL byte (binary data, not JSON)") {
			t.Errorf("/dev/zero: exit %d, %s", code, errs)
		}
	}
	p := write("idle.json", `{"kind":"List","items":[
{"kind":"Node","metadata":{"name":"a"},"status":{"allocatable":{"cpu":"8","nvidia.com/gpu":"4"}}},
{"kind":"Node","metadata":{"name":"b"},"status":{"allocatable":{"cpu":"8","nvidia.com/gpu":"2"}}}]}`)
	code, out, errs := inspect("--from", p, "--all")
	if code != 0 {
		t.Fatalf("no pods: exit %d: %s", code, errs)
	}
	for _, want := range []string{"2 nodes, 2 with GPUs, 6 GPUs; 0.00 GPUs requested", "\na ", "\nb ", "whole-free GPU nodes: 2; partly used: 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("no pods: output lacks %q:\n%s", want, out)
		}
	}
}
