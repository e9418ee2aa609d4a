package examples

import (
	"bufio"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpufrag/gpufrag/internal/longtest"
)

// The --help examples follow the README's conventions (readme_test.go):
// they run as written from the root of a clone, "gpufrag" standing for the
// built binary; "# needs: REASON" marks the next command as one a clone
// cannot run by itself; NAME=VALUE alone on a line sets a variable.

// helpSection returns the lines of the section of a cobra help text that
// starts with the line heading ("Examples:", "Available Commands:"), up to
// the next line that is not indented and not blank, without their
// two-space indent.
func helpSection(help, heading string) []string {
	var lines []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == heading:
			in = true
		case !in:
		case line != "" && !strings.HasPrefix(line, " "):
			return lines
		default:
			lines = append(lines, strings.TrimPrefix(line, "  "))
		}
	}
	return lines
}

// subcommands returns the names in a help text's "Available Commands:",
// without help and completion.
func subcommands(help string) []string {
	var names []string
	for _, line := range helpSection(help, "Available Commands:") {
		if f := strings.Fields(line); len(f) > 0 && f[0] != "help" && f[0] != "completion" {
			names = append(names, f[0])
		}
	}
	return names
}

func TestHelpSection(t *testing.T) {
	const help = "Long text.\n\nUsage:\n  gpufrag x [flags]\n\nExamples:\n  # a comment\n  gpufrag x \\\n      --y\n\n  gpufrag x --z\n\n" +
		"Available Commands:\n  sub         Short\n  help        Help\n\nFlags:\n  -h, --help\n"
	if got, want := fmt.Sprint(helpSection(help, "Examples:")), fmt.Sprint([]string{"# a comment", "gpufrag x \\", "    --y", "", "gpufrag x --z", ""}); got != want {
		t.Errorf("examples: got %s, want %s", got, want)
	}
	if got := fmt.Sprint(subcommands(help)); got != "[sub]" {
		t.Errorf("subcommands: got %s, want [sub]", got)
	}
}

// TestHelpExamples runs the examples of every command's --help, as
// TestReadme runs the README's commands: from a copy of the working tree
// with no ../shared beside it, "gpufrag" being the binary built from it. It
// fails, naming the command whose help shows it, when an example exits
// non-zero or names ../shared without a "# needs:" mark.
func TestHelpExamples(t *testing.T) {
	longtest.Skip(t)
	root := skipUnlessRunsCommands(t, "TestHelpExamples builds gpufrag and runs every --help example", "the --help examples")
	start := time.Now()
	clone, bin := cloneAndBuild(t, root)
	help := func(path []string) string {
		out, err := exec.Command(bin, append(append([]string(nil), path...), "--help")...).Output()
		if err != nil {
			t.Fatalf("gpufrag %s --help: %v", strings.Join(path, " "), err)
		}
		return string(out)
	}
	ran, paths := 0, [][]string{nil}
	for len(paths) > 0 {
		path := paths[0]
		paths = paths[1:]
		text := help(path)
		for _, sub := range subcommands(text) {
			paths = append(paths, append(append([]string(nil), path...), sub))
		}
		name := strings.TrimSpace("gpufrag " + strings.Join(path, " "))
		examples := helpSection(text, "Examples:")
		cmds, _, err := parseReadme(strings.NewReader("```sh\n" + strings.Join(examples, "\n") + "\n```\n"))
		if err != nil {
			t.Errorf("%s --help: examples: %v", name, err)
			continue
		}
		for i, c := range cmds {
			t.Run(fmt.Sprintf("%s/%d", strings.ReplaceAll(name, " ", "_"), i+1), func(t *testing.T) {
				if c.needs != "" {
					t.Skipf("%s (needs: %s)", c.text, c.needs)
				}
				if strings.Contains(c.text, "../shared") {
					t.Fatalf("%s --help: %s\nnames ../shared, which a clone does not have: use a file of examples/, or mark it \"# needs:\"", name, c.text)
				}
				if _, err := runCommand(clone, bin, c); err != nil {
					t.Fatalf("%s --help: %s\n%v", name, c.text, err)
				}
				ran++
			})
		}
	}
	if ran == 0 {
		t.Error("no --help example ran: has the help's form changed?")
	}
	t.Logf("%d examples ran in %.1fs", ran, time.Since(start).Seconds())
}
