//go:build linux

package exporter

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// NewProcessCollector returns a collector of what client_golang's
// collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})
// exports, with the same families (names, help, types, no labels) and
// values read from the same kernel figures at every collection, on a
// cheaper path (docs/benchmarks.md, "Issue 27, fourth round"):
//
//   - /proc/self/stat (CPU time, virtual and resident memory) and
//     /proc/self/net/netstat (IpExt InOctets, OutOctets) are read into a
//     buffer kept between collections and parsed without allocating,
//     where client_golang's procfs scans them with fmt and bufio;
//   - the open and maximum file descriptors and the address-space limit
//     come from stat(2) of /proc/self/fd and getrlimit(2), the values
//     that /proc/self/limits prints, without formatting and parsing it;
//   - the start time, the kernel's boot time (/proc/stat btime) plus the
//     process's start in ticks, is computed at the first collection and
//     kept: client_golang reads the whole /proc/stat (every CPU's and
//     interrupt's counters) at every scrape for it. The boot time moves
//     only when the wall clock is stepped; this one then keeps the start
//     time the process had when first collected (docs/monitoring.md).
//
// As client_golang's (ReportErrors false), a figure that cannot be read is
// left out of that collection.
//
// /proc/self/stat and /proc/self/net/netstat are opened once, here, and
// read again from offset 0 at each collection (procfs generates a file's
// text anew for a read at offset 0), and /proc/self/fd is opened once
// (O_PATH) and fstat(2)ed (procfs counts the descriptors at each stat):
// the path walks of open(2), stat(2) and close(2) were half of the
// collector's time (docs/benchmarks.md, "Issue 27, sixth round"). They
// are the process's own files (its /proc/self, the network namespace it
// runs in), so what they read does not change; the three descriptors
// count in process_open_fds, and are closed when the collector is
// garbage. A file that cannot be opened here is opened (stat'ed) at each
// collection, as before.
func NewProcessCollector() prometheus.Collector { return newProcessCollector() }

func newProcessCollector() *processCollector {
	c := &processCollector{
		pageSize: os.Getpagesize(),
		stat:     openKept("/proc/self/stat", syscall.O_RDONLY),
		netstat:  openKept("/proc/self/net/netstat", syscall.O_RDONLY),
		fdDir:    openKept("/proc/self/fd", unix.O_PATH|syscall.O_DIRECTORY),
	}
	runtime.AddCleanup(c, func(fds [3]int) {
		for _, fd := range fds {
			if fd >= 0 {
				_ = syscall.Close(fd)
			}
		}
	}, [3]int{c.stat.fd, c.netstat.fd, c.fdDir.fd})
	return c
}

type processCollector struct {
	pageSize             int
	stat, netstat, fdDir keptFile

	mu      sync.Mutex // guards what follows: one collection at a time
	buf     []byte     // the last file read, kept for the next
	started bool       // start holds the start time
	start   float64
}

// keptFile is a /proc file opened once (fd; -1 if it could not be).
type keptFile struct {
	path string
	fd   int
}

func openKept(path string, mode int) keptFile {
	fd, err := retryN(func() (int, error) { return syscall.Open(path, mode|syscall.O_CLOEXEC, 0) })
	if err != nil {
		fd = -1
	}
	return keptFile{path: path, fd: fd}
}

// userHZ is the unit of the CPU and start times of /proc/self/stat, as
// procfs (client_golang's reader) assumes: USER_HZ, 100 on every Linux
// architecture Go supports.
const userHZ = 100

func (c *processCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range procDescs {
		ch <- d
	}
}

func (c *processCollector) Collect(ch chan<- prometheus.Metric) {
	c.each(func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
		ch <- prometheus.MustNewConstMetric(d, t, v)
	})
}

// each reads the process's figures and calls emit with each that could
// be read, in Collect's order: what Collect sends, without a metric
// made for it (runtimeFamilies writes the values into its templates).
func (c *processCollector) each(emit func(d *prometheus.Desc, t prometheus.ValueType, v float64)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if data, err := c.readKept(c.stat); err == nil {
		if st, ok := parseProcStat(data); ok {
			emit(procCPUDesc, prometheus.CounterValue, float64(st.utime+st.stime)/userHZ)
			emit(procVsizeDesc, prometheus.GaugeValue, float64(st.vsize))
			emit(procRSSDesc, prometheus.GaugeValue, float64(st.rss*int64(c.pageSize)))
			if !c.started {
				if data, err := c.read("/proc/stat"); err == nil {
					if btime, ok := parseBootTime(data); ok {
						c.start, c.started = float64(btime)+float64(st.starttime)/userHZ, true
					}
				}
			}
			if c.started {
				emit(procStartDesc, prometheus.GaugeValue, c.start)
			}
		}
	}
	if n, err := c.openFDs(); err == nil {
		emit(procOpenFDsDesc, prometheus.GaugeValue, float64(n))
	}
	var files, as syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &files) == nil && syscall.Getrlimit(syscall.RLIMIT_AS, &as) == nil {
		emit(procMaxFDsDesc, prometheus.GaugeValue, float64(files.Cur))
		emit(procMaxVsizeDesc, prometheus.GaugeValue, float64(as.Cur))
	}
	if data, err := c.readKept(c.netstat); err == nil {
		if in, out, ok := parseIPExtOctets(data); ok {
			emit(procInDesc, prometheus.CounterValue, in)
			emit(procOutDesc, prometheus.CounterValue, out)
		}
	}
}

// read reads the file at path into c.buf (grown as needed) and returns it.
func (c *processCollector) read(path string) ([]byte, error) {
	fd, err := retryN(func() (int, error) { return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0) })
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	return c.readFD(fd)
}

// readKept reads f from its start through its kept descriptor, or opens
// it if there is none.
func (c *processCollector) readKept(f keptFile) ([]byte, error) {
	if f.fd < 0 {
		return c.read(f.path)
	}
	return c.readFD(f.fd)
}

// readFD reads the file open at fd from offset 0 to its end into c.buf
// (grown as needed) and returns it.
func (c *processCollector) readFD(fd int) ([]byte, error) {
	if c.buf == nil {
		c.buf = make([]byte, 8<<10) // /proc/self/net/netstat is ~4 KB
	}
	n := 0
	for {
		if n == len(c.buf) {
			c.buf = append(c.buf, make([]byte, len(c.buf))...)
		}
		m, err := retryN(func() (int, error) { return syscall.Pread(fd, c.buf[n:], int64(n)) })
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return c.buf[:n], nil
		}
		n += m
	}
}

// openFDs counts the process's open file descriptors as procfs does: the
// size of /proc/self/fd where the kernel reports it (Linux 6.2 and
// later), else its entries (the directory's own descriptor included).
func (c *processCollector) openFDs() (int, error) {
	var st syscall.Stat_t
	var err error
	if c.fdDir.fd >= 0 {
		err = syscall.Fstat(c.fdDir.fd, &st) // procfs counts anew at each stat
	} else {
		err = syscall.Stat(c.fdDir.path, &st)
	}
	if err != nil {
		return 0, err
	}
	if st.Size > 0 {
		return int(st.Size), nil
	}
	return c.countEntries(c.fdDir.path)
}

// countEntries counts the entries of the directory at path, as
// os.File.Readdirnames lists them (not "." and "..").
func (c *processCollector) countEntries(path string) (int, error) {
	fd, err := retryN(func() (int, error) {
		return syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fd)
	if c.buf == nil {
		c.buf = make([]byte, 8<<10)
	}
	count := 0
	for {
		n, err := retryN(func() (int, error) { return syscall.ReadDirent(fd, c.buf) })
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return count, nil
		}
		count += countDirents(c.buf[:n])
	}
}

// retryN is retryEINTR (safefile_unix.go) for a call that returns a count.
func retryN(f func() (int, error)) (n int, err error) {
	err = retryEINTR(func() error { n, err = f(); return err })
	return n, err
}

// countDirents counts the linux_dirent64 records of buf other than "."
// and ".." (and those with inode 0), as os.File.Readdirnames lists them.
func countDirents(buf []byte) int {
	const nameOff = 19 // d_ino u64, d_off s64, d_reclen u16, d_type u8
	count := 0
	for len(buf) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(buf[16:]))
		if reclen < nameOff || reclen > len(buf) {
			break
		}
		name := buf[nameOff:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if binary.NativeEndian.Uint64(buf) != 0 && string(name) != "." && string(name) != ".." {
			count++
		}
		buf = buf[reclen:]
	}
	return count
}

// procStat is what the process collector reads of /proc/self/stat.
type procStat struct {
	utime, stime, starttime, vsize uint64
	rss                            int64 // pages
}

// parseProcStat parses /proc/[pid]/stat: after the command name in
// parentheses (which may hold spaces and parentheses: the last ')' ends
// it), fields 14 (utime), 15 (stime), 22 (starttime), 23 (vsize) and 24
// (rss) of proc(5).
func parseProcStat(data []byte) (procStat, bool) {
	r := bytes.LastIndexByte(data, ')')
	if r < 0 {
		return procStat{}, false
	}
	var st procStat
	field := 3 // the state, the first field after the name
	got := 0
	for rest := data[r+1:]; ; field++ {
		var tok []byte
		tok, rest = nextField(rest)
		if tok == nil {
			return procStat{}, false
		}
		var dst *uint64
		switch field {
		case 14:
			dst = &st.utime
		case 15:
			dst = &st.stime
		case 22:
			dst = &st.starttime
		case 23:
			dst = &st.vsize
		case 24:
			v, ok := parseDecimal(tok)
			if !ok {
				return procStat{}, false
			}
			st.rss = int64(v)
			got++
		}
		if dst != nil {
			v, ok := parseDecimal(tok)
			if !ok {
				return procStat{}, false
			}
			*dst = v
			got++
		}
		if got == 5 {
			return st, true
		}
	}
}

// nextField returns the next run of non-blank bytes of b (nil at the end)
// and what follows it.
func nextField(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && isBlank(b[i]) {
		i++
	}
	j := i
	for j < len(b) && !isBlank(b[j]) {
		j++
	}
	if i == j {
		return nil, nil
	}
	return b[i:j], b[j:]
}

func isBlank(c byte) bool { return c == ' ' || c == '\n' || c == '\t' }

// parseDecimal parses an unsigned decimal integer that fits in 64 bits.
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// parseBootTime returns the btime line's value of /proc/stat.
func parseBootTime(data []byte) (uint64, bool) {
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			return parseDecimal(bytes.TrimSpace(v))
		}
	}
	return 0, false
}

// parseIPExtOctets returns IpExt's InOctets and OutOctets of
// /proc/[pid]/net/netstat (a line of names, then one of values, per
// protocol), 0 for one that is absent as procfs reads it.
func parseIPExtOctets(data []byte) (in, out float64, ok bool) {
	for len(data) > 0 {
		var names, values []byte
		names, data, _ = bytes.Cut(data, []byte{'\n'})
		values, data, _ = bytes.Cut(data, []byte{'\n'})
		if !bytes.HasPrefix(names, []byte("IpExt:")) || !bytes.HasPrefix(values, []byte("IpExt:")) {
			continue
		}
		names, values = names[len("IpExt:"):], values[len("IpExt:"):]
		for {
			var name, value []byte
			name, names = nextField(names)
			value, values = nextField(values)
			if name == nil || value == nil {
				if name != nil || value != nil { // as many names as values, or nothing
					return 0, 0, false
				}
				return in, out, true
			}
			var dst *float64
			switch string(name) {
			case "InOctets":
				dst = &in
			case "OutOctets":
				dst = &out
			default:
				continue
			}
			v, ok := parseDecimal(value)
			if !ok {
				return 0, 0, false
			}
			*dst = float64(v)
		}
	}
	return 0, 0, true
}

// newProcessReader returns the process collector as runtimeFamilies reads it.
func newProcessReader() processReader { return newProcessCollector() }
