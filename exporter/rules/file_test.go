package rules

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFile: the rules file holds what WriteRules writes, readable by
// all, with no temporary file left beside it; a directory that does not
// exist is an error.
func TestWriteFile(t *testing.T) {
	ts := []Threshold{{Instance: "a:1", Model: "m", Points: 10, LowHealth: 0.6, Threshold: 0.55}}
	o := RuleOptions{For: "10m", Severity: "warning", Quantile: 0.95}
	dir := t.TempDir()
	path := filepath.Join(dir, "r.yml")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, ts, o); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := WriteRules(&want, ts, o); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("file %q (%v), want %q", got, err, want.String())
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("left in the directory: %v", es)
	}
	if err := WriteFile(filepath.Join(dir, "no", "r.yml"), ts, o); err == nil {
		t.Error("a missing directory: no error")
	}
}

// TestWriteTable: a row per threshold with the note of a fallback or a
// clamp, names escaped, and where the rules went.
func TestWriteTable(t *testing.T) {
	o := DefaultOptions()
	ts := []Threshold{
		{Instance: "a\x1b:1", Model: "m", Series: 2, Points: 3, Threshold: 0.5, Fallback: true},
		{Instance: "b:1", Model: "m", Series: 1, Points: 900, LowHealth: 0.9, FragQuantile: 0.1, Threshold: 0.8, Clamped: "max"},
	}
	var b strings.Builder
	if err := WriteTable(&b, ts, o, "r.yml"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"INSTANCE  MODEL  SERIES  POINTS  P95 FRAG", `a\x1b:1`, "fewer than", "points: fleet default",
		"0.100     0.900       0.800      clamped to max", "\n2 alert rules written to r.yml (check: promtool check rules r.yml)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestReadHistoryFile: "-" reads stdin as "<stdin>"; a path is read and
// named as given; a missing file is the open error.
func TestReadHistoryFile(t *testing.T) {
	csv := "timestamp,instance,model,health\n1,a:1,m,0.9\n2,a:1,m,0.8\n"
	h, name, format, err := ReadHistoryFile("-", strings.NewReader(csv), "auto", ReadOptions{})
	if err != nil || name != "<stdin>" || format != FormatCSV || len(h.Series) != 1 {
		t.Fatalf("stdin: %q %q %v", name, format, err)
	}
	path := filepath.Join(t.TempDir(), "h.csv")
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, name, _, err := ReadHistoryFile(path, nil, "auto", ReadOptions{}); err != nil || name != path {
		t.Errorf("file: %q %v", name, err)
	}
	if _, _, _, err := ReadHistoryFile(path+".none", nil, "auto", ReadOptions{}); !os.IsNotExist(err) {
		t.Errorf("missing: %v", err)
	}
}
