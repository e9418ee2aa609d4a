package examples

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/internal/longtest"
	"github.com/gpufrag/gpufrag/internal/testkit"
)

// The README's conventions this test reads (say them in the README's own
// blocks, not here alone):
//
//   - Every command of a ```sh block runs from the repository's root of a
//     clone: lines ending in a backslash continue, "# ..." lines are
//     comments, NAME=VALUE alone on a line sets a variable for the block's
//     later commands.
//   - A comment line "# needs: REASON" marks the next command as one a
//     clone cannot run by itself (a GPU, a running server, a cluster, many
//     minutes); the test skips it and says why.
//   - An HTML comment "<!-- output of: COMMAND -->" just before a plain
//     ``` block says the block shows what COMMAND prints: each of its
//     non-blank lines must be a line of COMMAND's standard output, in order
//     (an abridged block leaves lines out; it may not change one).
//   - No command names ../shared, which a clone does not have.
const (
	needsPrefix  = "# needs:"
	outputPrefix = "<!-- output of:"
	gpufragCmd   = "go run ./cmd/gpufrag"
)

// commandTimeout bounds one README command. The slowest takes about 8 s
// on 2 cores (simulate --html on the ShareGPT example); a minute leaves room
// for a loaded CI machine without letting a hung command eat the budget.
const commandTimeout = time.Minute

// readmeCommand is one logical command of a ```sh block.
type readmeCommand struct {
	line  int    // README line where it starts
	text  string // continuation lines joined
	needs string // the "# needs:" reason that marks it, if any
	vars  []string
}

// readmeOutput is a plain block that shows a command's output.
type readmeOutput struct {
	line    int // README line of the block's first line
	command string
	lines   []string
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=\S*$`)

// parseReadme reads the sh blocks and the output blocks of a README.
func parseReadme(r io.Reader) ([]readmeCommand, []readmeOutput, error) {
	var cmds []readmeCommand
	var outs []readmeOutput
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	n := 0
	var (
		inSh, inPlain bool
		vars          []string
		needs         string
		cont          *readmeCommand
		outFor        string // the command of the next plain block
		outLine       int    // the line of its marker
		out           *readmeOutput
	)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case inPlain:
			if trimmed == "```" {
				inPlain = false
				if out != nil {
					outs = append(outs, *out)
					out = nil
				}
				continue
			}
			if out != nil && trimmed != "" {
				out.lines = append(out.lines, strings.TrimRight(line, " \t"))
			}
			continue
		case inSh:
			if cont != nil {
				cont.text += " " + strings.TrimSuffix(trimmed, `\`)
				if !strings.HasSuffix(trimmed, `\`) {
					cmds = append(cmds, *cont)
					cont = nil
				}
				continue
			}
			switch {
			case trimmed == "```":
				if needs != "" {
					return nil, nil, fmt.Errorf("line %d: a \"# needs:\" line with no command after it in its block", n)
				}
				inSh, vars = false, nil
			case strings.HasPrefix(trimmed, needsPrefix):
				needs = strings.TrimSpace(strings.TrimPrefix(trimmed, needsPrefix))
			case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			case assignment.MatchString(trimmed):
				vars = append(vars, trimmed)
				cmds = append(cmds, readmeCommand{line: n, text: trimmed, needs: "only sets a variable for the commands below"})
			default:
				c := readmeCommand{line: n, text: strings.TrimSuffix(trimmed, `\`), needs: needs, vars: vars}
				needs = ""
				if strings.HasSuffix(trimmed, `\`) {
					cont = &c
					continue
				}
				cmds = append(cmds, c)
			}
			continue
		}
		switch {
		case trimmed == "```sh" || trimmed == "```bash":
			inSh = true
		case strings.HasPrefix(trimmed, "```"):
			inPlain = trimmed == "```"
			if !inPlain {
				// another language: skip to its end
				for sc.Scan() {
					n++
					if strings.TrimSpace(sc.Text()) == "```" {
						break
					}
				}
			} else if outFor != "" {
				out = &readmeOutput{line: n + 1, command: outFor}
			}
			outFor = ""
		case strings.HasPrefix(trimmed, outputPrefix):
			outFor = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(trimmed, outputPrefix), "-->"))
			outLine = n
		case trimmed != "" && outFor != "":
			return nil, nil, fmt.Errorf("line %d: an output marker that is not right before a plain ``` block", outLine)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if inSh || inPlain {
		return nil, nil, errors.New("a code block is not closed")
	}
	if outFor != "" {
		return nil, nil, fmt.Errorf("line %d: an output marker with no block after it", outLine)
	}
	return cmds, outs, nil
}

func TestParseReadme(t *testing.T) {
	const readme = "intro\n" +
		"```sh\n" +
		"go run ./cmd/gpufrag simulate   # the main job\n" +
		"# a comment\n" +
		"go run ./cmd/gpufrag replay x \\\n" +
		"    --alloc all\n" +
		"D=examples\n" +
		"# needs: a GPU\n" +
		"go run ./cmd/gpufrag exporter --nvml\n" +
		"```\n" +
		"<!-- output of: go run ./cmd/gpufrag replay -->\n" +
		"```\n" +
		"a  b\n" +
		"\n" +
		"c\n" +
		"```\n" +
		"```go\n" +
		"x := 1\n" +
		"```\n" +
		"```\n" +
		"not an output\n" +
		"```\n"
	cmds, outs, err := parseReadme(strings.NewReader(readme))
	if err != nil {
		t.Fatal(err)
	}
	want := []readmeCommand{
		{line: 3, text: "go run ./cmd/gpufrag simulate   # the main job"},
		{line: 5, text: "go run ./cmd/gpufrag replay x  --alloc all"},
		{line: 7, text: "D=examples", needs: "only sets a variable for the commands below"},
		{line: 9, text: "go run ./cmd/gpufrag exporter --nvml", needs: "a GPU", vars: []string{"D=examples"}},
	}
	if fmt.Sprint(cmds) != fmt.Sprint(want) {
		t.Errorf("commands:\n got %v\nwant %v", cmds, want)
	}
	wantOut := []readmeOutput{{line: 13, command: "go run ./cmd/gpufrag replay", lines: []string{"a  b", "c"}}}
	if fmt.Sprint(outs) != fmt.Sprint(wantOut) {
		t.Errorf("outputs:\n got %v\nwant %v", outs, wantOut)
	}
	for _, bad := range []string{
		"```sh\ngo run ./cmd/gpufrag\n",                                 // not closed
		"```sh\ngo run ./cmd/gpufrag\n# needs: a GPU\n```\n",            // a mark without its command
		"<!-- output of: go run ./cmd/gpufrag -->\ntext\n```\nx\n```\n", // a marker away from its block
		"<!-- output of: go run ./cmd/gpufrag -->\n",                    // a marker without a block
	} {
		if _, _, err := parseReadme(strings.NewReader(bad)); err == nil {
			t.Errorf("parsed without an error:\n%s", bad)
		}
	}
}

// TestReadmeFiles is the quick part of TestReadme, run with -short too:
// README.md parses, no command names ../shared, and every examples/ file a
// command names exists.
func TestReadmeFiles(t *testing.T) {
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmds, _, err := parseReadme(f)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	named := 0
	for _, c := range cmds {
		if strings.Contains(c.text, "../shared") {
			t.Errorf("README.md:%d: %s\nnames ../shared, which a clone does not have: use a file of examples/", c.line, c.text)
		}
		for _, w := range strings.Fields(c.text) {
			if !strings.HasPrefix(w, "examples/") {
				continue
			}
			named++
			if _, err := os.Stat(filepath.Join("..", w)); err != nil {
				t.Errorf("README.md:%d: %v", c.line, err)
			}
		}
	}
	if named == 0 {
		t.Error("no README command names a file of examples/: has the README's form changed?")
	}
}

// skipUnlessRunsCommands skips a test that builds gpufrag and runs
// commands (what it does, for the -short message) under -short, and under
// -tags invariants or -race, whose plain run covers what (the commands);
// it returns the repository's root. The test itself calls longtest.Skip
// first, as every long test does (TestLint checks it).
func skipUnlessRunsCommands(t *testing.T, does, what string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + does)
	}
	if testkit.SlowBuild {
		t.Skip("-tags invariants or -race: " + what + " are run by the plain go test run")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestReadme runs every command of README.md's sh blocks as a user of a
// fresh clone would: from a copy of the working tree (no .git, no build
// outputs) in a temporary directory, so that ../shared does not exist and
// files the commands write land in the copy. "go run ./cmd/gpufrag" is
// replaced by a binary built once. It fails, with the README line, when a
// command names ../shared, exits non-zero, or prints something other than
// an output block of the README shows for it.
func TestReadme(t *testing.T) {
	longtest.Skip(t)
	root := skipUnlessRunsCommands(t, "TestReadme builds gpufrag and runs the README's commands (about 20 s)", "the README's commands")
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, outs, err := parseReadme(f)
	f.Close()
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	start := time.Now()
	clone, bin := cloneAndBuild(t, root)

	stdout := map[string]string{} // command text → what it printed
	ran := 0
	for _, c := range cmds {
		t.Run(fmt.Sprintf("README.md:%d", c.line), func(t *testing.T) {
			if strings.Contains(c.text, "../shared") {
				t.Fatalf("README.md:%d: %s\nnames ../shared, which a clone does not have: use a file of examples/", c.line, c.text)
			}
			if c.needs != "" {
				t.Skipf("%s (needs: %s)", c.text, c.needs)
			}
			if strings.HasPrefix(c.text, "go test") {
				t.Skipf("%s: the test suite itself, which this test is part of", c.text)
			}
			if strings.HasPrefix(c.text, "go build ") && strings.Contains(c.text, "./cmd/gpufrag") {
				// Built above, from the tree itself; in the copy it would
				// compile every package of the module again (their paths
				// differ), a minute or more on a loaded 2-core machine.
				t.Skipf("%s: the build this test did before running the commands", c.text)
			}
			out, err := runCommand(clone, bin, c)
			if err != nil {
				t.Fatalf("README.md:%d: %s\n%v", c.line, c.text, err)
			}
			stdout[withoutComment(c.text)] = out
			ran++
		})
	}
	for _, o := range outs {
		t.Run(fmt.Sprintf("README.md:%d/output", o.line), func(t *testing.T) {
			out, ok := stdout[withoutComment(o.command)]
			if !ok {
				var err error
				if out, err = runCommand(clone, bin, readmeCommand{line: o.line, text: o.command}); err != nil {
					t.Fatalf("README.md:%d: %s\n%v", o.line, o.command, err)
				}
			}
			if i, missing := notPrinted(o.lines, out); missing != "" {
				t.Errorf("README.md:%d: the output block of %q shows a line that the command does not print (in this order):\n%s\n\nit prints:\n%s\n(regenerate the block from the command's output)",
					o.line+i, o.command, missing, out)
			}
		})
	}
	if ran == 0 {
		t.Error("no README command ran: has the README's form changed?")
	}
	t.Logf("%d commands ran, %d output blocks checked, in %.1fs", ran, len(outs), time.Since(start).Seconds())
}

// cloneAndBuild copies the working tree at root into a temporary
// directory, as a clone without ../shared beside it, and builds gpufrag
// from root; it returns the copy and the binary.
func cloneAndBuild(t *testing.T, root string) (clone, bin string) {
	t.Helper()
	start := time.Now()
	tmp := t.TempDir()
	clone = filepath.Join(tmp, "clone")
	if err := copyTree(root, clone); err != nil {
		t.Fatal(err)
	}
	t.Logf("copied the working tree in %.1fs", time.Since(start).Seconds())
	if _, err := os.Stat(filepath.Join(clone, "..", "shared")); err == nil {
		t.Fatal("the copy of the tree has a ../shared beside it")
	}
	bin = filepath.Join(tmp, "bin", "gpufrag")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gpufrag")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gpufrag: %v\n%s", err, b)
	}
	t.Logf("built gpufrag at %.1fs", time.Since(start).Seconds())
	return clone, bin
}

// withoutComment is a command without its trailing "# ..." comment, as an
// output marker names it.
func withoutComment(c string) string {
	if i := strings.Index(c, " #"); i >= 0 {
		c = c[:i]
	}
	return strings.TrimSpace(c)
}

// runCommand runs c with sh in dir, gpufrag standing for go run
// ./cmd/gpufrag, and returns its standard output; an error holds the exit
// status and standard error. A bin given by its absolute path is also
// first on the command's PATH, so that a plain "gpufrag" (a --help
// example) runs it too.
func runCommand(dir, bin string, c readmeCommand) (string, error) {
	script := strings.Join(append(append([]string(nil), c.vars...), strings.ReplaceAll(c.text, gpufragCmd, bin)), "\n")
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Dir = dir
	if filepath.IsAbs(bin) {
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	ownGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("did not finish within %v", commandTimeout)
	}
	if err != nil {
		return "", fmt.Errorf("%v after %.1fs; stderr:\n%s", err, time.Since(start).Seconds(), tail(errb.String(), 4000))
	}
	return out.String(), nil
}

// notPrinted returns the first of want's lines that is not a line of out
// after the lines before it (its index in want), or "" when out holds every
// line in order. Trailing blanks do not count.
func notPrinted(want []string, out string) (int, string) {
	got := strings.Split(out, "\n")
	j := 0
	for i, w := range want {
		for j < len(got) && strings.TrimRight(got[j], " \t") != w {
			j++
		}
		if j == len(got) {
			return i, w
		}
		j++
	}
	return 0, ""
}

func TestNotPrinted(t *testing.T) {
	out := "title\nrow 1  \nrow 2\n\nend\n"
	for _, tc := range []struct {
		want    []string
		missing string
	}{
		{[]string{"row 1", "end"}, ""},
		{[]string{"title", "row 1", "row 2", "end"}, ""},
		{[]string{"row 2", "row 1"}, "row 1"},
		{[]string{"row 3"}, "row 3"},
		{[]string{"row"}, "row"},
	} {
		if _, m := notPrinted(tc.want, out); m != tc.missing {
			t.Errorf("notPrinted(%q) = %q, want %q", tc.want, m, tc.missing)
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// copyTree copies the working tree at root to dst as a clone would hold
// it: without .git and without what .gitignore keeps out (test binaries,
// profiles, the gpufrag binary, out/, rapid's failure files, Python caches).
func copyTree(root, dst string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if rel != "." && (name == ".git" || name == "__pycache__" || rel == "out" ||
				(name == "rapid" && filepath.Base(filepath.Dir(p)) == "testdata")) {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if strings.HasSuffix(name, ".test") || strings.HasSuffix(name, ".prof") || rel == "gpufrag" {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, filepath.Join(dst, rel))
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
}

func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	out, err := runCommand(dir, "echo", readmeCommand{text: "go run ./cmd/gpufrag simulate --trace $T # comment", vars: []string{"T=examples/x.csv"}})
	if err != nil || out != "simulate --trace examples/x.csv\n" {
		t.Errorf("substituted command: %q, %v", out, err)
	}
	_, err = runCommand(dir, "echo", readmeCommand{text: "echo oops >&2; exit 3"})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "oops") {
		t.Errorf("failing command: %v, want its exit status and stderr", err)
	}
	if _, err := runCommand(dir, "echo", readmeCommand{text: "echo hi > out.txt"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("a command's output file is not in its directory: %q, %v", b, err)
	}
}
