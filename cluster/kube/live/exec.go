package live

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"golang.org/x/term"
)

// ExecConfig is a kubeconfig user's exec credential plugin
// (client.authentication.k8s.io, the protocol kubectl speaks with
// gke-gcloud-auth-plugin, kubelogin or aws eks get-token).
type ExecConfig struct {
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	APIVersion         string `yaml:"apiVersion"`
	InstallHint        string `yaml:"installHint"`
	ProvideClusterInfo bool   `yaml:"provideClusterInfo"`
	// InteractiveMode is Never, IfAvailable or Always (v1 requires it;
	// v1beta1 means IfAvailable when it is empty).
	InteractiveMode string `yaml:"interactiveMode"`

	cluster *kcluster
}

// Exec credential API versions kubectl speaks (v1alpha1 was removed in
// Kubernetes 1.24).
const (
	execV1      = "client.authentication.k8s.io/v1"
	execV1beta1 = "client.authentication.k8s.io/v1beta1"
)

// maxExecOutput bounds a plugin's output (1 MiB): an ExecCredential with a
// client certificate and key is a few KB.
const maxExecOutput = 1 << 20

// credential is what a plugin returned.
type credential struct {
	token   string
	cert    *tls.Certificate
	expires time.Time // zero: until the server refuses it
}

// execAuth runs the plugin when there is no credential or it expired, and
// again after the server refused one (401). Safe for concurrent use.
type execAuth struct {
	cfg *ExecConfig
	now func() time.Time

	mu   sync.Mutex
	cred *credential
}

// get returns a valid credential, running the plugin when needed; stale
// forces a new one (the server refused the last).
func (a *execAuth) get(ctx context.Context, stale bool) (*credential, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cred != nil && !stale && (a.cred.expires.IsZero() || a.now().Before(a.cred.expires)) {
		return a.cred, nil
	}
	c, err := runExec(ctx, a.cfg)
	if err != nil {
		return nil, err
	}
	a.cred = c
	return c, nil
}

// current is the last credential, nil before the first run.
func (a *execAuth) current() *credential {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cred
}

type execInfo struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Interactive bool `json:"interactive"`
		Cluster     *struct {
			Server                   string `json:"server"`
			TLSServerName            string `json:"tls-server-name,omitempty"`
			InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify,omitempty"`
			CertificateAuthorityData string `json:"certificate-authority-data,omitempty"`
			ProxyURL                 string `json:"proxy-url,omitempty"`
		} `json:"cluster,omitempty"`
	} `json:"spec"`
}

type execOutput struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Status     *struct {
		Token                 string    `json:"token"`
		ClientCertificateData string    `json:"clientCertificateData"`
		ClientKeyData         string    `json:"clientKeyData"`
		ExpirationTimestamp   time.Time `json:"expirationTimestamp"`
	} `json:"status"`
}

// runExec runs the plugin as kubectl does: its args, the kubeconfig's env
// on top of ours, KUBERNETES_EXEC_INFO, stderr passed through, stdin only
// when interactive; and reads the ExecCredential it prints.
func runExec(ctx context.Context, c *ExecConfig) (*credential, error) {
	name := "exec plugin " + untrusted.Quote(c.Command)
	if c.APIVersion != execV1 && c.APIVersion != execV1beta1 {
		return nil, fmt.Errorf("%s: apiVersion %s: want %s or %s", name, untrusted.Quote(c.APIVersion), execV1, execV1beta1)
	}
	mode := c.InteractiveMode
	if mode == "" && c.APIVersion == execV1beta1 {
		mode = "IfAvailable"
	}
	tty := term.IsTerminal(int(os.Stdin.Fd()))
	var info execInfo
	info.APIVersion, info.Kind = c.APIVersion, "ExecCredential"
	switch mode {
	case "Never":
	case "IfAvailable":
		info.Spec.Interactive = tty
	case "Always":
		if !tty {
			return nil, fmt.Errorf("%s: interactiveMode Always, and standard input is not a terminal", name)
		}
		info.Spec.Interactive = true
	default:
		return nil, fmt.Errorf("%s: interactiveMode %s: want Never, IfAvailable or Always", name, untrusted.Quote(mode))
	}
	if c.ProvideClusterInfo && c.cluster != nil {
		info.Spec.Cluster = &struct {
			Server                   string `json:"server"`
			TLSServerName            string `json:"tls-server-name,omitempty"`
			InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify,omitempty"`
			CertificateAuthorityData string `json:"certificate-authority-data,omitempty"`
			ProxyURL                 string `json:"proxy-url,omitempty"`
		}{c.cluster.Server, c.cluster.TLSServerName, c.cluster.InsecureSkipTLSVerify, c.cluster.CertificateAuthorityData, c.cluster.ProxyURL}
	}
	infoJSON, err := json.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cmd := exec.CommandContext(ctx, c.Command, c.Args...)
	cmd.Env = os.Environ()
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.Env = append(cmd.Env, "KUBERNETES_EXEC_INFO="+string(infoJSON))
	cmd.Stderr = os.Stderr
	if info.Spec.Interactive {
		cmd.Stdin = os.Stdin
	}
	var out limitedBuffer
	out.max = maxExecOutput
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) && c.InstallHint != "" {
			return nil, fmt.Errorf("%s: %w\n%s", name, err, untrusted.PrintableText(c.InstallHint))
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if out.over {
		return nil, fmt.Errorf("%s: printed more than %d bytes", name, maxExecOutput)
	}
	var o execOutput
	if err := json.Unmarshal(out.Bytes(), &o); err != nil {
		return nil, fmt.Errorf("%s: its output is no ExecCredential: %w", name, err)
	}
	if o.Kind != "ExecCredential" || o.APIVersion != c.APIVersion {
		return nil, fmt.Errorf("%s: printed kind %s, apiVersion %s: want ExecCredential, %s", name, untrusted.Quote(o.Kind), untrusted.Quote(o.APIVersion), c.APIVersion)
	}
	if o.Status == nil {
		return nil, fmt.Errorf("%s: its ExecCredential has no status", name)
	}
	cred := &credential{token: o.Status.Token, expires: o.Status.ExpirationTimestamp}
	if o.Status.ClientCertificateData != "" || o.Status.ClientKeyData != "" {
		cert, err := tls.X509KeyPair([]byte(o.Status.ClientCertificateData), []byte(o.Status.ClientKeyData))
		if err != nil {
			return nil, fmt.Errorf("%s: clientCertificateData and clientKeyData: %w", name, err)
		}
		cred.cert = &cert
	}
	if cred.token == "" && cred.cert == nil {
		return nil, fmt.Errorf("%s: its ExecCredential has neither a token nor a client certificate", name)
	}
	return cred, nil
}

// limitedBuffer keeps the first max bytes written and notes whether more
// came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
