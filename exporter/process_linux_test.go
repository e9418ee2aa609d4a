//go:build linux

package exporter

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/procfs"
)

// gatherOne gathers a registry holding c alone, by family name.
func gatherOne(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func famValue(f *dto.MetricFamily) float64 {
	m := f.GetMetric()[0]
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// TestProcessCollectorAsClientGolang: NewProcessCollector describes and
// exports client_golang's process families (the same Descs, names, help,
// types, no labels), with the same values where they cannot move between
// two reads (start time, limits, open descriptors) and between the
// values of two reads of client_golang's around it where they only grow
// (CPU time, network bytes).
func TestProcessCollectorAsClientGolang(t *testing.T) {
	descs := func(c prometheus.Collector) []string {
		ch := make(chan *prometheus.Desc, 16)
		c.Describe(ch)
		close(ch)
		var out []string
		for d := range ch {
			out = append(out, d.String())
		}
		return out
	}
	upstream := collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})
	mine := NewProcessCollector()
	if got, want := descs(mine), descs(upstream); !slices.Equal(got, want) {
		t.Fatalf("Descs\n%v\nwant client_golang's\n%v", got, want)
	}
	// The process's open descriptors move when another test of the package
	// opens or closes a file between the reads: read the three again, up to
	// ten times, until client_golang's two agree on them.
	var before, got, after map[string]*dto.MetricFamily
	for try := 0; ; try++ {
		before, got, after = gatherOne(t, upstream), gatherOne(t, mine), gatherOne(t, upstream)
		b, a := before["process_open_fds"], after["process_open_fds"]
		if b == nil || a == nil || famValue(b) == famValue(a) || try == 9 {
			break
		}
	}
	if len(got) != len(before) || len(got) != 9 {
		t.Fatalf("%d families, client_golang's %d, want 9", len(got), len(before))
	}
	for name, b := range before {
		g := got[name]
		if g == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if g.GetHelp() != b.GetHelp() || g.GetType() != b.GetType() || len(g.GetMetric()) != 1 || len(g.GetMetric()[0].GetLabel()) != 0 {
			t.Errorf("%s: %v, want as client_golang's %v", name, g, b)
		}
		v, lo, hi := famValue(g), famValue(b), famValue(after[name])
		switch name {
		case "process_start_time_seconds", "process_max_fds", "process_virtual_memory_max_bytes", "process_open_fds":
			if v != lo || v != hi {
				t.Errorf("%s = %v, client_golang's %v then %v", name, v, lo, hi)
			}
		case "process_cpu_seconds_total", "process_network_receive_bytes_total", "process_network_transmit_bytes_total":
			if v < lo || v > hi {
				t.Errorf("%s = %v, not between client_golang's %v and %v", name, v, lo, hi)
			}
		default: // memory, which may shrink: the parse is checked on the same bytes below
			if v <= 0 {
				t.Errorf("%s = %v", name, v)
			}
		}
	}
}

// TestProcessParsersAsProcfs: the parsers give what procfs (client_golang's
// reader) makes of the same bytes: this process's /proc files, copied
// into a directory procfs reads as /proc, and crafted ones (a command name
// with spaces and parentheses, IpExt absent, the largest counters).
func TestProcessParsersAsProcfs(t *testing.T) {
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	real := read("/proc/self/stat")
	fields := strings.Fields(string(real[strings.LastIndexByte(string(real), ')')+1:]))
	crafted := func(comm string, utime, rss string) []byte {
		f := slices.Clone(fields)
		f[14-3], f[24-3] = utime, rss
		return []byte("4242 (" + comm + ") " + strings.Join(f, " ") + "\n")
	}
	stats := map[string][]byte{
		"self":      real,
		"spaces":    crafted("a b) (c d", "12345", "7"),
		"paren end": crafted("x)", "0", "0"),
		"largest":   crafted("big", "9223372036854775807", "1"),
	}
	realNet := read("/proc/self/net/netstat")
	noIPExt := []byte("TcpExt: SyncookiesSent SyncookiesRecv\nTcpExt: 1 2\n")
	bigNet := []byte("IpExt: InNoRoutes InOctets OutOctets\nIpExt: 1 18446744073709551615 9007199254740993\n")
	procStat := read("/proc/stat")
	for name, stat := range stats {
		for netName, netstat := range map[string][]byte{"self": realNet, "no IpExt": noIPExt, "large": bigNet} {
			t.Run(fmt.Sprintf("stat=%s/netstat=%s", name, netName), func(t *testing.T) {
				root := t.TempDir()
				pid := 4242
				dir := filepath.Join(root, fmt.Sprint(pid))
				for path, b := range map[string][]byte{"stat": stat, "net/netstat": netstat} {
					if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, path), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(filepath.Join(root, "stat"), procStat, 0o644); err != nil {
					t.Fatal(err)
				}
				fs, err := procfs.NewFS(root)
				if err != nil {
					t.Fatal(err)
				}
				p, err := fs.Proc(pid)
				if err != nil {
					t.Fatal(err)
				}
				want, err := p.Stat()
				if err != nil {
					t.Fatal(err)
				}
				wantStart, err := want.StartTime()
				if err != nil {
					t.Fatal(err)
				}
				st, ok := parseProcStat(stat)
				btime, okB := parseBootTime(procStat)
				if !ok || !okB {
					t.Fatalf("parse failed: stat %v, btime %v", ok, okB)
				}
				pageSize := os.Getpagesize()
				if got := float64(st.utime+st.stime) / userHZ; got != want.CPUTime() {
					t.Errorf("CPU %v, procfs %v", got, want.CPUTime())
				}
				if got := float64(st.vsize); got != float64(want.VirtualMemory()) {
					t.Errorf("vsize %v, procfs %v", got, want.VirtualMemory())
				}
				if got := float64(st.rss * int64(pageSize)); got != float64(want.ResidentMemory()) {
					t.Errorf("rss %v, procfs %v", got, want.ResidentMemory())
				}
				if got := float64(btime) + float64(st.starttime)/userHZ; got != wantStart {
					t.Errorf("start %v, procfs %v", got, wantStart)
				}
				wantNet, err := p.Netstat()
				if err != nil {
					t.Fatal(err)
				}
				in, out, ok := parseIPExtOctets(netstat)
				deref := func(p *float64) float64 {
					if p == nil {
						return 0
					}
					return *p
				}
				if !ok || in != deref(wantNet.InOctets) || out != deref(wantNet.OutOctets) {
					t.Errorf("IpExt %v %v (%v), procfs %v %v", in, out, ok, deref(wantNet.InOctets), deref(wantNet.OutOctets))
				}
			})
		}
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S " + strings.Repeat("1 ", 10) + "-5 " + strings.Repeat("1 ", 20)} {
		if _, ok := parseProcStat([]byte(bad)); ok {
			t.Errorf("parseProcStat(%q) ok", bad)
		}
	}
	if _, _, ok := parseIPExtOctets([]byte("IpExt: InOctets OutOctets\nIpExt: 1\n")); ok {
		t.Error("IpExt with fewer values than names parsed")
	}
}

// TestProcessCountEntries: the descriptor count's fallback (kernels before
// 6.2) counts a directory's entries as Readdirnames lists them, across
// several getdents buffers.
func TestProcessCountEntries(t *testing.T) {
	dir := t.TempDir()
	for i := range 700 { // more than one 8 KB buffer of records
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("entry-%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	c := NewProcessCollector().(*processCollector)
	if n, err := c.countEntries(dir); err != nil || n != len(names) || n != 700 {
		t.Errorf("countEntries = %d, %v; Readdirnames lists %d", n, err, len(names))
	}
}

// TestProcessCollectorAllocs: a collection allocates only the metrics it
// sends (client_golang's allocated ~70 KB in 600 allocations through the
// registry, BenchmarkRuntimeGather).
func TestProcessCollectorAllocs(t *testing.T) {
	c := NewProcessCollector()
	ch := make(chan prometheus.Metric, 16)
	drain := func() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
	drain()
	if a := testing.AllocsPerRun(20, drain); a > 40 {
		t.Errorf("%v allocations per collection, want at most 40 (the 9 metrics)", a)
	}
}

// TestProcessKeptFilesLive: the files the collector keeps open read what
// is current at each collection, not what they held when opened: the
// open descriptors follow files opened and closed since, the CPU time
// grows with CPU spent, the network bytes with loopback traffic; and
// each reads as the same file opened afresh (its open(2) path).
func TestProcessKeptFilesLive(t *testing.T) {
	c := newProcessCollector()
	for _, f := range []keptFile{c.stat, c.netstat, c.fdDir} {
		if f.fd < 0 {
			t.Fatalf("%s not kept open", f.path)
		}
	}
	read := func() map[*prometheus.Desc]float64 {
		out := map[*prometheus.Desc]float64{}
		c.each(func(d *prometheus.Desc, _ prometheus.ValueType, v float64) { out[d] = v })
		return out
	}
	first := read()
	var extra []*os.File
	for range 5 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, f)
	}
	if got, want := read()[procOpenFDsDesc], first[procOpenFDsDesc]+5; got != want {
		t.Errorf("open fds with 5 more files open: %v, want %v", got, want)
	}
	for _, f := range extra {
		f.Close()
	}
	if got, want := read()[procOpenFDsDesc], first[procOpenFDsDesc]; got != want {
		t.Errorf("open fds with them closed again: %v, want %v", got, want)
	}

	// CPU: spin until /proc/self/stat shows 50 ms more (its unit is 10 ms).
	for deadline := time.Now().Add(10 * time.Second); read()[procCPUDesc] < first[procCPUDesc]+0.05; {
		if time.Now().After(deadline) {
			t.Fatalf("process_cpu_seconds_total stuck at %v after 10 s of spinning", read()[procCPUDesc])
		}
	}
	// Network: 1 MB through loopback in this network namespace.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, conn)
			conn.Close()
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	before := read()
	if _, err := conn.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		now := read()
		if now[procInDesc] >= before[procInDesc]+1<<20 && now[procOutDesc] >= before[procOutDesc]+1<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("network bytes %v in, %v out after 1 MB over loopback; before %v, %v",
				now[procInDesc], now[procOutDesc], before[procInDesc], before[procOutDesc])
		}
		time.Sleep(time.Millisecond)
	}

	// The kept descriptors read what a fresh open reads.
	for _, f := range []keptFile{c.stat, c.netstat} {
		kept, err := c.readKept(f)
		if err != nil {
			t.Fatal(err)
		}
		kept = slices.Clone(kept)
		fresh, err := c.read(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if f == c.netstat { // counters may move between the reads; the layout may not
			kept, fresh = netstatKeys(kept), netstatKeys(fresh)
		} else {
			kept, fresh = kept[:bytes.IndexByte(kept, ')')], fresh[:bytes.IndexByte(fresh, ')')]
		}
		if !bytes.Equal(kept, fresh) {
			t.Errorf("%s through the kept descriptor:\n%s\nopened afresh:\n%s", f.path, kept, fresh)
		}
	}
}

// netstatKeys is the header lines of /proc/self/net/netstat text b.
func netstatKeys(b []byte) []byte {
	var out []byte
	for i, line := range bytes.Split(b, []byte("\n")) {
		if i%2 == 0 {
			out = append(append(out, line...), '\n')
		}
	}
	return out
}
