// Fetching /metrics over HTTP. See doc.go for the overview.

package scrape

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
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
func Fetch(ctx context.Context, client *http.Client, url string) ([]Instance, error) {
	return fetch(ctx, client, url, MaxBodyBytes)
}

func fetch(ctx context.Context, client *http.Client, url string, limit int64) ([]Instance, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape: %s: %w", url, err)
	}
	req.Header.Set("Accept", acceptHeader)
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return nil, fmt.Errorf("scrape: GET %s: status %s: %q", url, resp.Status, printable(snippet))
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

// printable trims an error body for a message.
func printable(b []byte) string {
	s := strings.TrimSpace(string(b))
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "?")
	}
	return s
}
