package lint

import (
	"bufio"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"go/ast"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The long-test switch (internal/longtest, issue 29): a long test calls
// longtest.Skip(t) as its first statement, nothing else reads GPUFRAG_LONG,
// the long tests are the ones docs/architecture.md lists under "Long
// tests", and every package with one keeps a test that runs by default.

const longtestPath = "github.com/gpufrag/gpufrag/internal/longtest"

func init() {
	rules = append(rules, rule{
		name: "long-switch",
		// internal/lint names the variable to find it.
		applies: func(p string, test bool) bool {
			d := path.Dir(p)
			return d != "internal/longtest" && d != "internal/lint"
		},
		check: checkLongSwitch,
		cases: []snippet{
			{"calib/x_test.go", `package calib
import (
	"os"
	"testing"
	"github.com/gpufrag/gpufrag/internal/longtest"
)
func TestA(t *testing.T) {
	longtest.Skip(t)
	t.Log("ok")
}
func FuzzB(f *testing.F) {
	longtest.Skip(f)
}
func TestC(t *testing.T) {
	t.Parallel()
	longtest.Skip(t) // want
}
func helper(t *testing.T) {
	longtest.Skip(t) // want
}
func TestD(t *testing.T) {
	if os.Getenv("GPUFRAG_LONG") == "" { // want
		t.Skip()
	}
	t.Run("x", func(t *testing.T) { longtest.Skip(t) }) // want
}
`},
			{"probe/x_test.go", `package probe
import (
	"testing"
	lt "github.com/gpufrag/gpufrag/internal/longtest"
)
func TestE(t *testing.T) { lt.Skip(t) }
func TestF(t *testing.T) { t.Log(); lt.Skip(t) } // want
`},
			{"internal/longtest/longtest.go", `package longtest
const Env = "GPUFRAG_LONG"
`},
		},
	})
}

// longtestName is the name f imports internal/longtest under, "" if none.
func longtestName(f *ast.File) string {
	for _, s := range f.Imports {
		if p, err := strconv.Unquote(s.Path.Value); err == nil && p == longtestPath {
			if s.Name != nil {
				return s.Name.Name
			}
			return "longtest"
		}
	}
	return ""
}

// isSkipCall reports whether n is a call name.Skip(...).
func isSkipCall(n ast.Node, name string) bool {
	call, ok := n.(*ast.CallExpr)
	if !ok || name == "" {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Skip" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == name
}

// longTest reports whether d is a long test: a Test or Fuzz function whose
// first statement is longtest.Skip.
func longTest(d *ast.FuncDecl, name string) bool {
	if d.Recv != nil || d.Body == nil || len(d.Body.List) == 0 ||
		!(strings.HasPrefix(d.Name.Name, "Test") || strings.HasPrefix(d.Name.Name, "Fuzz")) {
		return false
	}
	es, ok := d.Body.List[0].(*ast.ExprStmt)
	return ok && isSkipCall(es.X, name)
}

func checkLongSwitch(f *file) []finding {
	var out []finding
	name := longtestName(f.ast)
	first := map[ast.Node]bool{} // the Skip calls that open a long test
	for _, d := range f.ast.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && longTest(fd, name) {
			first[fd.Body.List[0].(*ast.ExprStmt).X] = true
		}
	}
	ast.Inspect(f.ast, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if isSkipCall(n, name) && !first[n] {
				out = append(out, finding{f.fset.Position(n.Pos()),
					"longtest.Skip outside the first statement of a Test or Fuzz function: a long test says so on its first line (internal/longtest)"})
			}
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && s == "GPUFRAG_LONG" {
				out = append(out, finding{f.fset.Position(n.Pos()),
					"GPUFRAG_LONG read outside internal/longtest: call longtest.Skip(t) first in the test"})
			}
		}
		return true
	})
	return out
}

// longTestsDoc reads the table of docs/architecture.md's section "Long
// tests": package directory → its long tests.
func longTestsDoc(t *testing.T, root string) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	in := false
	cell := regexp.MustCompile("`([^`]+)`")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = strings.TrimLeft(line, "# ") == "Long tests"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) < 4 {
			t.Fatalf("docs/architecture.md, Long tests: row %q: want | package | tests | ... |", line)
		}
		pkg := cell.FindStringSubmatch(cols[1])
		if pkg == nil {
			t.Fatalf("docs/architecture.md, Long tests: row %q names no package", line)
		}
		for _, m := range cell.FindAllStringSubmatch(cols[2], -1) {
			out[pkg[1]] = append(out[pkg[1]], m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLongTests holds the long tests to docs/architecture.md's table, and
// each package with one to a test that runs without GPUFRAG_LONG.
func TestLongTests(t *testing.T) {
	root := testkit.ModuleRoot(t)
	long := map[string][]string{}
	fast := map[string]int{}
	for _, f := range loadModule(t, root) {
		if !f.test {
			continue
		}
		dir, name := path.Dir(f.path), longtestName(f.ast)
		for _, d := range f.ast.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") && !strings.HasPrefix(fd.Name.Name, "Fuzz") {
				continue
			}
			if longTest(fd, name) {
				long[dir] = append(long[dir], fd.Name.Name)
			} else if fd.Name.Name != "TestMain" {
				fast[dir]++
			}
		}
	}
	doc := longTestsDoc(t, root)
	if len(long) == 0 || len(doc) == 0 {
		t.Fatalf("%d packages with long tests, %d in docs/architecture.md: has the form changed?", len(long), len(doc))
	}
	var dirs []string
	for dir := range long {
		dirs = append(dirs, dir)
	}
	for dir := range doc {
		if _, ok := long[dir]; !ok {
			dirs = append(dirs, dir)
		}
	}
	sort.Strings(dirs)
	n := 0
	for _, dir := range dirs {
		code, listed := slices.Sorted(slices.Values(long[dir])), slices.Sorted(slices.Values(doc[dir]))
		if !slices.Equal(code, listed) {
			t.Errorf("%s: long tests %v, docs/architecture.md (Long tests) lists %v", dir, code, listed)
		}
		if len(code) > 0 && fast[dir] == 0 {
			t.Errorf("%s: every test is long, so go test ./... runs nothing of it: keep a fast one", dir)
		}
		n += len(code)
	}
	t.Logf("%d long tests in %d packages", n, len(long))
}
