package cli

import (
	"github.com/gpufrag/gpufrag/internal/testkit"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type lockedBuffer = testkit.LockedBuffer

func TestExporterUsage(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"exporter", "--log-format", "xml"}, `--log-format "xml"`},
		{[]string{"exporter", "--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"exporter", "--listen", "nope"}, `--listen "nope": address nope: missing port in address`},
		{[]string{"exporter", "--listen", ":99999"}, `--listen ":99999": port "99999": want a number from 0 to 65535`},
		{[]string{"exporter", "--snapshots", dir, "--rescan", "0s"}, "--rescan 0s: must be at least 1s"},
		{[]string{"exporter", "--snapshots", dir, "--rescan", "1ns"}, "--rescan 1ns: must be at least 1s (shorter only burns CPU"},
		{[]string{"exporter", "--scrape", "http://a/metrics", "--poll-interval", "100ms"}, "--poll-interval 100ms: must be at least 1s"},
		{[]string{"exporter", "--cluster", "prod", "--cluster-poll-interval", "-1s"}, "--cluster-poll-interval -1s: must be at least 1s"},
		{[]string{"exporter", "--stuck-after", "0s"}, "--stuck-after 0s: must be at least 1s"},
		{[]string{"exporter", "--source-timeout", "1ns"}, "--source-timeout 1ns: must be at least 10ms"},
		{[]string{"exporter", "--snapshots", dir, "--capture-dir", dir}, "--capture-dir " + dir + " and --snapshots " + dir + ":"},
		{[]string{"exporter", "--snapshots", dir, "--capture-dir", dir + "/"}, "are the same directory"},
		{[]string{"exporter", "--snapshots", dir, "--capture-dir", link}, "are the same directory"},
		{[]string{"exporter", "--snapshots", dir, "--capture-dir", filepath.Join(link, "oom")}, "is inside " + dir},
		{[]string{"exporter", "--snapshots", filepath.Join(dir, "sub"), "--capture-dir", dir}, filepath.Join(dir, "sub") + " is inside " + dir},
		{[]string{"exporter", "--max-series", "-1"}, "--max-series must be positive"},
		{[]string{"exporter", "--capture-dir", dir}, "--capture-dir has no effect without --snapshots"},
		{[]string{"exporter", "--max-files", "3"}, "--max-files has no effect without --snapshots"},
		{[]string{"exporter", "--max-file-age", "1h"}, "--max-file-age has no effect without --snapshots"},
		{[]string{"exporter", "--snapshots", dir, "--max-file-age", "-1h"}, "--max-file-age -1h0m0s: must not be negative"},
		{[]string{"exporter", "--snapshots", dir, "--capture-max-files", "3"}, "--capture-max-files has no effect without --capture-dir"},
		{[]string{"exporter", "--poll-interval", "1m"}, "--poll-interval has no effect without --nvml or --scrape"},
		{[]string{"exporter", "--max-file-bytes", "lots"}, `--max-file-bytes "lots": bad size`},
		{[]string{"exporter", "--capacity", "80GiB"}, "--capacity has no effect without --snapshots"},
		{[]string{"exporter", "--snapshots", dir, "--capacity", "2PiB"}, "--capacity 2048TiB:"},
		{[]string{"exporter", "--snapshots", dir, "--capacity", "lots"}, `--capacity "lots": bad size`},
		{[]string{"exporter", "extra"}, `"gpufrag exporter" takes no arguments`},
	} {
		code, _, stderr := run(t, "", c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
	code, stdout, _ := run(t, "", "exporter", "--help")
	for _, s := range []string{"--listen", "127.0.0.1:9400", "--snapshots", "--capture-dir", "/snapshots/", "INSTANCE__MODEL__ANYTHING.pickle", "--max-series"} {
		if code != 0 || !strings.Contains(stdout, s) {
			t.Errorf("help lacks %q (exit %d)", s, code)
		}
	}
	if _, stdout, _ := run(t, "", "--help"); !strings.Contains(stdout, "exporter") {
		t.Error("root help does not list exporter")
	}
	// A missing --snapshots directory is a failure (exit 1), as a missing
	// file is for every command, not a usage error.
	if code, _, stderr := run(t, "", "exporter", "--snapshots", filepath.Join(dir, "nope")); code != exitFail || !strings.Contains(stderr, "not a readable directory") {
		t.Errorf("missing --snapshots: exit %d, %q; want exit 1", code, stderr)
	}
	// A port in use is a failure (exit 1), not a usage error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if code, _, stderr := run(t, "", "exporter", "--listen", ln.Addr().String()); code != exitFail || !strings.Contains(stderr, "--listen") {
		t.Errorf("busy port: exit %d, %q", code, stderr)
	}
}
