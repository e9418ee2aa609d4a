package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestFetch(t *testing.T) {
	body, err := os.ReadFile("testdata/vllm_v1.prom")
	if err != nil {
		t.Fatal(err)
	}
	var accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		switch r.URL.Path {
		case "/metrics":
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			w.Write(body)
		case "/broken":
			http.Error(w, "engine dead", http.StatusServiceUnavailable)
		case "/big":
			w.Write([]byte(strings.Repeat("# padding comment line\n", 100)))
		case "/html":
			w.Write([]byte("<html><body>not metrics</body></html>\n"))
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	got, err := Fetch(ctx, srv.Client(), srv.URL+"/metrics")
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if len(got) != 1 || got[0].Blocks != 27910 || got[0].Usage != 0.6875 {
		t.Errorf("Fetch: %+v", got)
	}
	if !strings.HasPrefix(accept, "text/plain;version=0.0.4") {
		t.Errorf("Accept header %q does not ask for the text format", accept)
	}

	_, err = Fetch(ctx, nil, srv.URL+"/broken")
	if want := "scrape: GET " + srv.URL + "/broken: status 503 Service Unavailable: \"engine dead\""; err == nil || err.Error() != want {
		t.Errorf("status 503: %v, want %s", err, want)
	}

	// 2300 bytes against a 1000-byte bound; the same page passes a larger one.
	_, err = fetch(ctx, srv.Client(), srv.URL+"/big", 1000)
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/big: body larger than 1000 bytes") {
		t.Errorf("body too large: %v", err)
	}
	if _, err := fetch(ctx, srv.Client(), srv.URL+"/big", 2300); !errors.Is(err, ErrNoMetrics) {
		t.Errorf("body at the bound: %v, want ErrNoMetrics (it has only comments)", err)
	}

	_, err = Fetch(ctx, srv.Client(), srv.URL+"/html")
	if err == nil || !strings.Contains(err.Error(), "scrape: "+srv.URL+"/html:1: text format parsing error in line 1") {
		t.Errorf("not an exposition: %v", err)
	}

	if _, err := Fetch(ctx, srv.Client(), "://bad"); err == nil || !strings.Contains(err.Error(), "://bad") {
		t.Errorf("bad URL: %v", err)
	}
}

func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Fetch(ctx, srv.Client(), srv.URL)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "scrape: GET "+srv.URL) {
		t.Errorf("slow server: %v, want a DeadlineExceeded naming the URL", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Fetch returned after %v; the 50ms deadline was not honoured", d)
	}
}

// TestFetchRefusesRedirects (issue 28): an engine endpoint that redirects
// (to a metadata service, an internal page) is not followed, whatever the
// client: the other server is never asked, and nothing of it, nor of the
// redirect's own body, reaches the error. The Location is quoted, cut to
// 64 bytes.
func TestFetchRefusesRedirects(t *testing.T) {
	const secret = "SECRET-c2VjcmV0"
	page, err := os.ReadFile("testdata/vllm_v1.prom")
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/page" { // a valid exposition: followed, it would be exported
			w.Write(bytes.ReplaceAll(page, []byte("example-org/chat-8b"), []byte(secret)))
			return
		}
		w.Write([]byte("<html>" + secret + "</html>\n"))
	}))
	defer other.Close()
	longTarget := other.URL + "/x?" + strings.Repeat("a", 5000)
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/found":
			w.Header().Set("Location", other.URL+"/page")
			w.WriteHeader(http.StatusFound)
			w.Write([]byte("redirect body " + secret))
		case "/temporary":
			http.Redirect(w, r, other.URL+"/latest/meta-data", http.StatusTemporaryRedirect)
		case "/permanent":
			http.Redirect(w, r, other.URL+"/page", http.StatusPermanentRedirect)
		case "/long":
			http.Redirect(w, r, longTarget, http.StatusMovedPermanently)
		}
	}))
	defer engine.Close()
	followAll := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
	for path, want := range map[string]string{
		"/found":     "status 302 Found: redirect to \"" + other.URL + "/page\" refused",
		"/temporary": "status 307 Temporary Redirect: redirect to \"" + other.URL + "/latest/meta-data\" refused",
		"/permanent": "status 308 Permanent Redirect: redirect to \"" + other.URL + "/page\" refused",
		"/long":      fmt.Sprintf("status 301 Moved Permanently: redirect to %q… (%d bytes) refused", longTarget[:64], len(longTarget)),
	} {
		for _, client := range []*http.Client{nil, engine.Client(), followAll} {
			insts, err := Fetch(context.Background(), client, engine.URL+path)
			if err == nil || insts != nil {
				t.Fatalf("%s: followed: %+v, %v", path, insts, err)
			}
			if !strings.Contains(err.Error(), "scrape: GET "+engine.URL+path+": "+want) {
				t.Errorf("%s: %v\nwant %s", path, err, want)
			}
			if strings.Contains(err.Error(), secret) || len(err.Error()) > 300 {
				t.Errorf("%s: the error quotes a body or the whole Location: %v", path, err)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the other server was asked %d times", n)
	}
}

// TestFetchStatusExcerpt: the body of a failed scrape is quoted at most 64
// bytes deep, escaped, and the server's own reason phrase is not echoed.
func TestFetchStatusExcerpt(t *testing.T) {
	body := "\x1b]0;owned\x07" + strings.Repeat("x", 100) + "TAIL"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(body))
	}))
	defer srv.Close()
	_, err := Fetch(context.Background(), nil, srv.URL)
	want := fmt.Sprintf("scrape: GET %s: status 500 Internal Server Error: %q…", srv.URL, body[:64])
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}
