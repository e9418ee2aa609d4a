package live

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443/prefix"}
users:
- name: u
  user: {token: "t0ken"}
contexts:
- name: ctx-a
  context: {cluster: a, user: u}
- name: ctx-b
  context: {cluster: b, user: u}
current-context: ctx-a
`

// isolate points every kubeconfig source at dir, so no test reads the
// developer's own cluster configuration or service account.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	old := serviceAccountDir
	serviceAccountDir = filepath.Join(dir, "no-service-account")
	t.Cleanup(func() { serviceAccountDir = old })
	return dir
}

func write(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestResolveNoConfig(t *testing.T) {
	dir := isolate(t)
	missing := filepath.Join(dir, "nope.yaml")
	t.Setenv("KUBECONFIG", missing)
	_, err := Resolve(Config{})
	if !errors.Is(err, ErrNoConfig) {
		t.Fatalf("got %v, want ErrNoConfig", err)
	}
	for _, w := range []string{missing, "in-cluster", "--kubeconfig", "--from"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	t.Setenv("KUBECONFIG", "")
	home := filepath.Join(dir, ".kube", "config")
	if _, err = Resolve(Config{}); !errors.Is(err, ErrNoConfig) || !strings.Contains(err.Error(), home) {
		t.Errorf("got %v, want ErrNoConfig naming %s", err, home)
	}
	// ~/.kube/config is read when it exists.
	write(t, home, twoContexts)
	if ep, err := Resolve(Config{}); err != nil || ep.Server.Host != "a.example:6443" {
		t.Errorf("~/.kube/config: %+v, %v", ep, err)
	}
}

func TestResolveContexts(t *testing.T) {
	dir := isolate(t)
	path := write(t, filepath.Join(dir, "kubeconfig"), twoContexts)
	for _, tc := range []struct {
		cfg    Config
		server string
	}{
		{Config{Kubeconfig: path}, "https://a.example:6443"},
		{Config{Kubeconfig: path, Context: "ctx-b", Timeout: 5 * time.Second}, "https://b.example:6443/prefix"},
	} {
		ep, err := Resolve(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		wantTimeout := tc.cfg.Timeout
		if wantTimeout == 0 {
			wantTimeout = DefaultTimeout
		}
		if ep.Server.String() != tc.server || ep.Token != "t0ken" || ep.Timeout != wantTimeout || ep.TLS == nil || ep.TLS.InsecureSkipVerify {
			t.Errorf("%+v: server %s token %q timeout %v tls %+v", tc.cfg, ep.Server, ep.Token, ep.Timeout, ep.TLS)
		}
		if _, err := NewClient(ep); err != nil {
			t.Errorf("NewClient: %v", err)
		}
	}

	// $KUBECONFIG is read like kubectl reads it.
	t.Setenv("KUBECONFIG", path)
	ep, err := Resolve(Config{Context: "ctx-b"})
	if err != nil || ep.Server.Host != "b.example:6443" {
		t.Errorf("from $KUBECONFIG: %v %v", ep, err)
	}

	if _, err := Resolve(Config{Kubeconfig: path, Context: "ctx-z"}); err == nil || !strings.Contains(err.Error(), `context "ctx-z" not found (contexts: ctx-a, ctx-b)`) {
		t.Errorf("unknown context: got %v", err)
	}
	if _, err := Resolve(Config{Kubeconfig: filepath.Join(dir, "missing")}); err == nil || errors.Is(err, ErrNoConfig) ||
		!strings.Contains(err.Error(), "missing") {
		t.Errorf("missing --kubeconfig file: got %v, want an error naming it", err)
	}
}

// TestContexts: the contexts Resolve takes, from --kubeconfig or
// $KUBECONFIG's files merged, sorted, with the current one; none without a
// kubeconfig.
func TestContexts(t *testing.T) {
	dir := isolate(t)
	if names, cur, err := Contexts(""); err != nil || names != nil || cur != "" {
		t.Errorf("no kubeconfig: %v %q %v", names, cur, err)
	}
	path := write(t, filepath.Join(dir, "kubeconfig"), twoContexts)
	if names, cur, err := Contexts(path); err != nil || strings.Join(names, ",") != "ctx-a,ctx-b" || cur != "ctx-a" {
		t.Errorf("--kubeconfig: %v %q %v", names, cur, err)
	}
	for _, n := range []string{"ctx-a", "ctx-b"} {
		if _, err := Resolve(Config{Kubeconfig: path, Context: n}); err != nil {
			t.Errorf("context %s listed but not resolved: %v", n, err)
		}
	}
	other := write(t, filepath.Join(dir, "other"), "contexts:\n- {name: ctx-0, context: {cluster: a}}\n- {name: ctx-b, context: {cluster: b}}\n")
	t.Setenv("KUBECONFIG", other+string(os.PathListSeparator)+path)
	if names, cur, err := Contexts(""); err != nil || strings.Join(names, ",") != "ctx-0,ctx-a,ctx-b" || cur != "ctx-a" {
		t.Errorf("$KUBECONFIG: %v %q %v", names, cur, err)
	}
	if _, _, err := Contexts(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing --kubeconfig file gave no error")
	}
}

// TestResolveMerge: $KUBECONFIG's files merge as in kubectl (the first to
// name a cluster, user or context, or to set current-context, wins), and
// relative paths resolve against their own file's directory.
func TestResolveMerge(t *testing.T) {
	dir := isolate(t)
	ca, _ := selfSigned(t, "ca")
	write(t, filepath.Join(dir, "one", "certs", "ca.pem"), string(ca))
	write(t, filepath.Join(dir, "two", "tok"), "from-file\n")
	one := write(t, filepath.Join(dir, "one", "config"), `
clusters:
- {name: c, cluster: {server: "https://one.example", certificate-authority: certs/ca.pem}}
contexts:
- {name: x, context: {cluster: c, user: v}}
current-context: x
`)
	two := write(t, filepath.Join(dir, "two", "config"), `
clusters:
- {name: c, cluster: {server: "https://two.example"}}
users:
- {name: v, user: {tokenFile: tok, as: alice, as-groups: [g1, g2]}}
contexts:
- {name: x, context: {cluster: c, user: nobody}}
current-context: y
`)
	t.Setenv("KUBECONFIG", one+string(os.PathListSeparator)+filepath.Join(dir, "absent")+string(os.PathListSeparator)+two)
	ep, err := Resolve(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Server.Host != "one.example" || ep.TLS.RootCAs == nil || ep.TokenFile != filepath.Join(dir, "two", "tok") ||
		ep.Impersonate != "alice" || strings.Join(ep.ImpersonateGroups, ",") != "g1,g2" || !strings.Contains(ep.Source, "context x") {
		t.Errorf("merged endpoint %+v", ep)
	}
}

func TestResolveInCluster(t *testing.T) {
	dir := isolate(t)
	ca, _ := selfSigned(t, "ca")
	serviceAccountDir = filepath.Join(dir, "sa")
	write(t, filepath.Join(serviceAccountDir, "ca.crt"), string(ca))
	t.Setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	if _, err := Resolve(Config{}); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("no token file: got %v", err)
	}
	write(t, filepath.Join(serviceAccountDir, "token"), "sa-token")
	ep, err := Resolve(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Server.String() != "https://[fd00::1]:443" || ep.TokenFile != filepath.Join(serviceAccountDir, "token") || ep.TLS.RootCAs == nil {
		t.Errorf("in-cluster endpoint %+v", ep)
	}
	if _, err := Resolve(Config{Context: "prod"}); err == nil || !strings.Contains(err.Error(), "--context prod: no kubeconfig") {
		t.Errorf("--context in a pod: got %v", err)
	}
}

func TestResolveRefuses(t *testing.T) {
	dir := isolate(t)
	for _, tc := range []struct{ cluster, user, want string }{
		{`{server: "https://a"}`, `{auth-provider: {name: gcp}}`, `auth-provider "gcp" is not supported`},
		{`{server: "http://a"}`, `{token: t}`, `server "http://a" is plain HTTP: gpufrag sends credentials over HTTPS only`},
		{`{server: "https://a", certificate-authority-data: "%%%"}`, `{}`, "certificate-authority-data: not base64"},
		{`{server: "https://a", certificate-authority-data: "eA=="}`, `{}`, "no PEM certificate"},
		{`{server: "https://a", certificate-authority: ca.pem, insecure-skip-tls-verify: true}`, `{}`, "insecure-skip-tls-verify with a certificate authority"},
		{`{server: "https://a", certificate-authority: nope.pem}`, `{}`, "nope.pem"},
		{`{server: "ftp://a"}`, `{}`, `server "ftp://a": want an https:// URL`},
		{`{}`, `{}`, "cluster has no server"},
		{`{server: "https://a"}`, `{exec: {apiVersion: client.authentication.k8s.io/v1}}`, "exec has no command"},
		{`{server: "https://a"}`, `{client-certificate-data: "eA==", client-key-data: "eA=="}`, "client-certificate and client-key"},
	} {
		path := write(t, filepath.Join(dir, "config"), fmt.Sprintf("clusters: [{name: c, cluster: %s}]\nusers: [{name: u, user: %s}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n", tc.cluster, tc.user))
		if _, err := Resolve(Config{Kubeconfig: path}); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path+", context x") {
			t.Errorf("cluster %s user %s: got %v, want %q naming the file and context", tc.cluster, tc.user, err, tc.want)
		}
	}
	noCurrent := write(t, filepath.Join(dir, "nocurrent"), strings.Replace(twoContexts, "current-context: ctx-a", "", 1))
	if _, err := Resolve(Config{Kubeconfig: noCurrent}); err == nil || errors.Is(err, ErrNoConfig) ||
		!strings.Contains(err.Error(), "no current-context: pass --context NAME (contexts: ctx-a, ctx-b)") {
		t.Errorf("no current-context: got %v", err)
	}
	if ep, err := Resolve(Config{Kubeconfig: noCurrent, Context: "ctx-b"}); err != nil || ep.Server.Host != "b.example:6443" {
		t.Errorf("no current-context, --context ctx-b: %v, %v", ep, err)
	}
	empty := write(t, filepath.Join(dir, "empty"), "apiVersion: v1\nkind: Config\n")
	if _, err := Resolve(Config{Kubeconfig: empty}); !errors.Is(err, ErrNoConfig) {
		t.Errorf("empty kubeconfig: got %v, want ErrNoConfig", err)
	}
	bad := write(t, filepath.Join(dir, "bad"), "clusters: {")
	if _, err := Resolve(Config{Kubeconfig: bad}); err == nil || !strings.Contains(err.Error(), "kubeconfig "+bad) {
		t.Errorf("bad YAML: got %v", err)
	}
}

// selfSigned returns a self-signed certificate for cn and its key, PEM.
func selfSigned(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// apiServer is a TLS API server over the fixture that pages by 2 and
// admits requests auth approves; it records each request.
type apiServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newAPIServer(t *testing.T, clientCerts bool, auth func(r *http.Request) bool) *apiServer {
	t.Helper()
	f := newFake(t)
	s := &apiServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !auth(r) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
			return
		}
		q := r.URL.Query()
		limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
		opts := ListOptions{LabelSelector: q.Get("labelSelector"), FieldSelector: q.Get("fieldSelector"), Limit: min(limit, 2), Continue: q.Get("continue")}
		var (
			l   *List
			err error
		)
		switch r.URL.Path {
		case "/prefix/api/v1/nodes":
			l, err = f.ListNodes(r.Context(), opts)
		case "/prefix/api/v1/pods":
			l, err = f.ListPods(r.Context(), "", opts)
		case "/prefix/api/v1/namespaces/secret/pods":
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods is forbidden: User \"bob\" cannot list resource \"pods\" in the namespace \"secret\"","reason":"Forbidden","code":403}`)
			return
		case "/prefix/api/v1/namespaces/broken/pods":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, "<html>"+strings.Repeat("x", 3000)+"\x1b[2J</html>")
			return
		default:
			http.NotFound(w, r)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": "List", "apiVersion": "v1", "metadata": map[string]string{"continue": l.Continue}, "items": l.Items})
	}))
	if clientCerts {
		s.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	}
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) kubeconfig(t *testing.T, user string) string {
	t.Helper()
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}))
	return write(t, filepath.Join(t.TempDir(), "config"), fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- {name: fake, cluster: {server: "%s/prefix", certificate-authority-data: %s}}
users:
- {name: u, user: %s}
contexts:
- {name: fake, context: {cluster: fake, user: u}}
current-context: fake
`, s.URL, ca, user))
}

func (s *apiServer) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

// TestClientAPIServer lists the fixture from a TLS API server behind a
// path prefix, in pages of 2, with a bearer token and impersonation, and
// reads the server's error statuses.
func TestClientAPIServer(t *testing.T) {
	isolate(t)
	srv := newAPIServer(t, false, func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer t0ken" })
	c, err := Connect(Config{Kubeconfig: srv.kubeconfig(t, `{token: t0ken, as: alice, as-groups: [ops, ml]}`)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := readFixture(t)
	sortPods(got)
	sortPods(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("snapshot over HTTP differs from the saved one:\n got %+v\nwant %+v", got, want)
	}
	reqs := srv.requests()
	var lines []string
	for _, r := range reqs {
		lines = append(lines, r.URL.Path+"?"+r.URL.RawQuery)
		if r.Header.Get("User-Agent") != userAgent || r.Header.Get("Accept") != "application/json" ||
			r.Header.Get("Impersonate-User") != "alice" || strings.Join(r.Header.Values("Impersonate-Group"), ",") != "ops,ml" {
			t.Errorf("%s: headers %v", r.URL, r.Header)
		}
	}
	// 4 nodes and 8 pods, 2 a page.
	wantLines := []string{
		"/prefix/api/v1/nodes?limit=500", "/prefix/api/v1/nodes?continue=2&limit=500",
		"/prefix/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed&limit=500",
		"/prefix/api/v1/pods?continue=2&fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed&limit=500",
		"/prefix/api/v1/pods?continue=4&fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed&limit=500",
		"/prefix/api/v1/pods?continue=6&fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed&limit=500",
	}
	if strings.Join(lines, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("requests\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(wantLines, "\n"))
	}

	_, err = Load(context.Background(), c, Options{Namespace: "secret"})
	var se *StatusError
	if !errors.Is(err, ErrAccess) || !errors.As(err, &se) || se.Code != 403 || se.Reason != "Forbidden" ||
		!strings.Contains(err.Error(), `list pods in namespace secret: forbidden (pods is forbidden: User "bob" cannot list`) {
		t.Errorf("403: got %v", err)
	}
	_, err = Load(context.Background(), c, Options{Namespace: "broken"})
	if !errors.As(err, &se) || se.Code != 502 || !strings.HasPrefix(err.Error(), "list pods: 502 Bad Gateway: <html>xxx") ||
		!strings.Contains(err.Error(), "… (") || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("502 with an HTML page: got %v, want its start, cut, printable", err)
	}

	// A wrong token is the server's 401, said as such.
	c, err = Connect(Config{Kubeconfig: srv.kubeconfig(t, `{token: wrong}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = Load(context.Background(), c, Options{}); !errors.Is(err, ErrAccess) || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Errorf("401: got %v", err)
	}
}

// TestClientTokenFileRotates: a tokenFile is read at each request, as
// kubelet rotates a pod's service-account token.
func TestClientTokenFileRotates(t *testing.T) {
	dir := isolate(t)
	tok := write(t, filepath.Join(dir, "token"), "one\n")
	srv := newAPIServer(t, false, func(r *http.Request) bool { return true })
	c, err := Connect(Config{Kubeconfig: srv.kubeconfig(t, fmt.Sprintf(`{tokenFile: %q}`, tok))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListNodes(context.Background(), ListOptions{}); err != nil {
		t.Fatal(err)
	}
	write(t, tok, "two")
	if _, err := c.ListNodes(context.Background(), ListOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range srv.requests() {
		got = append(got, r.Header.Get("Authorization"))
	}
	if strings.Join(got, ",") != "Bearer one,Bearer two" {
		t.Errorf("tokens sent %q", got)
	}
	os.Remove(tok)
	if _, err := c.ListNodes(context.Background(), ListOptions{}); err == nil || !strings.Contains(err.Error(), tok) {
		t.Errorf("token file gone: got %v", err)
	}
}

// TestClientExecPlugin runs an exec credential plugin (a shell script) as
// kubectl does: with KUBERNETES_EXEC_INFO and the kubeconfig's env; its
// token is used until the server refuses it, then the plugin runs again.
func TestClientExecPlugin(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the plugin is a shell script")
	}
	dir := isolate(t)
	plugin := write(t, filepath.Join(dir, "bin", "plugin"), `#!/bin/sh
n=$(cat "$STATE" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$STATE"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$STATE.info"
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok-'$n'"}}'
`)
	if err := os.Chmod(plugin, 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	srv := newAPIServer(t, false, func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer tok-2" })
	// The command is relative to the kubeconfig's directory, as kubectl resolves it.
	cfg := srv.kubeconfig(t, fmt.Sprintf(`{exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never, provideClusterInfo: true, env: [{name: STATE, value: %q}]}}`, plugin, state))
	c, err := Connect(Config{Kubeconfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	// tok-1 is refused: the plugin runs again, tok-2 is admitted and kept.
	for range 2 {
		if _, err := c.ListNodes(context.Background(), ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := os.ReadFile(state); strings.TrimSpace(string(n)) != "2" {
		t.Errorf("plugin ran %q times, want 2", n)
	}
	info, _ := os.ReadFile(state + ".info")
	var ei execInfo
	if err := json.Unmarshal(info, &ei); err != nil || ei.Kind != "ExecCredential" || ei.APIVersion != execV1 || ei.Spec.Interactive ||
		ei.Spec.Cluster == nil || ei.Spec.Cluster.Server != srv.URL+"/prefix" || ei.Spec.Cluster.CertificateAuthorityData == "" {
		t.Errorf("KUBERNETES_EXEC_INFO %s (%v)", info, err)
	}

	for _, tc := range []struct{ exec, want string }{
		{`{apiVersion: client.authentication.k8s.io/v1alpha1, command: true}`, "apiVersion \"client.authentication.k8s.io/v1alpha1\""},
		{`{apiVersion: client.authentication.k8s.io/v1, command: true}`, "interactiveMode \"\""},
		{`{apiVersion: client.authentication.k8s.io/v1, command: no-such-plugin-gpufrag, interactiveMode: Never, installHint: "install it with brew"}`, "install it with brew"},
		{`{apiVersion: client.authentication.k8s.io/v1, command: echo, args: ["{}"], interactiveMode: Never}`, `printed kind "", apiVersion ""`},
		{`{apiVersion: client.authentication.k8s.io/v1beta1, command: echo, args: ['{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{}}']}`, "neither a token nor a client certificate"},
		{`{apiVersion: client.authentication.k8s.io/v1, command: false, interactiveMode: Never}`, "exit status 1"},
	} {
		c, err := Connect(Config{Kubeconfig: srv.kubeconfig(t, "{exec: "+tc.exec+"}")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListNodes(context.Background(), ListOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "exec plugin") {
			t.Errorf("%s: got %v, want %q", tc.exec, err, tc.want)
		}
	}
}

// TestClientCertificate authenticates with a client certificate and key
// from the kubeconfig (kind's and minikube's way).
func TestClientCertificate(t *testing.T) {
	isolate(t)
	cert, key := selfSigned(t, "gpufrag-test")
	srv := newAPIServer(t, true, func(r *http.Request) bool {
		return r.TLS != nil && len(r.TLS.PeerCertificates) == 1 && r.TLS.PeerCertificates[0].Subject.CommonName == "gpufrag-test"
	})
	c, err := Connect(Config{Kubeconfig: srv.kubeconfig(t, fmt.Sprintf(`{client-certificate-data: %s, client-key-data: %s}`,
		base64.StdEncoding.EncodeToString(cert), base64.StdEncoding.EncodeToString(key)))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListNodes(context.Background(), ListOptions{}); err != nil {
		t.Fatal(err)
	}
	// Without it the handshake fails, and the error says which
	// configuration pointed at the server.
	cfg := srv.kubeconfig(t, `{}`)
	c, err = Connect(Config{Kubeconfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListNodes(context.Background(), ListOptions{}); err == nil || !strings.Contains(err.Error(), "the API server of kubeconfig "+cfg+", context fake: Get") {
		t.Errorf("no client certificate: got %v, want an error naming the kubeconfig and context", err)
	}
}
