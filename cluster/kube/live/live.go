// Package live reads a running Kubernetes cluster's nodes and pods from
// its API server and hands them to package kube, which turns them into the
// cluster model and inspects them (allocatable and requested GPUs per node,
// whole-free and stranded nodes, FGD fragmentation, pending pods that fit
// nowhere).
//
// It lists nodes (cluster-wide) and pods (all namespaces or one) page by
// page, leaving completed pods out with a field selector, and hands the
// objects, as the API server sent them (kubectl's JSON form), to kube.Read:
// one reader for saved and live clusters, so a field read from `kubectl
// get -o json` is read from the API the same way.
//
// Connection: Resolve reads the kubeconfig as kubectl does ($KUBECONFIG's
// files merged, ~/.kube/config, a context; paths relative to their file;
// certificate-authority, client certificates and keys as files or -data,
// insecure-skip-tls-verify, tls-server-name, proxy-url; token, tokenFile,
// username and password, exec credential plugins of
// client.authentication.k8s.io/v1 and v1beta1; impersonation), else the
// in-cluster service account (its token read again at each request, as
// kubelet rotates it). Legacy auth-provider entries are refused with a
// hint to their exec plugins. NewClient talks to the API server over
// net/http: GET requests with JSON answers, rate-limited client-side.
//
// Compile cost: this package used k8s.io/client-go (with k8s.io/api and
// apimachinery) until issue 29: about 150 of the ~200 CPU-seconds a cold
// build of cmd/gpufrag took. Two list calls and a kubeconfig reader do not
// need it; now it uses the standard library, go.yaml.in/yaml/v3 and
// golang.org/x/time/rate (docs/architecture.md, "Build cost", has the
// measurements).
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
	"net/http"
	"strings"

	"github.com/gpufrag/gpufrag/cluster"
	"github.com/gpufrag/gpufrag/cluster/kube"
	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// Client lists nodes and pods, one page per call. NewClient returns one
// for a real cluster. An API error is a *StatusError (its Code 401, 403 and
// 410 are told apart).
type Client interface {
	ListNodes(ctx context.Context, opts ListOptions) (*List, error)
	// ListPods lists the pods of namespace, of all namespaces when it is
	// empty.
	ListPods(ctx context.Context, namespace string, opts ListOptions) (*List, error)
}

// ListOptions are the parameters of one list request (the query parameters
// of the API's list call that Load sets).
type ListOptions struct {
	LabelSelector string
	FieldSelector string
	Limit         int64
	Continue      string
}

// List is one page of a list: its objects as the API server sent them
// (JSON objects without kind, as in a NodeList or PodList) and the
// continue token of the next page, empty on the last.
type List struct {
	Items    []json.RawMessage
	Continue string
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
// ErrAccess) and errors.As(err, **StatusError) hold.
func (e *AccessError) Unwrap() []error { return []error{ErrAccess, e.Err} }

func apiError(err error, resource, namespace string) error {
	switch {
	case isStatus(err, http.StatusForbidden):
		return &AccessError{Verb: "list", Resource: resource, Namespace: namespace, Err: err}
	case isStatus(err, http.StatusUnauthorized):
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
		for _, n := range nodes {
			var m meta
			if json.Unmarshal(n, &m) == nil {
				in[m.Metadata.Name] = true
			}
		}
		kept := pods[:0]
		for _, p := range pods {
			var m meta
			if json.Unmarshal(p, &m) != nil || m.Spec.NodeName == "" || in[m.Spec.NodeName] {
				kept = append(kept, p) // a pod that does not decode is kube.Read's to name
			}
		}
		pods = kept
	}
	return Snapshot(nodes, pods)
}

// meta is what Load and Snapshot read of an object themselves.
type meta struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
}

// Snapshot reads nodes and pods, JSON objects as a NodeList's and a
// PodList's items, into a snapshot through kube.Read, so both sources share
// one reader. An object kube cannot read gives an error naming it ("pod
// ns/name: ..."); one that is not a JSON object, an error naming its
// place.
func Snapshot(nodes, pods []json.RawMessage) (*kube.Snapshot, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"kind":"List","items":[`)
	n := 0
	for _, l := range []struct {
		kind  string
		items []json.RawMessage
	}{{"Node", nodes}, {"Pod", pods}} {
		for i, it := range l.items {
			// An item of a NodeList has no kind; kube.Read wants one.
			it = bytes.TrimSpace(it)
			if len(it) < 2 || it[0] != '{' || !json.Valid(it) {
				return nil, &cluster.InputError{Name: "cluster API", Field: fmt.Sprintf("%ss[%d]", strings.ToLower(l.kind), i), Msg: "not a JSON object"}
			}
			if n > 0 {
				buf.WriteByte(',')
			}
			n++
			buf.WriteString(`{"kind":"` + l.kind + `"`)
			if rest := bytes.TrimSpace(it[1:]); rest[0] != '}' {
				buf.WriteByte(',')
				buf.Write(rest)
			} else {
				buf.WriteByte('}')
			}
		}
	}
	buf.WriteString("]}")
	// kube.Read refuses a document whose start holds a control character,
	// as a file's would be binary; the API's encoder leaves DEL (0x7f) raw
	// in strings, and an annotation may hold one. Each item is valid JSON,
	// so a raw 0x7f is inside a string, where its escape means the same.
	data := bytes.ReplaceAll(buf.Bytes(), []byte{0x7f}, []byte(`\u007f`))
	s, err := kube.Read(bytes.NewReader(data), "cluster API")
	if err != nil {
		var ie *cluster.InputError
		if errors.As(err, &ie) {
			var i int
			if _, serr := fmt.Sscanf(ie.Field, "items[%d]", &i); serr == nil && i >= 0 && i < len(nodes)+len(pods) {
				kind, raw := "node ", nodes
				if i >= len(nodes) {
					kind, raw, i = "pod ", pods, i-len(nodes)
				}
				var m meta
				_ = json.Unmarshal(raw[i], &m) // a name left empty still says the kind
				name := m.Metadata.Name
				if kind == "pod " {
					name = m.Metadata.Namespace + "/" + name
				}
				ie.Field = kind + untrusted.Clip(name)
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

func listNodes(ctx context.Context, c Client, o Options) ([]json.RawMessage, error) {
	opts := ListOptions{LabelSelector: o.NodeSelector, Limit: pageSize(o)}
	return listAll(opts, "nodes", "", kube.MaxNodes, func(opts ListOptions) (*List, error) { return c.ListNodes(ctx, opts) })
}

func listPods(ctx context.Context, c Client, o Options) ([]json.RawMessage, error) {
	opts := ListOptions{LabelSelector: o.PodSelector, FieldSelector: completedPods, Limit: pageSize(o)}
	return listAll(opts, "pods", o.Namespace, kube.MaxPods, func(opts ListOptions) (*List, error) { return c.ListPods(ctx, o.Namespace, opts) })
}

// listAll lists every page of a resource, starting over (at most
// maxRestarts times) when a continue token expired, within maxItems
// objects and kube.MaxReadBytes bytes; a server that hands back the token
// it was given fails instead of looping.
func listAll(opts ListOptions, resource, ns string, maxItems int, list func(ListOptions) (*List, error)) ([]json.RawMessage, error) {
	var (
		out  []json.RawMessage
		size int64
	)
	for restarts := 0; ; {
		l, err := list(opts)
		if isStatus(err, http.StatusGone) && opts.Continue != "" && restarts < maxRestarts {
			restarts++
			out, size, opts.Continue = nil, 0, ""
			continue
		}
		if err != nil {
			return nil, apiError(err, resource, ns)
		}
		out = append(out, l.Items...)
		for _, it := range l.Items {
			size += int64(len(it))
		}
		switch {
		case len(out) > maxItems:
			return nil, fmt.Errorf("list %s: more than %d objects: ten times the largest cluster Kubernetes supports", resource, maxItems)
		case size > kube.MaxReadBytes:
			return nil, fmt.Errorf("list %s: more than %d bytes (kube.MaxReadBytes)", resource, int64(kube.MaxReadBytes))
		case l.Continue != "" && l.Continue == opts.Continue:
			return nil, fmt.Errorf("list %s: the API server answered continue token %s with itself", resource, untrusted.Quote(l.Continue))
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}
