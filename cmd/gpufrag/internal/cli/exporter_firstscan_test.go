package cli

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/internal/snaptest"
)

// The daemon answers /healthz and /metrics while the snapshot directory's
// first scan runs (issue 25: a large snapshot kept the listener closed for
// its whole first scan, 43 to 86 s), and once the scan is done the
// directory's figures are there.
func TestExporterServesDuringFirstScan(t *testing.T) {
	dir := t.TempDir()
	doc := snaptest.Crafted{Segments: 20_000, Events: 4_000, OOMEvery: 10}.Doc()
	if err := os.WriteFile(filepath.Join(dir, "big.pickle"), snaptest.Encode(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	var answered []string
	exporterListening = func(a net.Addr) {
		for _, path := range []string{"/healthz", "/metrics"} {
			resp, err := http.Get("http://" + a.String() + path)
			if err != nil {
				answered = append(answered, fmt.Sprintf("%s: %v", path, err))
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			answered = append(answered, fmt.Sprintf("%s: %d", path, resp.StatusCode))
		}
	}
	t.Cleanup(func() { exporterListening = nil })
	scrape := serveExporter(t, "--snapshots", dir, "--max-file-bytes", "64MiB")
	if got := strings.Join(answered, ", "); got != "/healthz: 200, /metrics: 200" {
		t.Errorf("before the first scan finished: %s", got)
	}
	scrape(`gpufrag_ooms_total{`)
}
