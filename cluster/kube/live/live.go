// Package live reads a running Kubernetes cluster's nodes and pods through
// client-go and hands them to package kube, which turns them into the
// cluster model and inspects them (allocatable and requested GPUs per node,
// whole-free and stranded nodes, FGD fragmentation, pending pods that fit
// nowhere).
//
// It lists nodes (cluster-wide) and pods (all namespaces or one) page by
// page, leaving completed pods out with a field selector, and converts the
// typed core/v1 objects to kubectl's JSON form, which kube.Read parses: one
// reader for saved and live clusters, so a field read from `kubectl get -o
// json` is read from the API the same way.
//
// Compile cost: the typed clientset (k8s.io/client-go/kubernetes and even
// its typed/core/v1 package) pulls in k8s.io/client-go/kubernetes/scheme
// and with it every API group of k8s.io/api (55 packages). This package
// talks to the API with a rest.RESTClient over a scheme holding core/v1
// only, which keeps those groups out of every build and test binary. Its
// Client interface is two methods; an existing typed clientset adapts to it
// in a few lines (see Client).
//
// The account needs RBAC verbs get and list on nodes and pods (see
// deploy/kubernetes/gpufrag-inspect-rbac.yaml).
package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/kube"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Client lists nodes and pods. NewClient returns one for a real cluster.
// A typed clientset adapts to it with
//
//	func (a adapter) ListNodes(ctx context.Context, o metav1.ListOptions) (*corev1.NodeList, error) {
//		return a.cs.CoreV1().Nodes().List(ctx, o)
//	}
//	func (a adapter) ListPods(ctx context.Context, ns string, o metav1.ListOptions) (*corev1.PodList, error) {
//		return a.cs.CoreV1().Pods(ns).List(ctx, o)
//	}
type Client interface {
	ListNodes(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error)
	// ListPods lists the pods of namespace, of all namespaces when it is
	// empty.
	ListPods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error)
}

// Options select what Load lists.
type Options struct {
	// Namespace restricts the pods listed; empty means all namespaces.
	// Nodes are always listed cluster-wide, so GPUs used by pods of other
	// namespaces look idle: use it only where the namespace owns its nodes
	// (select them with NodeSelector) or RBAC allows no more.
	Namespace string
	// NodeSelector is a label selector for the nodes ("pool=a100"). Pods
	// bound to nodes outside the selection are left out; pending pods are
	// checked against the selected nodes only.
	NodeSelector string
	// PodSelector is a label selector for the pods.
	PodSelector string
	// PageSize is the number of objects asked for per request; 0 means
	// DefaultPageSize.
	PageSize int64
}

// DefaultPageSize is the page size of a list request: kubectl's own chunk
// size (kubectl get --chunk-size defaults to 500), small enough that one
// response of pods stays a few MB, large enough that a 10,000-pod cluster
// takes 20 requests.
const DefaultPageSize = 500

// completedPods is the field selector that leaves out pods holding no
// resources; kube.Read drops them too, so a server that ignores it changes
// nothing but the transfer.
const completedPods = "status.phase!=Succeeded,status.phase!=Failed"

// maxRestarts bounds how often one listing starts over after its continue
// token expired (410 Gone) before Load gives up.
const maxRestarts = 2

// ErrAccess is wrapped by an *AccessError.
var ErrAccess = errors.New("live: access denied")

// AccessError is a list request the API server refused (401 or 403), with
// the permission the account lacks.
type AccessError struct {
	Verb, Resource string
	Namespace      string // empty: cluster-wide
	Unauthorized   bool   // 401: the credentials, not RBAC, were refused
	Err            error
}

func (e *AccessError) Error() string {
	scope := "cluster-wide"
	if e.Namespace != "" {
		scope = "in namespace " + e.Namespace
	}
	if e.Unauthorized {
		return fmt.Sprintf("%s %s: the API server refused the credentials (401 Unauthorized: %v): renew them (kubectl get nodes must work with the same kubeconfig and context), or save the cluster with kubectl get nodes,pods -A -o json and use --from",
			e.Verb, e.Resource, e.Err)
	}
	return fmt.Sprintf("%s %s %s: forbidden (%v): the account needs RBAC verbs get and list on nodes and pods, cluster-wide (kubectl apply -f deploy/kubernetes/gpufrag-inspect-rbac.yaml binds a ClusterRole granting them), or save the cluster with kubectl get nodes,pods -A -o json and use --from",
		e.Verb, e.Resource, scope, e.Err)
}

// Unwrap returns ErrAccess and the API error, so both errors.Is(err,
// ErrAccess) and apierrors.IsForbidden(err) hold.
func (e *AccessError) Unwrap() []error { return []error{ErrAccess, e.Err} }

func apiError(err error, resource, namespace string) error {
	switch {
	case apierrors.IsForbidden(err):
		return &AccessError{Verb: "list", Resource: resource, Namespace: namespace, Err: err}
	case apierrors.IsUnauthorized(err):
		return &AccessError{Verb: "list", Resource: resource, Namespace: namespace, Unauthorized: true, Err: err}
	}
	return fmt.Errorf("list %s: %w", resource, err)
}

// Load lists the cluster's nodes and pods and reads them into a snapshot,
// as kube.Read reads `kubectl get nodes,pods -A -o json`.
func Load(ctx context.Context, c Client, opts Options) (*kube.Snapshot, error) {
	nodes, err := listNodes(ctx, c, opts)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		if opts.NodeSelector != "" {
			return nil, fmt.Errorf("live: no node matches the selector %q: check it with kubectl get nodes -l '%s': %w", opts.NodeSelector, opts.NodeSelector, kube.ErrNoNodes)
		}
		return nil, fmt.Errorf("live: the API server listed no nodes: %w", kube.ErrNoNodes)
	}
	pods, err := listPods(ctx, c, opts)
	if err != nil {
		return nil, err
	}
	if opts.NodeSelector != "" {
		in := make(map[string]bool, len(nodes))
		for i := range nodes {
			in[nodes[i].Name] = true
		}
		kept := pods[:0]
		for _, p := range pods {
			if p.Spec.NodeName == "" || in[p.Spec.NodeName] {
				kept = append(kept, p)
			}
		}
		pods = kept
	}
	return Snapshot(nodes, pods)
}

// Snapshot reads typed nodes and pods into a snapshot through kube.Read,
// so both sources share one reader. An object kube cannot read gives an
// error naming it ("pod ns/name: ...").
func Snapshot(nodes []corev1.Node, pods []corev1.Pod) (*kube.Snapshot, error) {
	items := make([]any, 0, len(nodes)+len(pods))
	names := make([]string, 0, cap(items))
	for i := range nodes {
		n := nodes[i] // shallow copy: only TypeMeta and ManagedFields change
		n.TypeMeta = metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}
		n.ManagedFields = nil
		items = append(items, &n)
		names = append(names, "node "+n.Name)
	}
	for i := range pods {
		p := pods[i]
		p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		p.ManagedFields = nil
		items = append(items, &p)
		names = append(names, "pod "+p.Namespace+"/"+p.Name)
	}
	data, err := json.Marshal(struct {
		Kind  string `json:"kind"`
		Items []any  `json:"items"`
	}{"List", items})
	if err != nil {
		return nil, fmt.Errorf("live: encoding the listed objects: %w", err)
	}
	s, err := kube.Read(bytes.NewReader(data), "cluster API")
	if err != nil {
		var ie *cluster.InputError
		if errors.As(err, &ie) {
			var i int
			if _, serr := fmt.Sscanf(ie.Field, "items[%d]", &i); serr == nil && i >= 0 && i < len(names) {
				ie.Field = names[i]
			}
		}
		return nil, err
	}
	return s, nil
}

func pageSize(o Options) int64 {
	if o.PageSize > 0 {
		return o.PageSize
	}
	return DefaultPageSize
}

func listNodes(ctx context.Context, c Client, o Options) ([]corev1.Node, error) {
	var out []corev1.Node
	opts := metav1.ListOptions{LabelSelector: o.NodeSelector, Limit: pageSize(o)}
	for restarts := 0; ; {
		l, err := c.ListNodes(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" && restarts < maxRestarts {
			restarts++
			out, opts.Continue = nil, ""
			continue
		}
		if err != nil {
			return nil, apiError(err, "nodes", "")
		}
		out = append(out, l.Items...)
		if opts.Continue = l.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

func listPods(ctx context.Context, c Client, o Options) ([]corev1.Pod, error) {
	var out []corev1.Pod
	opts := metav1.ListOptions{LabelSelector: o.PodSelector, FieldSelector: completedPods, Limit: pageSize(o)}
	for restarts := 0; ; {
		l, err := c.ListPods(ctx, o.Namespace, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" && restarts < maxRestarts {
			restarts++
			out, opts.Continue = nil, ""
			continue
		}
		if err != nil {
			return nil, apiError(err, "pods", o.Namespace)
		}
		out = append(out, l.Items...)
		if opts.Continue = l.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}
