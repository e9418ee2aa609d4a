package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/gpufrag/gpufrag/internal/testkit"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// openTerminal opens a pseudo-terminal cols columns wide, in raw mode (no
// CR added before LF), and returns its terminal end and a function that
// closes it and returns what was written to it. It skips the test where
// the system has no pseudo-terminals.
func openTerminal(t *testing.T, cols int) (tty *os.File, output func() string) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	if _, err := term.MakeRaw(int(tty.Fd())); err != nil {
		t.Fatal(err)
	}
	// Read as the command writes: a terminal holds only a few KiB.
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(ptmx) // EIO once the terminal end is closed
		read <- b
	}()
	return tty, func() string {
		tty.Close()
		b := <-read
		ptmx.Close()
		return string(b)
	}
}

// simulateOn runs simulate with its stdout on a terminal cols columns wide.
func simulateOn(t *testing.T, cols int) string {
	t.Helper()
	return onTerminal(t, cols, "simulate")
}

// onTerminal runs the command line with its stdout on a terminal cols
// columns wide (stderr, a buffer: no progress bar).
func onTerminal(t *testing.T, cols int, args ...string) string {
	t.Helper()
	tty, output := openTerminal(t, cols)
	var errb bytes.Buffer
	code := Main(args, strings.NewReader(""), tty, &errb)
	out := output()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	return out
}

// TestSimulateFitsTerminal: on a terminal narrower than simulate's tables
// (its width, or COLUMNS), every line of the default report fits and
// every name and figure is still there; on a terminal wide enough, and in
// a pipe or a buffer whatever COLUMNS says, the report is the full-width
// one byte for byte.
func TestSimulateFitsTerminal(t *testing.T) {
	skipHeavy(t)
	t.Setenv("COLUMNS", "")
	code, piped, stderr := run(t, "", "simulate")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	full, _ := testkit.WidestLine(piped)
	if full <= 120 {
		t.Fatalf("the full-width report is %d columns: the test needs one wider than its terminals", full)
	}
	t.Setenv("COLUMNS", "100")
	if _, got, _ := run(t, "", "simulate"); got != piped {
		t.Errorf("COLUMNS=100 changed the output to a buffer:\n%s", got)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		read <- b
	}()
	Main([]string{"simulate"}, strings.NewReader(""), w, io.Discard)
	w.Close()
	if got := string(<-read); got != piped {
		t.Errorf("COLUMNS=100 changed the output to a pipe:\n%s", got)
	}

	for _, tc := range []struct {
		name    string
		cols    int    // the terminal's
		columns string // COLUMNS
		fit     int    // the widest a line may be
	}{
		{"terminal 100", 100, "", 100},
		{"terminal 80", 80, "", 80},
		{"COLUMNS=100 on a terminal 200", 200, "100", 100},
		{"COLUMNS=junk on a terminal 100", 100, "junk", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("COLUMNS", tc.columns)
			got := simulateOn(t, tc.cols)
			for i, line := range strings.Split(got, "\n") {
				// The legend's OOM line is prose of 83 characters, in every layout.
				if n := utf8.RuneCountInString(line); n > tc.fit && !strings.HasPrefix(line, "OOM: ") {
					t.Errorf("line %d is %d columns, over %d: %q", i+1, n, tc.fit, line)
				}
			}
			if !slices.Equal(testkit.Words(got), testkit.Words(piped)) {
				t.Errorf("the names and figures differ from the full-width report's:\n%s", got)
			}
			if !strings.Contains(got, "\ncontiguous-grow / caching:expandable_segments:True\n") {
				t.Errorf("no row stacked:\n%s", got)
			}
		})
	}
	t.Run("terminal 200", func(t *testing.T) {
		t.Setenv("COLUMNS", "")
		if got := simulateOn(t, 200); got != piped {
			t.Errorf("a terminal wide enough changed the output:\n%s", got)
		}
	})
}

// TestAnalyzeWhatIfFitsTerminal: on a terminal of 80 columns analyze's
// what-if table wraps its longest settings to fit; in a buffer, and on a
// terminal wide enough, the report is the full-width one.
func TestAnalyzeWhatIfFitsTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "")
	args := []string{"analyze", "../../../../examples/snapshot.pickle"}
	code, piped, stderr := run(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	whatIf := func(text string) string {
		_, table, ok := strings.Cut(text, "\nWhat if (")
		if !ok {
			t.Fatalf("no what-if table:\n%s", text)
		}
		table, _, _ = strings.Cut(table, "\n\n")
		return table
	}
	if n, line := testkit.WidestLine(whatIf(piped)); n <= 80 {
		t.Fatalf("the full-width what-if table is %d columns (%q): the test needs one wider than 80", n, line)
	}
	got := whatIf(onTerminal(t, 80, args...))
	if n, line := testkit.WidestLine(got); n > 80 {
		t.Errorf("on 80 columns a what-if line is %d: %q\n%s", n, line, got)
	}
	if !strings.Contains(got, "\n  caching:garbage_collection_threshold:0.8,") || !strings.Contains(got, "\n    per_process_memory_fraction:1.0\n") {
		t.Errorf("the long settings are not wrapped:\n%s", got)
	}
	if got := onTerminal(t, 300, args...); got != piped {
		t.Errorf("a terminal wide enough changed the output:\n%s", got)
	}
}

// TestClusterSimulateFitsTerminal: cluster simulate's table, 132 columns
// in a pipe, fits a terminal of 100 and of 80, and so does its legend
// (lines of 83-94 columns), every figure kept, each policy's name on the
// line of its first figures (short names are not stacked).
func TestClusterSimulateFitsTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "")
	args := []string{"cluster", "simulate", "--nodes", "../../../../examples/nodes.csv", "--pods", "../../../../examples/pods.csv",
		"--policy", "random,bestfit,fgd", "--seeds", "42-43"}
	code, piped, stderr := run(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n, line := testkit.WidestLine(piped); n <= 100 {
		t.Fatalf("the full-width report is %d columns (%q): the test needs one wider than 100", n, line)
	}
	for _, cols := range []int{100, 80} {
		got := onTerminal(t, cols, args...)
		if n, line := testkit.WidestLine(got); n > cols {
			t.Errorf("on %d columns a line is %d: %q\n%s", cols, n, line, got)
		}
		if !slices.Equal(testkit.Words(got), testkit.Words(piped)) {
			t.Errorf("on %d columns the names and figures differ from the full-width report's:\n%s", cols, got)
		}
		for _, policy := range []string{"policy", "random", "bestfit", "fgd"} {
			if !slices.ContainsFunc(strings.Split(got, "\n"), func(line string) bool {
				f := strings.Fields(line)
				return len(f) > 2 && f[0] == policy
			}) {
				t.Errorf("on %d columns %s is not on the line of its figures:\n%s", cols, policy, got)
			}
		}
	}
	if got := onTerminal(t, 200, args...); got != piped {
		t.Errorf("a terminal wide enough changed the output:\n%s", got)
	}
}

// TestAdviseFitsTerminal: advise's table and sentences, up to hundreds of
// columns in a pipe, fit a terminal of 80 and 100, every name and figure
// kept; only the deploy command, copied whole, may be wider. A terminal
// wide enough gets the piped bytes.
func TestAdviseFitsTerminal(t *testing.T) {
	skipAdviseSims(t)
	t.Setenv("COLUMNS", "")
	args := adviseArgs()
	code, piped, stderr := run(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	deploy := func(text string) bool { return strings.Contains(text, "\nTo deploy it:\n  ") }
	if !deploy(piped) {
		t.Fatalf("no deploy command:\n%s", piped)
	}
	_, table, _ := strings.Cut(piped, "\n\n")
	if n, line := testkit.WidestLine(strings.SplitN(table, "\n\n", 2)[0]); n <= 100 {
		t.Fatalf("the full-width table is %d columns (%q): the test needs one wider than 100", n, line)
	}
	for _, cols := range []int{80, 100} {
		got := onTerminal(t, cols, args...)
		body, cmd, _ := strings.Cut(got, "\nTo deploy it:\n")
		if n, line := testkit.WidestLine(body); n > cols {
			t.Errorf("on %d columns a line is %d: %q\n%s", cols, n, line, got)
		}
		if !strings.HasSuffix(piped, "\nTo deploy it:\n"+cmd) {
			t.Errorf("on %d columns the deploy command changed:\n%s", cols, cmd)
		}
		if !slices.Equal(testkit.Words(got), testkit.Words(piped)) {
			t.Errorf("on %d columns the names and figures differ from the full-width report's:\n%s", cols, got)
		}
	}
	if got := onTerminal(t, 1000, args...); got != piped {
		t.Errorf("a terminal wide enough changed the output:\n%s", got)
	}
}

// TestAnalyzeFitsTerminal: every line of analyze's report, with call
// sites or with full stacks, fits a terminal of 100 and of 80, and
// COLUMNS=80 on a wider one: its sentences (the health one is 288
// characters), its per-stream and per-pool lines, its call sites, the
// attribution's heading (99 columns in a pipe) and the segments table (83),
// every name and figure kept (the what-if table's are
// TestAnalyzeWhatIfFitsTerminal's); a terminal wide enough gets the piped
// bytes.
func TestAnalyzeFitsTerminal(t *testing.T) {
	for _, args := range [][]string{
		{"analyze", "--full-stacks", "../../../../examples/snapshot.pickle"},
		{"analyze", "../../../../examples/snapshot.pickle"},
	} {
		t.Run(strings.Join(args[:len(args)-1], " "), func(t *testing.T) { analyzeFitsTerminal(t, args) })
	}
}

func analyzeFitsTerminal(t *testing.T, args []string) {
	t.Setenv("COLUMNS", "")
	code, piped, stderr := run(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n, line := testkit.WidestLine(piped); n <= 200 {
		t.Fatalf("the full-width report is %d columns (%q): the test needs a longer line", n, line)
	}
	_, segments, _ := strings.Cut(piped, "\nSegments that waste most")
	segments, _, _ = strings.Cut(segments, "\n\n")
	if n, line := testkit.WidestLine(segments); n <= 80 {
		t.Fatalf("the full-width segments table is %d columns (%q): the test needs one wider than 80", n, line)
	}
	for _, tc := range []struct {
		term    int    // the terminal's columns
		columns string // COLUMNS
		cols    int    // the widest a line may be
	}{{80, "", 80}, {100, "", 100}, {200, "80", 80}} {
		t.Setenv("COLUMNS", tc.columns)
		cols := tc.cols
		got := onTerminal(t, tc.term, args...)
		if n, line := testkit.WidestLine(got); n > cols {
			t.Errorf("on %d columns a line is %d: %q\n%s", cols, n, line, got)
		}
		// Each segment on one line, its address and its seven figures.
		_, table, _ := strings.Cut(got, "\nSegments that waste most (stranded free + rounding)\n")
		table, _, _ = strings.Cut(table, "\n\n")
		for _, row := range strings.Split(table, "\n")[1:] {
			if f := strings.Fields(row); len(f) != 8 || !strings.HasPrefix(f[0], "0x") {
				t.Errorf("on %d columns a row of the segments table reads %q:\n%s", cols, row, table)
			}
		}
		// The what-if table wraps its settings inside a word
		// (TestAnalyzeWhatIfFitsTerminal): compare the rest.
		outside := func(text string) []string {
			head, rest, _ := strings.Cut(text, "\nWhat if (")
			_, rest, _ = strings.Cut(rest, "\nRecommendation:")
			return testkit.Words(head + "\n" + rest)
		}
		if !slices.Equal(outside(got), outside(piped)) {
			t.Errorf("on %d columns the names and figures differ from the full-width report's:\n%s", cols, got)
		}
	}
	t.Setenv("COLUMNS", "")
	if got := onTerminal(t, 400, args...); got != piped {
		t.Errorf("a terminal wide enough changed the output:\n%s", got)
	}
}

// fitsTerminal runs args in a pipe and on terminals: the piped report
// must be wider than wider columns (else the test proves nothing); on 80
// columns every line fits and the piped report's words all stay, in
// order; and a terminal of wide columns (0: as wide as the piped report's
// widest line) gets the piped bytes.
func fitsTerminal(t *testing.T, wider, wide int, args ...string) {
	t.Helper()
	code, piped, stderr := run(t, "", args...)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", args, code, stderr)
	}
	n, line := testkit.WidestLine(piped)
	if n <= wider {
		t.Fatalf("%s: the full-width report is %d columns (%q): the test needs one wider than %d", args, n, line, wider)
	}
	got := onTerminal(t, 80, args...)
	if n, line := testkit.WidestLine(got); n > 80 {
		t.Errorf("%s: on 80 columns a line is %d: %q\n%s", args, n, line, got)
	}
	if !slices.Equal(testkit.Words(got), testkit.Words(piped)) {
		t.Errorf("%s: the words differ from the full-width report's:\n%s", args, got)
	}
	if wide == 0 {
		wide = n
	}
	if got := onTerminal(t, wide, args...); got != piped {
		t.Errorf("%s: a terminal of %d columns changed the output:\n%s", args, wide, got)
	}
}

// TestReplayFitsTerminal: replay's table, 100 columns in a pipe (123 with
// a long allocator name), fits a terminal of 80, every name and figure
// kept; a terminal wide enough gets the piped bytes.
func TestReplayFitsTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "")
	for _, args := range [][]string{
		{"replay"},
		{"replay", "../../../../examples/ops.jsonl", "--alloc", "caching", "--alloc", "caching:expandable_segments:True"},
	} {
		fitsTerminal(t, 80, 200, args...)
	}
}

// TestCalibrateFitsTerminal: calibrate's tables (a run's metrics, 87
// columns in a pipe) and its load sentence fit a terminal of 80, every
// name and figure kept; a terminal wide enough gets the piped bytes.
func TestCalibrateFitsTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "")
	args := []string{"calibrate", "../../../../examples/vllm_bench_qps01.json", "--holdout", "../../../../examples/vllm_bench_qps16.json",
		"--model", "llama-3.1-70b", "--gpu", "a100-40g", "--tp", "8"}
	fitsTerminal(t, 80, 300, args...)
}

// TestDiffFitsTerminal: diff's sentences and sites table (109 and 100
// columns in a pipe for the two example snapshots), and with four files
// its outlier table (126), fit a terminal of 80, every name and figure
// kept; a terminal wide enough gets the piped bytes.
func TestDiffFitsTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "")
	dir := t.TempDir()
	pair := []string{"diff", "../../../../examples/snapshot.pickle", "../../../../examples/snapshot-later.pickle"}
	ranks := []string{"diff"}
	for i, src := range []string{"snapshot.pickle", "snapshot.pickle", "snapshot-later.pickle", "snapshot.pickle"} {
		b, err := os.ReadFile("../../../../examples/" + src)
		if err != nil {
			t.Fatal(err)
		}
		ranks = append(ranks, writeFile(t, dir, fmt.Sprintf("rank%d.pickle", i), b))
	}
	for _, args := range [][]string{pair, append(pair[:1:1], append([]string{"--full-stacks"}, pair[1:]...)...), ranks} {
		fitsTerminal(t, 100, 200, args...)
	}
}

// TestDefragFitsTerminal: defrag's fragmentation sentence and pause (96
// and 106 columns in a pipe on the example snapshot, 107 with a note that
// no room was made) fit a terminal of 80, every name and figure kept; a
// terminal wide enough gets the piped bytes.
func TestDefragFitsTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "")
	for _, args := range [][]string{
		{"defrag", "../../../../examples/snapshot.pickle"},
		{"defrag", "../../../../examples/snapshot.pickle", "--goal", "fit:2GiB", "--gpu", "h200-141g"},
	} {
		fitsTerminal(t, 100, 0, args...)
	}
}

// TestClusterInspectFitsTerminal: cluster inspect's sentences (up to 126
// columns in a pipe) fit a terminal of 80, every name and figure kept;
// over hostile names (a long escaped model) the table, 176 columns in a
// pipe, fits it too, the node and the model clipped; a terminal wide
// enough gets the piped bytes.
func TestClusterInspectFitsTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "")
	saved := []string{"cluster", "inspect", "--all", "--from", "../../../../cluster/kube/testdata/cluster.json"}
	hostile := []string{"cluster", "inspect", "--all", "--from", "../../../../cluster/kube/testdata/hostile.json"}
	for _, args := range [][]string{saved, hostile} {
		code, piped, stderr := run(t, "", args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", args, code, stderr)
		}
		if n, line := testkit.WidestLine(piped); n <= 100 {
			t.Fatalf("%s: the full-width report is %d columns (%q): the test needs one wider than 100", args, n, line)
		}
		got := onTerminal(t, 80, args...)
		if got := onTerminal(t, 400, args...); got != piped {
			t.Errorf("%s: a terminal wide enough changed the output:\n%s", args, got)
		}
		if args[len(args)-1] == saved[len(saved)-1] {
			if n, line := testkit.WidestLine(got); n > 80 {
				t.Errorf("%s: on 80 columns a line is %d: %q\n%s", args, n, line, got)
			}
			if !slices.Equal(testkit.Words(got), testkit.Words(piped)) {
				t.Errorf("%s: the names and figures differ from the full-width report's:\n%s", args, got)
			}
			continue
		}
		// A hostile name is one word of 70 escaped characters, which
		// the sentences print whole: the table must fit.
		_, table, _ := strings.Cut(got, "\n\n")
		table, _, _ = strings.Cut(table, "\n\n")
		if n, line := testkit.WidestLine(table); n > 80 || !strings.Contains(table, "…") {
			t.Errorf("%s: on 80 columns a line of the table is %d: %q\n%s", args, n, line, table)
		}
	}
}

// TestExperimentsFitTerminal: experiments list (claims on lines up to 302
// columns in a pipe) and run (an arithmetic experiment's claim, 83) fit a
// terminal of 80, every word kept; a terminal wide enough gets the piped
// bytes.
func TestExperimentsFitTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "")
	for _, args := range [][]string{{"experiments", "list"}, {"experiments", "run", "kv-1m-llama70b"}} {
		fitsTerminal(t, 80, 0, args...)
	}
}
