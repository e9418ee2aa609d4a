package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// analyzePiped runs analyze - with in on standard input through a pipe
// and stderr on a terminal (tty) or in a buffer, and returns stdout and
// what stderr received.
func analyzePiped(t *testing.T, in string, tty bool) (stdout, stderr string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		io.WriteString(w, in) // fails once analyze stopped reading: it then exits with its error
		w.Close()
	}()
	defer r.Close()
	var out, errb bytes.Buffer
	var errw io.Writer = &errb
	output := func() string { return errb.String() }
	if tty {
		errw, output = openTerminal(t, 120)
	}
	if code := Main([]string{"analyze", "-"}, r, &out, errw); code != 0 {
		t.Fatalf("exit %d: %s", code, output())
	}
	return out.String(), output()
}

// TestAnalyzeStdinProgress: analyze - reading a pipe, whose size is
// unknown, draws on a terminal stderr the bytes read and their rate once
// they reach progressMinBytes, then the analysis, as a file of that size
// draws its bar; a shorter input draws nothing, as a smaller file does;
// with stderr not a terminal nothing is drawn, and stdout is the same
// bytes either way.
func TestAnalyzeStdinProgress(t *testing.T) {
	big := `{"num_ooms": 1,` + strings.Repeat(" ", progressMinBytes) + `"reserved_bytes.all.current": 4096}`
	piped, errs := analyzePiped(t, big, false)
	if errs != "" || !strings.HasPrefix(piped, "stdin: ") {
		t.Fatalf("stderr a buffer: stderr %q, stdout:\n%s", errs, piped)
	}
	out, drawn := analyzePiped(t, big, true)
	if out != piped {
		t.Errorf("a terminal stderr changed stdout:\n%s\nwant:\n%s", out, piped)
	}
	for _, want := range []string{"read stdin", "16.0 MiB", "MiB/s", "analyze stdin"} {
		if !strings.Contains(drawn, want) {
			t.Errorf("the terminal lacks %q: %q", want, drawn)
		}
	}
	if _, drawn := analyzePiped(t, `{"num_ooms": 1, "reserved_bytes.all.current": 4096}`, true); drawn != "" {
		t.Errorf("an input under progressMinBytes drew %q", drawn)
	}
}

// TestAnalyzeStdinFileProgress: standard input redirected from a regular
// file (analyze - < FILE) has the file's size, and draws the bar a file
// of that size draws, with its total.
func TestAnalyzeStdinFileProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stats.json")
	big := `{"num_ooms": 1,` + strings.Repeat(" ", progressMinBytes) + `"reserved_bytes.all.current": 4096}`
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tty, output := openTerminal(t, 120)
	var out bytes.Buffer
	code := Main([]string{"analyze", "-"}, f, &out, tty)
	drawn := output()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, drawn)
	}
	if want := "/ " + strconv.Itoa(len(big)); !strings.Contains(drawn, "read stdin") || !strings.Contains(drawn, want) {
		t.Errorf("the terminal lacks the file's size %q: %q", want, drawn)
	}
}
