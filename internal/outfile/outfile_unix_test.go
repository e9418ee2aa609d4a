//go:build unix

package outfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A device or a named pipe is written in place: a rename would replace
// the node.
func TestSpecialFilesInPlace(t *testing.T) {
	if err := WriteFile(os.DevNull, []byte("discarded"), 0o644); err != nil {
		t.Fatalf("%s: %v", os.DevNull, err)
	}
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode().IsRegular() {
		t.Fatalf("%s is now %v (%v)", os.DevNull, fi, err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	got := make(chan string)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	if err := WriteFile(fifo, []byte("through the pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the pipe" {
		t.Errorf("reader got %q", s)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", fi, err)
	}
}

// A new file's mode is perm narrowed by the umask, as os.Create and
// os.WriteFile make it: a report written under umask 077 is not readable
// by others. WritePerm's perm is exact (a rules file another user reads).
func TestNewFileHonoursUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new file under umask 077: mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	rules := filepath.Join(dir, "rules.yml")
	if err := WritePerm(rules, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(rules); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("WritePerm under umask 077: mode %v (%v), want 0644", fi.Mode().Perm(), err)
	}
}

// A file the user may write in a directory they may not is written in
// place rather than refused (no temporary file can be made beside it).
func TestReadOnlyDirectoryWrittenInPlace(t *testing.T) {
	if os.Geteuid() == 0 {
		// Root writes into a read-only directory anyway, and CI runs as
		// root: run this test again as nobody.
		rerunAsNobody(t)
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if err := WriteFile(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("file holds %q", b)
	}
}

// rerunAsNobody runs the calling test again in a copy of the test binary
// as uid and gid 65534, and fails with its output if it fails there; it
// skips where the process may not change its user (a container without
// CAP_SETUID).
func rerunAsNobody(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	// The go command's build directory is root's alone: copy the binary
	// where nobody can run it, and give it a working directory it can read.
	dir, err := os.MkdirTemp("", "outfile-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "outfile.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+os.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EPERM) {
		t.Skipf("root writes into a read-only directory anyway, and this process may not run the test as nobody: %v", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
}
