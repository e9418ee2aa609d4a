//go:build linux

package exporter

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// FuzzProcParsers feeds any bytes to the process collector's parsers of
// /proc files (parseProcStat, parseBootTime, parseIPExtOctets,
// parseDecimal): none panics, and each agrees with a plain reading by the
// standard library: parseDecimal with strconv.ParseUint (for up to 20
// digits, the longest a 64-bit value prints), parseProcStat with the
// fields after the last ')' split on blanks, parseBootTime with the first
// "btime " line. Seeds: this process's own files and the crafted ones of
// TestProcessParsersAsProcfs.
func FuzzProcParsers(f *testing.F) {
	for _, path := range []string{"/proc/self/stat", "/proc/stat", "/proc/self/net/netstat"} {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"", "0", "18446744073709551615", "18446744073709551616", "1 (x", "1 (x) S 1 2",
		"4242 (a b) (c d) S 1 2 3 4 5 6 7 8 9 10 12345 11 12 13 14 15 16 17 18 19 7 20\n",
		"btime 1700000000\n", "cpu 1 2\nbtime  42 \n",
		"IpExt: InNoRoutes InOctets OutOctets\nIpExt: 1 18446744073709551615 9007199254740993\n",
		"IpExt: InOctets OutOctets\nIpExt: 1\n",
	} {
		f.Add([]byte(s))
	}
	blank := func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' }
	f.Fuzz(func(t *testing.T, data []byte) {
		if v, ok := parseDecimal(data); len(data) <= 20 {
			want, err := strconv.ParseUint(string(data), 10, 64)
			if ok != (err == nil) || (ok && v != want) {
				t.Fatalf("parseDecimal(%q) = %d, %v; strconv %d, %v", data, v, ok, want, err)
			}
		} else if ok {
			t.Fatalf("parseDecimal(%q): %d bytes accepted", data, len(data))
		}

		st, ok := parseProcStat(data)
		if r := bytes.LastIndexByte(data, ')'); ok {
			fields := bytes.FieldsFunc(data[r+1:], blank)
			num := func(k int) uint64 {
				v, err := strconv.ParseUint(string(fields[k-3]), 10, 64)
				if err != nil {
					t.Fatalf("parseProcStat(%q) ok, but field %d is %q: %v", data, k, fields[k-3], err)
				}
				return v
			}
			if len(fields) < 24-3+1 || st.utime != num(14) || st.stime != num(15) || st.starttime != num(22) ||
				st.vsize != num(23) || st.rss != int64(num(24)) {
				t.Fatalf("parseProcStat(%q) = %+v, not fields 14, 15, 22, 23, 24", data, st)
			}
		}

		if v, ok := parseBootTime(data); ok {
			i := bytes.Index(data, []byte("btime "))
			if i < 0 || (i > 0 && data[i-1] != '\n') {
				t.Fatalf("parseBootTime(%q) = %d without a btime line", data, v)
			}
		}

		if in, out, ok := parseIPExtOctets(data); !ok && (in != 0 || out != 0) {
			t.Fatalf("parseIPExtOctets(%q) failed but returned %v, %v", data, in, out)
		}
	})
}
