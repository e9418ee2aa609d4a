package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/kube"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clienttesting "k8s.io/client-go/testing"
)

// The fake is client-go's own test machinery (testing.Fake with its
// reactor chain over an ObjectTracker), driven through the two-method
// Client instead of the typed fake clientset, whose import would compile
// every API group of k8s.io/api (see the package doc).

const fixture = "../testdata/cluster.json"

var (
	nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")
	nodesGVK = corev1.SchemeGroupVersion.WithKind("Node")
	podsGVR  = corev1.SchemeGroupVersion.WithResource("pods")
	podsGVK  = corev1.SchemeGroupVersion.WithKind("Pod")
)

type fakeClient struct {
	clienttesting.Fake
	tracker clienttesting.ObjectTracker
}

func newFake(t testing.TB, objs ...runtime.Object) *fakeClient {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	f := &fakeClient{tracker: clienttesting.NewObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder())}
	for _, o := range objs {
		if err := f.tracker.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	f.AddReactor("*", "*", clienttesting.ObjectReaction(f.tracker))
	return f
}

// selected keeps the items matching the action's label selector, as the
// typed fake clientset does (the tracker ignores selectors).
func selected(opts metav1.ListOptions, items []runtime.Object) ([]runtime.Object, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, err
	}
	var out []runtime.Object
	for _, o := range items {
		acc, err := meta.Accessor(o)
		if err != nil {
			return nil, err
		}
		if sel.Matches(labels.Set(acc.GetLabels())) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (f *fakeClient) ListNodes(_ context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
	a := clienttesting.NewRootListActionWithOptions(nodesGVR, nodesGVK, opts)
	// client-go v0.37's NewRootListActionWithOptions keeps only the
	// selectors of opts (its namespaced twin keeps all): restore limit and
	// continue, which the pager reads.
	a.ListOptions = opts
	obj, err := f.Invokes(a, &corev1.NodeList{})
	if err != nil {
		return nil, err
	}
	l := obj.(*corev1.NodeList)
	out := &corev1.NodeList{ListMeta: l.ListMeta}
	for i := range l.Items {
		if ok, err := selected(opts, []runtime.Object{&l.Items[i]}); err != nil {
			return nil, err
		} else if len(ok) == 1 {
			out.Items = append(out.Items, l.Items[i])
		}
	}
	return out, nil
}

func (f *fakeClient) ListPods(_ context.Context, ns string, opts metav1.ListOptions) (*corev1.PodList, error) {
	obj, err := f.Invokes(clienttesting.NewListActionWithOptions(podsGVR, podsGVK, ns, opts), &corev1.PodList{})
	if err != nil {
		return nil, err
	}
	l := obj.(*corev1.PodList)
	out := &corev1.PodList{ListMeta: l.ListMeta}
	for i := range l.Items {
		if ok, err := selected(opts, []runtime.Object{&l.Items[i]}); err != nil {
			return nil, err
		} else if len(ok) == 1 {
			out.Items = append(out.Items, l.Items[i])
		}
	}
	return out, nil
}

// pager makes the fake answer list requests of resource page by page, as
// an API server does with limit and continue: the continue token is the
// index of the next item. It records the options of each request.
func (f *fakeClient) pager(resource string, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) *[]metav1.ListOptions {
	var seen []metav1.ListOptions
	f.PrependReactor("list", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		la := a.(clienttesting.ListActionImpl)
		opts := la.ListOptions
		seen = append(seen, opts)
		all, err := f.tracker.List(gvr, gvk, la.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		items, err := meta.ExtractList(all)
		if err != nil {
			return true, nil, err
		}
		from := 0
		if opts.Continue != "" {
			if from, err = strconv.Atoi(opts.Continue); err != nil {
				return true, nil, apierrors.NewBadRequest("bad continue token " + opts.Continue)
			}
		}
		to := len(items)
		if opts.Limit > 0 && from+int(opts.Limit) < to {
			to = from + int(opts.Limit)
		}
		if err := meta.SetList(all, items[from:to]); err != nil {
			return true, nil, err
		}
		if to < len(items) {
			all.(metav1.ListInterface).SetContinue(strconv.Itoa(to))
		}
		return true, all, nil
	})
	return &seen
}

// typedFixture decodes the saved kubectl JSON into typed objects, as the
// API server would send them.
func typedFixture(t testing.TB) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	var out []runtime.Object
	for _, raw := range list.Items {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(raw, &tm); err != nil {
			t.Fatal(err)
		}
		var o runtime.Object
		switch tm.Kind {
		case "Node":
			o = &corev1.Node{}
		case "Pod":
			o = &corev1.Pod{}
		default:
			t.Fatalf("kind %q in %s", tm.Kind, fixture)
		}
		if err := json.Unmarshal(raw, o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
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
	f := newFake(t, typedFixture(t)...)
	nodeReqs := f.pager("nodes", nodesGVR, nodesGVK)
	podReqs := f.pager("pods", podsGVR, podsGVK)
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
	checkPages(t, "nodes", *nodeReqs, []string{"", "3"}, "")
	checkPages(t, "pods", *podReqs, []string{"", "3", "6"}, completedPods)

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

func checkPages(t *testing.T, what string, reqs []metav1.ListOptions, continues []string, fieldSel string) {
	t.Helper()
	var got []string
	for _, r := range reqs {
		got = append(got, r.Continue)
		if r.Limit != 3 {
			t.Errorf("%s: limit %d, want 3", what, r.Limit)
		}
		if r.FieldSelector != fieldSel {
			t.Errorf("%s: field selector %q, want %q", what, r.FieldSelector, fieldSel)
		}
	}
	if !reflect.DeepEqual(got, continues) {
		t.Errorf("%s: continue tokens %q, want %q", what, got, continues)
	}
}

func TestLoadDefaultPageSize(t *testing.T) {
	f := newFake(t, typedFixture(t)...)
	reqs := f.pager("pods", podsGVR, podsGVK)
	if _, err := Load(context.Background(), f, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(*reqs) != 1 || (*reqs)[0].Limit != DefaultPageSize {
		t.Errorf("requests %+v, want one with limit %d", *reqs, DefaultPageSize)
	}
}

func TestLoadNamespace(t *testing.T) {
	f := newFake(t, typedFixture(t)...)
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
	for _, a := range f.Actions() {
		if a.GetResource().Resource == "pods" {
			nss = append(nss, a.GetNamespace())
		}
	}
	if !reflect.DeepEqual(nss, []string{"default"}) {
		t.Errorf("pod list namespaces %q", nss)
	}
}

func TestLoadSelectors(t *testing.T) {
	objs := typedFixture(t)
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && p.Name == "train-1" {
			p.Labels = map[string]string{"team": "a"}
		}
	}
	f := newFake(t, objs...)
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

	s, err = Load(context.Background(), f, Options{PodSelector: "team=a"})
	if err != nil {
		t.Fatal(err)
	}
	if g := podNames(s); !reflect.DeepEqual(g, []string{"ml/train-1"}) {
		t.Errorf("pods %v, want ml/train-1", g)
	}
	last := f.Actions()[len(f.Actions())-1].(clienttesting.ListActionImpl)
	if last.ListOptions.LabelSelector != "team=a" {
		t.Errorf("pod label selector %q not passed on", last.ListOptions.LabelSelector)
	}
}

func TestLoadAccessErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resource string
		ns       string
		err      error
		want     []string
	}{
		{"forbidden pods", "pods", "", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
			errors.New(`User "system:serviceaccount:ml:gpufrag" cannot list resource "pods" in API group "" at the cluster scope`)),
			[]string{"list pods cluster-wide: forbidden", "system:serviceaccount:ml:gpufrag", "RBAC verbs get and list on nodes and pods",
				"deploy/kubernetes/gpufrag-inspect-rbac.yaml", "--from"}},
		{"forbidden nodes", "nodes", "ml", apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no")),
			[]string{"list nodes cluster-wide: forbidden", "RBAC"}},
		{"forbidden pods in namespace", "pods", "ml", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")),
			[]string{"list pods in namespace ml: forbidden"}},
		{"unauthorized", "nodes", "", apierrors.NewUnauthorized("token expired"),
			[]string{"list nodes", "401 Unauthorized", "token expired", "renew"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, typedFixture(t)...)
			f.PrependReactor("list", tc.resource, func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
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
			if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
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
	f.PrependReactor("list", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd down")
	})
	_, err := Load(context.Background(), f, Options{})
	if err == nil || errors.Is(err, ErrAccess) || !apierrors.IsServiceUnavailable(err) || !strings.HasPrefix(err.Error(), "list nodes: ") {
		t.Errorf("got %v, want a wrapped 503 naming list nodes", err)
	}
}

// TestLoadContinueExpired: a continue token that expired (410) starts the
// listing over, without duplicating the items already read; an expiry
// that keeps happening is an error.
func TestLoadContinueExpired(t *testing.T) {
	for _, expiries := range []int{1, maxRestarts, maxRestarts + 1} {
		t.Run(fmt.Sprint(expiries), func(t *testing.T) {
			f := newFake(t, typedFixture(t)...)
			f.pager("pods", podsGVR, podsGVK)
			left := expiries
			f.PrependReactor("list", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.(clienttesting.ListActionImpl).ListOptions.Continue != "" && left > 0 {
					left--
					return true, nil, apierrors.NewResourceExpired("continue token too old")
				}
				return false, nil, nil
			})
			s, err := Load(context.Background(), f, Options{PageSize: 2})
			if expiries > maxRestarts {
				if err == nil || !apierrors.IsResourceExpired(err) {
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

func TestSnapshotErrorNamesObject(t *testing.T) {
	bad := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "ml",
		Annotations: map[string]string{kube.AnnoGPUMilli: "lots"}}}
	_, err := Snapshot(nil, []corev1.Pod{bad})
	if err == nil || !errors.Is(err, cluster.ErrBadInput) || !strings.Contains(err.Error(), "pod ml/bad") ||
		!strings.Contains(err.Error(), kube.AnnoGPUMilli) {
		t.Errorf("got %v, want a bad-input error naming pod ml/bad and the annotation", err)
	}
}

func TestSource(t *testing.T) {
	f := newFake(t, typedFixture(t)...)
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
	if err := f.tracker.Delete(podsGVR, "ml", "train-1"); err != nil {
		t.Fatal(err)
	}
	again, err := src(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if again.PendingPods != 2 {
		t.Errorf("pending %d after deleting a pending pod, want 2", again.PendingPods)
	}

	f.PrependReactor("list", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no"))
	})
	if _, err := src(context.Background()); !errors.Is(err, ErrAccess) {
		t.Errorf("got %v, want ErrAccess", err)
	}
}

// TestLoadNoNodes: a cluster (or a selector) without nodes is an error
// saying so, not an empty report.
func TestLoadNoNodes(t *testing.T) {
	f := newFake(t, typedFixture(t)...)
	_, err := Load(context.Background(), f, Options{NodeSelector: "pool=none"})
	if !errors.Is(err, kube.ErrNoNodes) || !strings.Contains(err.Error(), `no node matches the selector "pool=none"`) {
		t.Errorf("selector matching nothing: %v", err)
	}
	_, err = Load(context.Background(), newFake(t), Options{})
	if !errors.Is(err, kube.ErrNoNodes) || !strings.Contains(err.Error(), "listed no nodes") {
		t.Errorf("empty cluster: %v", err)
	}
}
