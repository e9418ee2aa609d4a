// Fetching /metrics over HTTP. See doc.go for the overview.

package scrape

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// MaxBodyBytes bounds the body Fetch reads, so that a misdirected URL (a file
// server, a log endpoint) cannot fill memory. It is generous on purpose: the
// page's size grows with histogram buckets, models and data-parallel engines,
// and a scrape that fails for size is worse than one that reads a big page.
const MaxBodyBytes = 16 << 20

// acceptHeader asks for the classic text format, which Parse reads; servers
// built on prometheus_client would otherwise answer OpenMetrics to clients
// that ask for it.
const acceptHeader = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// Fetch GETs url with client (http.DefaultClient when nil) and parses the
// body. The request is bound to ctx: its deadline is the scrape timeout. A
// status other than 200 and a body over MaxBodyBytes are errors naming url.
//
// Fetch never follows a redirect, whatever client's CheckRedirect: the
// answer of another URL than the one configured (a cloud metadata service,
// an internal page) would be parsed, and fragments of it quoted in errors
// and logs. A redirect is an error naming its status and Location (cut to
// 64 bytes); point the URL at the final /metrics instead. Of any other
// status, the error quotes at most the first 64 bytes of the body.
func Fetch(ctx context.Context, client *http.Client, url string) ([]Instance, error) {
	return fetch(ctx, client, url, MaxBodyBytes)
}

func fetch(ctx context.Context, client *http.Client, url string, limit int64) ([]Instance, error) {
	if client == nil {
		client = http.DefaultClient
	}
	noRedirect := *client // the caller's transport, timeout and jar
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape: %s: %w", url, err)
	}
	req.Header.Set("Accept", acceptHeader)
	resp, err := noRedirect.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(url, resp)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("scrape: GET %s: reading body: %w", url, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("scrape: GET %s: body larger than %d bytes; not a /metrics page?", url, limit)
	}
	return Parse(bytes.NewReader(body), url)
}

// statusError is the error of a response other than 200. The status is
// named by its code and standard text, not the server's reason phrase.
// A redirect names its Location and nothing of its body; another status
// quotes the first untrusted.QuoteBytes of the body, escaped (untrusted.Quote).
func statusError(url string, resp *http.Response) error {
	status := strings.TrimSpace(fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))
	if where := resp.Header.Get("Location"); where != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return fmt.Errorf("scrape: GET %s: status %s: redirect to %s refused (give the URL that serves /metrics itself)",
			url, status, untrusted.Quote(where))
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, untrusted.QuoteBytes+1))
	excerpt := ""
	if len(head) > untrusted.QuoteBytes {
		head, excerpt = head[:untrusted.QuoteBytes], "…"
	}
	return fmt.Errorf("scrape: GET %s: status %s: %s%s", url, status, untrusted.Quote(printable(head)), excerpt)
}

// printable trims an error body for a message; invalid UTF-8 (a cut
// character included) becomes '?'.
func printable(b []byte) string {
	return strings.ToValidUTF8(strings.TrimSpace(string(b)), "?")
}
