package scrape

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
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
