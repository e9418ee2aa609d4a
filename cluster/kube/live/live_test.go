package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/kube"
)

const fixture = "../testdata/cluster.json"

// fakeClient is an API server in memory: it holds objects as a NodeList's
// and a PodList's items (no kind), filters pods by namespace and both by
// equality label selectors, ignores field selectors (so the completed pod
// done-0 comes back and kube.Read must drop it), and pages with limit and
// continue (the token is the index of the next item). It records every
// request; fail, when set, answers a request instead.
type fakeClient struct {
	nodes, pods []json.RawMessage
	reqs        []request
	fail        func(r request) error
}

type request struct {
	resource, namespace string
	opts                ListOptions
}

func (f *fakeClient) ListNodes(_ context.Context, opts ListOptions) (*List, error) {
	return f.list(request{"nodes", "", opts}, f.nodes)
}

func (f *fakeClient) ListPods(_ context.Context, ns string, opts ListOptions) (*List, error) {
	return f.list(request{"pods", ns, opts}, f.pods)
}

func (f *fakeClient) list(r request, all []json.RawMessage) (*List, error) {
	f.reqs = append(f.reqs, r)
	if f.fail != nil {
		if err := f.fail(r); err != nil {
			return nil, err
		}
	}
	var items []json.RawMessage
	for _, it := range all {
		var o struct {
			Metadata struct {
				Namespace string            `json:"namespace"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(it, &o); err != nil {
			return nil, err
		}
		if r.namespace != "" && o.Metadata.Namespace != r.namespace {
			continue
		}
		if matches(r.opts.LabelSelector, o.Metadata.Labels) {
			items = append(items, it)
		}
	}
	from := 0
	if r.opts.Continue != "" {
		var err error
		if from, err = strconv.Atoi(r.opts.Continue); err != nil || from > len(items) {
			return nil, &StatusError{Code: http.StatusBadRequest, Message: "bad continue token " + r.opts.Continue}
		}
	}
	to := len(items)
	if r.opts.Limit > 0 && from+int(r.opts.Limit) < to {
		to = from + int(r.opts.Limit)
	}
	l := &List{Items: items[from:to]}
	if to < len(items) {
		l.Continue = strconv.Itoa(to)
	}
	return l, nil
}

// matches is an equality-only label selector ("a=b,c=d").
func matches(sel string, labels map[string]string) bool {
	for _, req := range strings.Split(sel, ",") {
		if req == "" {
			continue
		}
		k, v, _ := strings.Cut(req, "=")
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeClient) requests(resource string) []request {
	var out []request
	for _, r := range f.reqs {
		if r.resource == resource {
			out = append(out, r)
		}
	}
	return out
}

// fixtureItems reads the saved kubectl JSON into nodes and pods as an API
// server lists them: items without kind and apiVersion.
func fixtureItems(t testing.TB) (nodes, pods []json.RawMessage) {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Items {
		kind := string(o["kind"])
		delete(o, "kind")
		delete(o, "apiVersion")
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		switch kind {
		case `"Node"`:
			nodes = append(nodes, b)
		case `"Pod"`:
			pods = append(pods, b)
		default:
			t.Fatalf("kind %s in %s", kind, fixture)
		}
	}
	return nodes, pods
}

func newFake(t testing.TB) *fakeClient {
	nodes, pods := fixtureItems(t)
	return &fakeClient{nodes: nodes, pods: pods}
}

func readFixture(t testing.TB) *kube.Snapshot {
	t.Helper()
	f, err := os.Open(fixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := kube.Read(f, fixture)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sortPods(s *kube.Snapshot) {
	sort.Slice(s.Pods, func(a, b int) bool {
		return s.Pods[a].Namespace+"/"+s.Pods[a].Name < s.Pods[b].Namespace+"/"+s.Pods[b].Name
	})
}

func podNames(s *kube.Snapshot) []string {
	var out []string
	for _, p := range s.Pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	sort.Strings(out)
	return out
}

func nodeNames(s *kube.Snapshot) []string {
	var out []string
	for _, n := range s.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// TestLoadPagesAndMatchesSavedJSON lists the fixture cluster through the
// fake in pages of 3 and checks that the snapshot, and its inspection, are
// those of the same cluster saved by kubectl: no field is lost on the way.
func TestLoadPagesAndMatchesSavedJSON(t *testing.T) {
	f := newFake(t)
	got, err := Load(context.Background(), f, Options{PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := readFixture(t)
	sortPods(got)
	sortPods(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("live snapshot differs from the saved one:\n got %+v\nwant %+v", got, want)
	}
	if g, w := kube.Inspect(got, cluster.DefaultCoverage), kube.Inspect(want, cluster.DefaultCoverage); !reflect.DeepEqual(g, w) {
		t.Errorf("inspection differs:\n got %+v\nwant %+v", g, w)
	}

	// 4 nodes in pages of 3: two requests, the second continuing the first.
	// 8 pods (done-0 too: the fake ignores field selectors): three.
	checkPages(t, "nodes", f.requests("nodes"), []string{"", "3"}, "")
	checkPages(t, "pods", f.requests("pods"), []string{"", "3", "6"}, completedPods)

	// Spot checks that do not lean on kube.Read.
	if !got.Cordoned["gpu-c"] || len(got.Cordoned) != 1 {
		t.Errorf("cordoned %v, want gpu-c only", got.Cordoned)
	}
	if g := nodeNames(got); !reflect.DeepEqual(g, []string{"cpu-a", "gpu-a", "gpu-b", "gpu-c"}) {
		t.Errorf("nodes %v", g)
	}
	for _, n := range got.Nodes {
		if n.Name == "gpu-b" && (n.GPUs != 2 || n.Model != "T4" || n.MilliCPU != 32000 || n.MemoryMiB != 131072) {
			t.Errorf("gpu-b read as %+v, want 2 T4 GPUs, 32 CPUs, 128 GiB (alibabacloud.com/gpu-count, gpu-card-model)", n)
		}
	}
	for _, p := range got.Pods {
		switch p.Name {
		case "done-0":
			t.Errorf("completed pod done-0 kept")
		case "infer-0":
			if p.MilliGPU != 500 || p.NumGPU != 1 || !reflect.DeepEqual(p.GPUIndex, []int{1}) || p.Node != "gpu-b" {
				t.Errorf("infer-0 read as %+v, want half of GPU 1 of gpu-b", p)
			}
		case "t4-0":
			if p.Node != "" || !reflect.DeepEqual(p.GPUSpec, []string{"T4"}) || p.Phase != "Pending" {
				t.Errorf("t4-0 read as %+v, want pending, T4 only", p)
			}
		}
	}
	if len(got.Pods) != 6 {
		t.Errorf("%d pods, want 6 (7 listed, done-0 completed)", len(got.Pods))
	}
}

func checkPages(t *testing.T, what string, reqs []request, continues []string, fieldSel string) {
	t.Helper()
	var got []string
	for _, r := range reqs {
		got = append(got, r.opts.Continue)
		if r.opts.Limit != 3 {
			t.Errorf("%s: limit %d, want 3", what, r.opts.Limit)
		}
		if r.opts.FieldSelector != fieldSel {
			t.Errorf("%s: field selector %q, want %q", what, r.opts.FieldSelector, fieldSel)
		}
	}
	if !reflect.DeepEqual(got, continues) {
		t.Errorf("%s: continue tokens %q, want %q", what, got, continues)
	}
}

func TestLoadDefaultPageSize(t *testing.T) {
	f := newFake(t)
	if _, err := Load(context.Background(), f, Options{}); err != nil {
		t.Fatal(err)
	}
	if reqs := f.requests("pods"); len(reqs) != 1 || reqs[0].opts.Limit != DefaultPageSize {
		t.Errorf("requests %+v, want one with limit %d", reqs, DefaultPageSize)
	}
}

func TestLoadNamespace(t *testing.T) {
	f := newFake(t)
	s, err := Load(context.Background(), f, Options{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if g := podNames(s); !reflect.DeepEqual(g, []string{"default/web-0"}) {
		t.Errorf("pods %v, want default/web-0 only", g)
	}
	if len(s.Nodes) != 4 {
		t.Errorf("%d nodes, want all 4: nodes are cluster-wide", len(s.Nodes))
	}
	var nss []string
	for _, r := range f.requests("pods") {
		nss = append(nss, r.namespace)
	}
	if !reflect.DeepEqual(nss, []string{"default"}) {
		t.Errorf("pod list namespaces %q", nss)
	}
}

func TestLoadSelectors(t *testing.T) {
	f := newFake(t)
	for i, p := range f.pods {
		var o map[string]any
		if err := json.Unmarshal(p, &o); err != nil {
			t.Fatal(err)
		}
		if md := o["metadata"].(map[string]any); md["name"] == "train-1" {
			md["labels"] = map[string]string{"team": "a"}
			f.pods[i], _ = json.Marshal(o)
		}
	}
	s, err := Load(context.Background(), f, Options{NodeSelector: "nvidia.com/gpu.product=A100"})
	if err != nil {
		t.Fatal(err)
	}
	if g := nodeNames(s); !reflect.DeepEqual(g, []string{"gpu-a", "gpu-c"}) {
		t.Errorf("nodes %v, want the A100 nodes", g)
	}
	// infer-0 (gpu-b) and web-0 (cpu-a) run outside the selection; the
	// pending pods stay.
	if g := podNames(s); !reflect.DeepEqual(g, []string{"ml/big-0", "ml/t4-0", "ml/train-0", "ml/train-1"}) {
		t.Errorf("pods %v", g)
	}
	if r := kube.Inspect(s, cluster.DefaultCoverage); len(r.Unplaceable) != 0 {
		t.Errorf("unplaceable %v: pods of unselected nodes leaked in", r.Unplaceable)
	}
	if r := f.requests("nodes"); r[0].opts.LabelSelector != "nvidia.com/gpu.product=A100" {
		t.Errorf("node label selector %q not passed on", r[0].opts.LabelSelector)
	}

	s, err = Load(context.Background(), f, Options{PodSelector: "team=a"})
	if err != nil {
		t.Fatal(err)
	}
	if g := podNames(s); !reflect.DeepEqual(g, []string{"ml/train-1"}) {
		t.Errorf("pods %v, want ml/train-1", g)
	}
	if last := f.reqs[len(f.reqs)-1]; last.opts.LabelSelector != "team=a" {
		t.Errorf("pod label selector %q not passed on", last.opts.LabelSelector)
	}
}

func TestLoadAccessErrors(t *testing.T) {
	forbidden := func(msg string) error { return &StatusError{Code: 403, Reason: "Forbidden", Message: msg} }
	for _, tc := range []struct {
		name     string
		resource string
		ns       string
		err      error
		want     []string
	}{
		{"forbidden pods", "pods", "", forbidden(`pods is forbidden: User "system:serviceaccount:ml:gpufrag" cannot list resource "pods" in API group "" at the cluster scope`),
			[]string{"list pods cluster-wide: forbidden", "system:serviceaccount:ml:gpufrag", "RBAC verbs get and list on nodes and pods",
				"deploy/kubernetes/gpufrag-inspect-rbac.yaml", "--from"}},
		{"forbidden nodes", "nodes", "ml", forbidden("no"), []string{"list nodes cluster-wide: forbidden", "RBAC"}},
		{"forbidden pods in namespace", "pods", "ml", forbidden("no"), []string{"list pods in namespace ml: forbidden"}},
		{"unauthorized", "nodes", "", &StatusError{Code: 401, Reason: "Unauthorized", Message: "token expired"},
			[]string{"list nodes", "401 Unauthorized", "token expired", "renew"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.fail = func(r request) error {
				if r.resource == tc.resource {
					return tc.err
				}
				return nil
			}
			_, err := Load(context.Background(), f, Options{Namespace: tc.ns})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrAccess) {
				t.Errorf("%v: not ErrAccess", err)
			}
			var ae *AccessError
			if !errors.As(err, &ae) || ae.Resource != tc.resource || ae.Verb != "list" {
				t.Errorf("%v: want an AccessError for list %s", err, tc.resource)
			}
			var se *StatusError
			if !errors.As(err, &se) || se != tc.err {
				t.Errorf("%v: API status lost", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoadOtherErrorWrapped(t *testing.T) {
	f := newFake(t)
	unavailable := &StatusError{Code: 503, Reason: "ServiceUnavailable", Message: "etcd down"}
	f.fail = func(request) error { return unavailable }
	_, err := Load(context.Background(), f, Options{})
	var se *StatusError
	if err == nil || errors.Is(err, ErrAccess) || !errors.As(err, &se) || se.Code != 503 || err.Error() != "list nodes: etcd down" {
		t.Errorf("got %v, want a wrapped 503 naming list nodes", err)
	}
}

// TestLoadContinueExpired: a continue token that expired (410) starts the
// listing over, without duplicating the items already read; an expiry
// that keeps happening is an error.
func TestLoadContinueExpired(t *testing.T) {
	for _, expiries := range []int{1, maxRestarts, maxRestarts + 1} {
		t.Run(fmt.Sprint(expiries), func(t *testing.T) {
			f := newFake(t)
			left := expiries
			f.fail = func(r request) error {
				if r.resource == "pods" && r.opts.Continue != "" && left > 0 {
					left--
					return &StatusError{Code: http.StatusGone, Reason: "Expired", Message: "continue token too old"}
				}
				return nil
			}
			s, err := Load(context.Background(), f, Options{PageSize: 2})
			if expiries > maxRestarts {
				if !isStatus(err, http.StatusGone) {
					t.Fatalf("got %v, want the 410 after %d restarts", err, maxRestarts)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Pods) != 6 {
				t.Errorf("%d pods, want 6: %v", len(s.Pods), podNames(s))
			}
		})
	}
}

func TestLoadRepeatedContinue(t *testing.T) {
	nodes, _ := fixtureItems(t)
	_, err := Load(context.Background(), &echoClient{nodes: nodes}, Options{})
	if err == nil || !strings.Contains(err.Error(), `list nodes: the API server answered continue token "t" with itself`) {
		t.Errorf("got %v, want the repeated token named", err)
	}
}

// echoClient answers each node list with the token "t": the second request
// gets its own token back.
type echoClient struct{ nodes []json.RawMessage }

func (c *echoClient) ListNodes(context.Context, ListOptions) (*List, error) {
	return &List{Items: c.nodes[:1], Continue: "t"}, nil
}

func (c *echoClient) ListPods(context.Context, string, ListOptions) (*List, error) {
	return &List{}, nil
}

func TestSnapshotErrorNamesObject(t *testing.T) {
	bad := json.RawMessage(`{"metadata":{"name":"bad","namespace":"ml","annotations":{"alibabacloud.com/gpu-milli":"lots"}}}`)
	nodes, _ := fixtureItems(t)
	_, err := Snapshot(nodes, []json.RawMessage{bad})
	if err == nil || !errors.Is(err, cluster.ErrBadInput) || !strings.Contains(err.Error(), "pod ml/bad") ||
		!strings.Contains(err.Error(), kube.AnnoGPUMilli) {
		t.Errorf("got %v, want a bad-input error naming pod ml/bad and the annotation", err)
	}
	for _, item := range []string{`[]`, `"x"`, ``, `{`, `null`} {
		_, err := Snapshot(nodes, []json.RawMessage{json.RawMessage(item)})
		if err == nil || !errors.Is(err, cluster.ErrBadInput) || !strings.Contains(err.Error(), "pods[0]") {
			t.Errorf("pod %q: got %v, want a bad-input error naming pods[0]", item, err)
		}
	}
	// An empty object is read (and refused by kube for its missing name).
	if _, err := Snapshot(nodes, []json.RawMessage{json.RawMessage(" { } ")}); err == nil || !errors.Is(err, cluster.ErrBadInput) {
		t.Errorf("empty pod: got %v", err)
	}
}

// TestSnapshotDEL: an annotation holding DEL (0x7f), which the API server
// sends raw, is read, not refused as binary data (found by FuzzSnapshot).
func TestSnapshotDEL(t *testing.T) {
	nodes, _ := fixtureItems(t)
	pod := json.RawMessage("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"annotations\":{\"note\":\"a\x7fb\"}},\"spec\":{\"nodeName\":\"gpu-a\"}}")
	if !json.Valid(pod) {
		t.Fatal("the pod is not valid JSON")
	}
	s, err := Snapshot(nodes[:1], []json.RawMessage{pod})
	if err != nil || len(s.Pods) != 1 {
		t.Fatalf("got %v, %+v; want the pod read", err, s)
	}
}

func TestSource(t *testing.T) {
	f := newFake(t)
	src := Source(f, Options{}, 0)
	got, err := src(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// From the fixture: 4 nodes; GPUs 4 (gpu-a) + 2 (gpu-b) + 4 (gpu-c);
	// allocated train-0's 2 GPUs and infer-0's half GPU; whole free only
	// gpu-c; pending train-1, big-0 and t4-0.
	want := State{Nodes: 4, GPUs: 10, AllocatedGPUs: 2.5, WholeFreeNodes: 1, PendingPods: 3,
		StrandedNodes: kube.Inspect(readFixture(t), cluster.DefaultCoverage).StrandedNodes}
	if got != want {
		t.Errorf("state %+v, want %+v", got, want)
	}
	// A second call lists again: a pod bound since shows up.
	kept := f.pods[:0]
	for _, p := range f.pods {
		if !strings.Contains(string(p), `"train-1"`) {
			kept = append(kept, p)
		}
	}
	f.pods = kept
	again, err := src(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if again.PendingPods != 2 {
		t.Errorf("pending %d after deleting a pending pod, want 2", again.PendingPods)
	}

	f.fail = func(request) error { return &StatusError{Code: 403, Message: "no"} }
	if _, err := src(context.Background()); !errors.Is(err, ErrAccess) {
		t.Errorf("got %v, want ErrAccess", err)
	}
}

// TestLoadNoNodes: a cluster (or a selector) without nodes is an error
// saying so, not an empty report.
func TestLoadNoNodes(t *testing.T) {
	_, err := Load(context.Background(), newFake(t), Options{NodeSelector: "pool=none"})
	if !errors.Is(err, kube.ErrNoNodes) || !strings.Contains(err.Error(), `no node matches the selector "pool=none"`) {
		t.Errorf("selector matching nothing: %v", err)
	}
	_, err = Load(context.Background(), &fakeClient{}, Options{})
	if !errors.Is(err, kube.ErrNoNodes) || !strings.Contains(err.Error(), "listed no nodes") {
		t.Errorf("empty cluster: %v", err)
	}
}
