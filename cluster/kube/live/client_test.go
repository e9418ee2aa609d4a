package live

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
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
// developer's own cluster configuration.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	return dir
}

func TestRESTConfigNoConfig(t *testing.T) {
	dir := isolate(t)
	missing := filepath.Join(dir, "nope.yaml")
	t.Setenv("KUBECONFIG", missing)
	_, err := RESTConfig(Config{})
	if !errors.Is(err, ErrNoConfig) {
		t.Fatalf("got %v, want ErrNoConfig", err)
	}
	for _, w := range []string{missing, "in-cluster", "--kubeconfig", "--from"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}

	// clientcmd fixes ~/.kube/config when it loads, so HOME cannot move it.
	if _, err := os.Stat(clientcmd.RecommendedHomeFile); err == nil {
		t.Skipf("%s exists", clientcmd.RecommendedHomeFile)
	}
	t.Setenv("KUBECONFIG", "")
	_, err = RESTConfig(Config{})
	if !errors.Is(err, ErrNoConfig) || !strings.Contains(err.Error(), clientcmd.RecommendedHomeFile) {
		t.Errorf("got %v, want ErrNoConfig naming %s", err, clientcmd.RecommendedHomeFile)
	}
}

func TestRESTConfigContexts(t *testing.T) {
	dir := isolate(t)
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  Config
		host string
	}{
		{Config{Kubeconfig: path}, "https://a.example:6443"},
		{Config{Kubeconfig: path, Context: "ctx-b", Timeout: 5 * time.Second}, "https://b.example:6443"},
	} {
		rc, err := RESTConfig(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		wantTimeout := tc.cfg.Timeout
		if wantTimeout == 0 {
			wantTimeout = DefaultTimeout
		}
		if rc.Host != tc.host || rc.BearerToken != "t0ken" || rc.Timeout != wantTimeout || rc.QPS != qps || rc.Burst != burst {
			t.Errorf("%+v: host %s token %q timeout %v qps %v burst %d", tc.cfg, rc.Host, rc.BearerToken, rc.Timeout, rc.QPS, rc.Burst)
		}
		if _, err := NewClient(rc); err != nil {
			t.Errorf("NewClient: %v", err)
		}
	}

	// $KUBECONFIG is read like kubectl reads it.
	t.Setenv("KUBECONFIG", path)
	rc, err := RESTConfig(Config{Context: "ctx-b"})
	if err != nil || rc.Host != "https://b.example:6443" {
		t.Errorf("from $KUBECONFIG: %v %v", rc, err)
	}

	if _, err := RESTConfig(Config{Kubeconfig: path, Context: "ctx-z"}); err == nil || !strings.Contains(err.Error(), "ctx-z") {
		t.Errorf("unknown context: got %v", err)
	}
	if _, err := RESTConfig(Config{Kubeconfig: filepath.Join(dir, "missing")}); err == nil || errors.Is(err, ErrNoConfig) ||
		!strings.Contains(err.Error(), "missing") {
		t.Errorf("missing --kubeconfig file: got %v, want an error naming it", err)
	}
}
