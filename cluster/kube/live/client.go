package live

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config says how to reach the cluster.
type Config struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG (a list
	// of files), else ~/.kube/config, else the in-cluster service account
	// when running in a pod.
	Kubeconfig string
	// Context is the kubeconfig context; empty means its current context.
	Context string
	// Timeout bounds each request; 0 means DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout bounds one list request: a page of 500 pods is a few MB,
// which a healthy API server returns in well under a second; 30 s leaves
// room for a loaded one and still fails fast when the server is unreachable.
const DefaultTimeout = 30 * time.Second

// Client-side rate limit. A whole inspection of a 10,000-pod cluster is
// about 25 list requests; 10/s with bursts of 20 finishes that in ~1 s and
// stays far below what an API server's priority and fairness grants a
// single client, so a loop around gpufrag cannot crowd out controllers.
const (
	qps   = 10
	burst = 20
)

// ErrNoConfig means no kubeconfig was found and the process is not in a pod.
var ErrNoConfig = errors.New("live: no kubeconfig found")

// NoConfigError lists where RESTConfig looked for a kubeconfig.
type NoConfigError struct {
	Looked []string
}

func (e *NoConfigError) Error() string {
	where := "no file"
	if len(e.Looked) > 0 {
		where = strings.Join(e.Looked, ", ")
	}
	return fmt.Sprintf("no kubeconfig found (looked at %s, $KUBECONFIG=%q, and for an in-cluster service account: not running in a pod): pass --kubeconfig FILE, or save the cluster with kubectl get nodes,pods -A -o json > cluster.json and use --from cluster.json",
		where, os.Getenv(clientcmd.RecommendedConfigPathEnvVar))
}

// Unwrap returns ErrNoConfig.
func (e *NoConfigError) Unwrap() error { return ErrNoConfig }

// RESTConfig loads the client configuration as kubectl does (explicit file,
// $KUBECONFIG, ~/.kube/config, with an optional context), falling back to
// the in-cluster service account (rest.InClusterConfig) when no kubeconfig
// exists and the process runs in a pod.
func RESTConfig(c Config) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.Kubeconfig
	var rc *rest.Config
	if c.Kubeconfig == "" && !anyExists(rules.GetLoadingPrecedence()) {
		ic, err := rest.InClusterConfig()
		switch {
		case errors.Is(err, rest.ErrNotInCluster):
			return nil, &NoConfigError{Looked: rules.GetLoadingPrecedence()}
		case err != nil:
			return nil, fmt.Errorf("in-cluster configuration: %w", err)
		case c.Context != "":
			return nil, fmt.Errorf("--context %s: no kubeconfig to take it from (running in a pod with its service account)", c.Context)
		}
		rc = ic
	} else {
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.Context})
		var err error
		if rc, err = cc.ClientConfig(); err != nil {
			if clientcmd.IsEmptyConfig(err) {
				return nil, &NoConfigError{Looked: rules.GetLoadingPrecedence()}
			}
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
	}
	rc.Timeout = c.Timeout
	if rc.Timeout <= 0 {
		rc.Timeout = DefaultTimeout
	}
	rc.QPS, rc.Burst = qps, burst
	rc.UserAgent = "gpufrag"
	return rc, nil
}

func anyExists(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// NewClient returns a Client for the cluster rc reaches: a REST client for
// the core/v1 API group with a scheme holding that group only.
func NewClient(rc *rest.Config) (Client, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("live: core/v1 scheme: %w", err)
	}
	cfg := rest.CopyConfig(rc)
	cfg.APIPath = "/api"
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	rc2, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	return &restClient{rest: rc2, params: runtime.NewParameterCodec(scheme)}, nil
}

// Connect is RESTConfig followed by NewClient.
func Connect(c Config) (Client, error) {
	rc, err := RESTConfig(c)
	if err != nil {
		return nil, err
	}
	return NewClient(rc)
}

type restClient struct {
	rest   *rest.RESTClient
	params runtime.ParameterCodec
}

func (c *restClient) ListNodes(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
	l := &corev1.NodeList{}
	err := c.rest.Get().Resource("nodes").VersionedParams(&opts, c.params).Do(ctx).Into(l)
	return l, err
}

func (c *restClient) ListPods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error) {
	l := &corev1.PodList{}
	err := c.rest.Get().Namespace(namespace).Resource("pods").VersionedParams(&opts, c.params).Do(ctx).Into(l)
	return l, err
}
