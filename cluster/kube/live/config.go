package live

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"go.yaml.in/yaml/v3"
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
// (client-go's defaults are 5/s with bursts of 10.)
const (
	qps   = 10
	burst = 20
)

// maxKubeconfigBytes bounds one kubeconfig file (16 MiB): a kubeconfig of
// a hundred clusters with their CA certificates is a few hundred KB.
const maxKubeconfigBytes = 16 << 20

// The in-cluster service account, as every pod sees it (rest.InClusterConfig
// reads the same files and variables).
var (
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// ErrNoConfig means no kubeconfig was found and the process is not in a pod.
var ErrNoConfig = errors.New("live: no kubeconfig found")

// NoConfigError lists where Endpoint looked for a kubeconfig.
type NoConfigError struct {
	Looked []string
}

func (e *NoConfigError) Error() string {
	where := "no file"
	if len(e.Looked) > 0 {
		where = strings.Join(e.Looked, ", ")
	}
	return fmt.Sprintf("no kubeconfig found (looked at %s, $KUBECONFIG=%q, and for an in-cluster service account: not running in a pod): pass --kubeconfig FILE, or save the cluster with kubectl get nodes,pods -A -o json > cluster.json and use --from cluster.json",
		where, os.Getenv("KUBECONFIG"))
}

// Unwrap returns ErrNoConfig.
func (e *NoConfigError) Unwrap() error { return ErrNoConfig }

// Endpoint is where and how to reach an API server: what Config resolves
// to through the kubeconfig (or the service account). NewClient connects
// to it.
type Endpoint struct {
	// Server is the API server's URL, with any path prefix a proxy
	// serves it under (https://rancher.example/k8s/clusters/c-1).
	Server *url.URL
	// TLS holds the server's CA, server name, skip-verify and static
	// client certificate.
	TLS *tls.Config
	// Proxy is the proxy-url of the cluster; nil means the environment's
	// (HTTPS_PROXY, NO_PROXY), as client-go does.
	Proxy *url.URL
	// Credentials: at most one of Token, TokenFile, Username and Exec is
	// used, in that order. TokenFile is read again at each request (an
	// in-cluster token rotates every hour).
	Token     string
	TokenFile string
	Username  string
	Password  string
	Exec      *ExecConfig
	// Impersonation headers (kubeconfig as, as-uid, as-groups,
	// as-user-extra).
	Impersonate       string
	ImpersonateUID    string
	ImpersonateGroups []string
	ImpersonateExtra  map[string][]string
	// Timeout bounds each request.
	Timeout time.Duration
	// Source names where the endpoint came from, for errors: "kubeconfig
	// FILE, context NAME" or "in-cluster service account".
	Source string
}

// The kubeconfig's schema (clientcmd/api/v1), the fields read here. Other
// fields (preferences, extensions, a context's namespace) are ignored, as
// kubectl ignores what it does not know.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string   `yaml:"name"`
		Cluster kcluster `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string `yaml:"name"`
		User kuser  `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

type kcluster struct {
	Server                   string `yaml:"server"`
	TLSServerName            string `yaml:"tls-server-name"`
	InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
	CertificateAuthority     string `yaml:"certificate-authority"`
	CertificateAuthorityData string `yaml:"certificate-authority-data"`
	ProxyURL                 string `yaml:"proxy-url"`
	dir                      string // the kubeconfig's directory, for relative paths
}

type kuser struct {
	ClientCertificate     string              `yaml:"client-certificate"`
	ClientCertificateData string              `yaml:"client-certificate-data"`
	ClientKey             string              `yaml:"client-key"`
	ClientKeyData         string              `yaml:"client-key-data"`
	Token                 string              `yaml:"token"`
	TokenFile             string              `yaml:"tokenFile"`
	Impersonate           string              `yaml:"as"`
	ImpersonateUID        string              `yaml:"as-uid"`
	ImpersonateGroups     []string            `yaml:"as-groups"`
	ImpersonateUserExtra  map[string][]string `yaml:"as-user-extra"`
	Username              string              `yaml:"username"`
	Password              string              `yaml:"password"`
	AuthProvider          *struct {
		Name string `yaml:"name"`
	} `yaml:"auth-provider"`
	Exec *ExecConfig `yaml:"exec"`
	dir  string
}

// kubeconfigFiles returns the files to merge, in precedence order, as
// kubectl finds them: the explicit file (which must exist), else the
// existing files of $KUBECONFIG (a path list), else ~/.kube/config; and
// every place it looked, for NoConfigError.
func kubeconfigFiles(explicit string) (files, looked []string, err error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return nil, nil, fmt.Errorf("kubeconfig: %w", err)
		}
		return []string{explicit}, []string{explicit}, nil
	}
	if env := os.Getenv("KUBECONFIG"); env != "" {
		for _, p := range filepath.SplitList(env) {
			if p == "" || slices.Contains(looked, p) {
				continue
			}
			looked = append(looked, p)
			if _, err := os.Stat(p); err == nil {
				files = append(files, p)
			}
		}
		return files, looked, nil
	}
	home, herr := os.UserHomeDir()
	if herr != nil {
		return nil, nil, nil
	}
	p := filepath.Join(home, ".kube", "config")
	if _, err := os.Stat(p); err == nil {
		files = append(files, p)
	}
	return files, []string{p}, nil
}

// Resolve finds the endpoint of c as kubectl does (explicit file,
// $KUBECONFIG, ~/.kube/config, with an optional context), falling back to
// the in-cluster service account when no kubeconfig exists and the process
// runs in a pod.
func Resolve(c Config) (*Endpoint, error) {
	files, looked, err := kubeconfigFiles(c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	var ep *Endpoint
	if len(files) == 0 {
		if ep, err = inCluster(); err != nil {
			if errors.Is(err, errNotInCluster) {
				return nil, &NoConfigError{Looked: looked}
			}
			return nil, err
		}
		if c.Context != "" {
			return nil, fmt.Errorf("--context %s: no kubeconfig to take it from (running in a pod with its service account)", c.Context)
		}
	} else if ep, err = fromKubeconfig(files, c.Context); err != nil {
		return nil, err
	}
	ep.Timeout = c.Timeout
	if ep.Timeout <= 0 {
		ep.Timeout = DefaultTimeout
	}
	return ep, nil
}

// Contexts lists the contexts of the kubeconfig Resolve reads for the
// file kubeconfig ("" for $KUBECONFIG's files, else ~/.kube/config), as
// kubectl merges them (the first file to name a context wins), sorted, and
// the current one ("" when none is set): what --context takes, for shell
// completion. No kubeconfig at all is no contexts and no error; a file
// that cannot be read is an error.
func Contexts(kubeconfig string) (names []string, current string, err error) {
	files, _, err := kubeconfigFiles(kubeconfig)
	if err != nil {
		return nil, "", err
	}
	for _, f := range files {
		kc, err := readKubeconfig(f)
		if err != nil {
			return nil, "", err
		}
		if current == "" {
			current = kc.CurrentContext
		}
		for _, c := range kc.Contexts {
			if !slices.Contains(names, c.Name) {
				names = append(names, c.Name)
			}
		}
	}
	slices.Sort(names)
	return names, current, nil
}

var errNotInCluster = errors.New("not running in a pod")

// inCluster is the endpoint of the pod's service account: the API server
// at $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, the account's
// token (read again at each request) and the cluster's CA.
func inCluster() (*Endpoint, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errNotInCluster
	}
	tokenFile := filepath.Join(serviceAccountDir, "token")
	if _, err := os.Stat(tokenFile); err != nil {
		return nil, fmt.Errorf("in-cluster configuration: the service account's token: %w", err)
	}
	caFile := filepath.Join(serviceAccountDir, "ca.crt")
	pool, err := certPool(nil, caFile)
	if err != nil {
		return nil, fmt.Errorf("in-cluster configuration: %w", err)
	}
	return &Endpoint{
		Server:    &url.URL{Scheme: "https", Host: net.JoinHostPort(host, port)},
		TLS:       &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		TokenFile: tokenFile,
		Source:    "in-cluster service account",
	}, nil
}

// fromKubeconfig merges files as kubectl merges $KUBECONFIG (the first
// file to name a cluster, user or context, or to set current-context,
// wins) and resolves the context (the current one when context is empty).
func fromKubeconfig(files []string, context string) (*Endpoint, error) {
	clusters := map[string]kcluster{}
	users := map[string]kuser{}
	type kctx struct{ cluster, user, file string }
	contexts := map[string]kctx{}
	var names []string
	current, currentFrom := "", ""
	for _, f := range files {
		kc, err := readKubeconfig(f)
		if err != nil {
			return nil, err
		}
		dir := filepath.Dir(f)
		if current == "" {
			current, currentFrom = kc.CurrentContext, f
		}
		for _, c := range kc.Clusters {
			if _, ok := clusters[c.Name]; !ok {
				c.Cluster.dir = dir
				clusters[c.Name] = c.Cluster
			}
		}
		for _, u := range kc.Users {
			if _, ok := users[u.Name]; !ok {
				u.User.dir = dir
				users[u.Name] = u.User
			}
		}
		for _, c := range kc.Contexts {
			if _, ok := contexts[c.Name]; !ok {
				contexts[c.Name] = kctx{c.Context.Cluster, c.Context.User, f}
				names = append(names, c.Name)
			}
		}
	}
	where := "kubeconfig " + strings.Join(files, ", ")
	name := context
	if name == "" {
		if current == "" {
			if len(contexts) == 0 {
				return nil, &NoConfigError{Looked: files} // an empty kubeconfig
			}
			slices.Sort(names)
			return nil, fmt.Errorf("%s: no current-context: pass --context NAME (contexts: %s)", where, strings.Join(names, ", "))
		}
		name = current
		where += " (current-context of " + currentFrom + ")"
	}
	ctx, ok := contexts[name]
	if !ok {
		slices.Sort(names)
		return nil, fmt.Errorf("%s: context %s not found (contexts: %s)", where, untrusted.Quote(name), strings.Join(names, ", "))
	}
	where = "kubeconfig " + ctx.file + ", context " + name
	cl, ok := clusters[ctx.cluster]
	if !ok {
		return nil, fmt.Errorf("%s: cluster %s not found", where, untrusted.Quote(ctx.cluster))
	}
	u, ok := users[ctx.user]
	if !ok && ctx.user != "" {
		return nil, fmt.Errorf("%s: user %s not found", where, untrusted.Quote(ctx.user))
	}
	ep, err := endpoint(cl, u)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	ep.Source = where
	return ep, nil
}

func readKubeconfig(path string) (*kubeconfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	defer f.Close()
	data, err := readBounded(f, maxKubeconfigBytes, path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return &kc, nil
}

// endpoint builds the endpoint of one cluster and user. Paths relative to
// their kubeconfig's directory resolve there, as kubectl resolves them.
func endpoint(cl kcluster, u kuser) (*Endpoint, error) {
	if cl.Server == "" {
		return nil, errors.New("cluster has no server")
	}
	srv, err := url.Parse(cl.Server)
	if err != nil || (srv.Scheme != "https" && srv.Scheme != "http") || srv.Host == "" {
		return nil, fmt.Errorf("server %s: want an https:// URL", untrusted.Quote(cl.Server))
	}
	ep := &Endpoint{Server: srv, Token: u.Token, Username: u.Username, Password: u.Password,
		Impersonate: u.Impersonate, ImpersonateUID: u.ImpersonateUID, ImpersonateGroups: u.ImpersonateGroups, ImpersonateExtra: u.ImpersonateUserExtra}
	if u.Token == "" && u.TokenFile != "" {
		ep.TokenFile = resolvePath(u.dir, u.TokenFile)
	}
	if u.AuthProvider != nil {
		return nil, fmt.Errorf("user: auth-provider %s is not supported (client-go dropped its gcp and azure providers in 1.26): use an exec credential plugin (gke-gcloud-auth-plugin, kubelogin, aws eks get-token), as current kubectl does",
			untrusted.Quote(u.AuthProvider.Name))
	}
	if u.Exec != nil {
		if u.Exec.Command == "" {
			return nil, errors.New("user: exec has no command")
		}
		e := *u.Exec
		if !filepath.IsAbs(e.Command) && strings.ContainsRune(e.Command, filepath.Separator) {
			e.Command = resolvePath(u.dir, e.Command)
		}
		e.cluster = &cl
		ep.Exec = &e
	}
	if cl.ProxyURL != "" {
		p, err := url.Parse(cl.ProxyURL)
		if err != nil || p.Host == "" {
			return nil, fmt.Errorf("cluster: proxy-url %s: not a URL", untrusted.Quote(cl.ProxyURL))
		}
		ep.Proxy = p
	}
	if srv.Scheme == "http" {
		if ep.Token != "" || ep.TokenFile != "" || ep.Username != "" || ep.Exec != nil || u.ClientCertificate != "" || u.ClientCertificateData != "" {
			return nil, fmt.Errorf("server %s is plain HTTP: gpufrag sends credentials over HTTPS only", untrusted.Quote(cl.Server))
		}
		return ep, nil
	}
	ca, err := decodeData("certificate-authority-data", cl.CertificateAuthorityData)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	caFile := ""
	if cl.CertificateAuthority != "" {
		caFile = resolvePath(cl.dir, cl.CertificateAuthority)
	}
	ep.TLS = &tls.Config{ServerName: cl.TLSServerName, InsecureSkipVerify: cl.InsecureSkipTLSVerify, MinVersion: tls.VersionTLS12}
	if ca != nil || caFile != "" {
		if cl.InsecureSkipTLSVerify {
			return nil, errors.New("cluster: insecure-skip-tls-verify with a certificate authority: choose one (kubectl refuses both too)")
		}
		if ep.TLS.RootCAs, err = certPool(ca, caFile); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	certPEM, err := dataOrFile("client-certificate", u.ClientCertificateData, u.ClientCertificate, u.dir)
	if err != nil {
		return nil, fmt.Errorf("user: %w", err)
	}
	keyPEM, err := dataOrFile("client-key", u.ClientKeyData, u.ClientKey, u.dir)
	if err != nil {
		return nil, fmt.Errorf("user: %w", err)
	}
	if certPEM != nil || keyPEM != nil {
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("user: client-certificate and client-key: %w", err)
		}
		ep.TLS.Certificates = []tls.Certificate{cert}
	}
	return ep, nil
}

func resolvePath(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// decodeData decodes a kubeconfig *-data field (base64 of PEM).
func decodeData(field, s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%s: not base64: %w", field, err)
	}
	return b, nil
}

// dataOrFile returns a field's -data form, else the file it names; the
// data wins when both are set, as in client-go.
func dataOrFile(field, data, file, dir string) ([]byte, error) {
	if data != "" {
		return decodeData(field+"-data", data)
	}
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(resolvePath(dir, file))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return b, nil
}

// certPool is the system's roots plus nothing else when neither data nor
// file is given; otherwise the certificates of data, else of file.
func certPool(data []byte, file string) (*x509.CertPool, error) {
	what := "certificate-authority-data"
	if data == nil {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("certificate authority: %w", err)
		}
		data, what = b, file
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("certificate authority %s: no PEM certificate in it", what)
	}
	return pool, nil
}
