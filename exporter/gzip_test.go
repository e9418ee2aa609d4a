package exporter

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// /metrics is gzipped only when ServerConfig.Gzip asks for it, even when the
// scraper offers gzip.
func TestServeGzip(t *testing.T) {
	for _, gz := range []bool{false, true} {
		reg := prometheus.NewRegistry()
		reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpufrag_test", Help: "test"}))
		stop, url := benchServer(t, ServerConfig{Gatherer: reg, Gzip: gz})
		req, err := http.NewRequest(http.MethodGet, url+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		stop()
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != gz {
			t.Errorf("Gzip %t: Content-Encoding %q", gz, resp.Header.Get("Content-Encoding"))
		}
	}
}
