package live

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gpufrag/gpufrag/cluster/kube"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"golang.org/x/time/rate"
)

// userAgent is sent with every request, so the API server's audit log and
// priority and fairness can tell gpufrag's requests apart.
const userAgent = "gpufrag"

// maxMessageBytes bounds how much of an API server's error message an
// error repeats (1 KiB): RBAC's messages are a few hundred bytes.
const maxMessageBytes = 1 << 10

// Connect is Resolve followed by NewClient.
func Connect(c Config) (Client, error) {
	ep, err := Resolve(c)
	if err != nil {
		return nil, err
	}
	return NewClient(ep)
}

// NewClient returns a Client for the API server of ep: GET requests over
// net/http for the core/v1 lists, JSON answers, client-side rate limiting,
// and ep's credentials.
func NewClient(ep *Endpoint) (Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyFromEnvironment
	if ep.Proxy != nil {
		tr.Proxy = http.ProxyURL(ep.Proxy)
	}
	c := &restClient{ep: ep, limiter: rate.NewLimiter(qps, burst), transport: tr}
	if ep.TLS != nil {
		tr.TLSClientConfig = ep.TLS.Clone()
	}
	if ep.Exec != nil {
		c.exec = &execAuth{cfg: ep.Exec, now: time.Now}
		if tr.TLSClientConfig == nil {
			return nil, errors.New("live: an exec credential plugin needs an https:// server")
		}
		static := tr.TLSClientConfig.Certificates
		tr.TLSClientConfig.Certificates = nil
		tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if cr := c.exec.current(); cr != nil && cr.cert != nil {
				return cr.cert, nil
			}
			if len(static) > 0 {
				return &static[0], nil
			}
			return &tls.Certificate{}, nil
		}
	}
	c.http = &http.Client{Transport: tr, Timeout: ep.Timeout}
	return c, nil
}

type restClient struct {
	ep        *Endpoint
	http      *http.Client
	transport *http.Transport
	limiter   *rate.Limiter
	exec      *execAuth
}

func (c *restClient) ListNodes(ctx context.Context, opts ListOptions) (*List, error) {
	return c.list(ctx, "api/v1/nodes", opts)
}

func (c *restClient) ListPods(ctx context.Context, namespace string, opts ListOptions) (*List, error) {
	p := "api/v1/pods"
	if namespace != "" {
		p = "api/v1/namespaces/" + url.PathEscape(namespace) + "/pods"
	}
	return c.list(ctx, p, opts)
}

// list GETs one page of a list; after a 401 with an exec plugin's
// credential it runs the plugin once more and retries, as client-go does
// when a token is revoked before it expires.
func (c *restClient) list(ctx context.Context, p string, opts ListOptions) (*List, error) {
	u := *c.ep.Server
	u.Path = path.Join("/", u.Path, p)
	u.RawPath = ""
	q := url.Values{}
	if opts.LabelSelector != "" {
		q.Set("labelSelector", opts.LabelSelector)
	}
	if opts.FieldSelector != "" {
		q.Set("fieldSelector", opts.FieldSelector)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.FormatInt(opts.Limit, 10))
	}
	if opts.Continue != "" {
		q.Set("continue", opts.Continue)
	}
	u.RawQuery = q.Encode()
	l, err := c.get(ctx, u.String(), false)
	var se *StatusError
	if c.exec != nil && errors.As(err, &se) && se.Code == http.StatusUnauthorized {
		l, err = c.get(ctx, u.String(), true)
	}
	return l, err
}

func (c *restClient) get(ctx context.Context, u string, stale bool) (*List, error) {
	if err := c.limiter.Wait(ctx); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if err := c.authorize(ctx, req, stale); err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		// Say which configuration pointed here: the URL alone does not.
		return nil, fmt.Errorf("the API server of %s: %w", c.ep.Source, err)
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body, kube.MaxReadBytes, "the API server's answer")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(resp.StatusCode, body)
	}
	var page struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, fmt.Errorf("the API server's answer (%d bytes, %s) is no list: %w", len(body), untrusted.Quote(resp.Header.Get("Content-Type")), err)
	}
	if !strings.HasSuffix(page.Kind, "List") {
		return nil, fmt.Errorf("the API server answered kind %s, want a list", untrusted.Quote(page.Kind))
	}
	return &List{Items: page.Items, Continue: page.Metadata.Continue}, nil
}

// authorize sets the credentials and impersonation headers of req.
func (c *restClient) authorize(ctx context.Context, req *http.Request, stale bool) error {
	ep := c.ep
	switch {
	case ep.Token != "":
		req.Header.Set("Authorization", "Bearer "+ep.Token)
	case ep.TokenFile != "":
		// Read at each request: kubelet rotates a pod's token file.
		b, err := os.ReadFile(ep.TokenFile)
		if err != nil {
			return fmt.Errorf("token: %w", err)
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			req.Header.Set("Authorization", "Bearer "+t)
		}
	case ep.Username != "":
		req.SetBasicAuth(ep.Username, ep.Password)
	case c.exec != nil:
		old := c.exec.current()
		cr, err := c.exec.get(ctx, stale)
		if err != nil {
			return err
		}
		if cr.token != "" {
			req.Header.Set("Authorization", "Bearer "+cr.token)
		}
		if old != nil && old.cert != cr.cert {
			// Connections made with the old certificate keep it.
			c.transport.CloseIdleConnections()
		}
	}
	if ep.Impersonate != "" {
		req.Header.Set("Impersonate-User", ep.Impersonate)
	}
	if ep.ImpersonateUID != "" {
		req.Header.Set("Impersonate-Uid", ep.ImpersonateUID)
	}
	for _, g := range ep.ImpersonateGroups {
		req.Header.Add("Impersonate-Group", g)
	}
	for k, vs := range ep.ImpersonateExtra {
		for _, v := range vs {
			req.Header.Add("Impersonate-Extra-"+url.PathEscape(k), v)
		}
	}
	return nil
}

// StatusError is a request the API server answered with an error status:
// the HTTP code and, when the answer is a Status object, its reason and
// message.
type StatusError struct {
	Code    int
	Reason  string // "Forbidden", "Expired", ...; empty when the server gave none
	Message string // the server's message, cut to 1 KiB, printable
}

func (e *StatusError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("%d %s", e.Code, http.StatusText(e.Code))
}

func statusError(code int, body []byte) *StatusError {
	var st struct {
		Kind    string `json:"kind"`
		Code    int    `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	e := &StatusError{Code: code}
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
		e.Reason, e.Message = st.Reason, st.Message
	} else if len(body) > 0 {
		e.Message = fmt.Sprintf("%d %s: %s", code, http.StatusText(code), body)
	}
	if len(e.Message) > maxMessageBytes {
		e.Message = e.Message[:maxMessageBytes] + fmt.Sprintf("… (%d bytes)", len(e.Message))
	}
	e.Message = untrusted.PrintableText(strings.ToValidUTF8(e.Message, "\uFFFD"))
	return e
}

// isStatus reports whether err is a StatusError with code.
func isStatus(err error, code int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == code
}

// readBounded reads r to its end, failing past max bytes.
func readBounded(r io.Reader, max int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is longer than %d bytes", what, max)
	}
	return b, nil
}
