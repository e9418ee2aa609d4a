package lint

// TestLayering: the package layering of docs/architecture.md (section
// "Allowed imports", parsed by layering_doc_test.go) against the imports
// `go list` and the files themselves show.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pkgInfo is what the layering check knows of one package of the module.
type pkgInfo struct {
	path string // relative to the module root ("sim/scenario")
	file string // one of its files, for messages about the package itself
	// imports are the gpufrag packages its non-test files import (all of
	// them, whatever their build constraints), each with the position of
	// its first import ("sim/engine.go:12").
	imports map[string]string
	// testImports are the same for its _test.go files.
	testImports map[string]string
}

// cliPkg is the command-line layer: nothing but cmd/ imports it, tests
// included.
const cliPkg = "cmd/gpufrag/internal/cli"

// checkLayering compares the documented layering (lay: the "Allowed
// imports" table; described: the packages of the "Packages" table, with
// their lines) with the module's packages. It returns what fails the test
// and, apart, the allowances no import uses today (a row may allow more
// than its package imports: an allowance is permission, not a claim).
func checkLayering(lay *layering, described map[string]int, pkgs []pkgInfo) (problems, unused []string) {
	exists := map[string]bool{}
	for _, p := range pkgs {
		exists[p.path] = true
	}
	sect := fmt.Sprintf("%s, section %q", layeringDoc, allowedSection)
	for _, p := range pkgs {
		if _, ok := described[p.path]; !ok {
			problems = append(problems, fmt.Sprintf("package %s (%s) is not in %s's table %q: add a row saying what it does",
				p.path, p.file, layeringDoc, packagesSection))
		}
		allow, ok := lay.allow[p.path]
		if !ok {
			imps := noImports
			if len(p.imports) > 0 {
				imps = "`" + strings.Join(sortedKeys(p.imports), "`, `") + "`"
			}
			problems = append(problems, fmt.Sprintf("package %s (%s) has no row in %s: add | `%s` | %s | if these imports are intended",
				p.path, p.file, sect, p.path, imps))
			continue
		}
		for _, imp := range sortedKeys(p.imports) {
			if !allow[imp] {
				problems = append(problems, fmt.Sprintf("import %s → %s (%s) is not allowed by %s (line %d, the row of %s): add `%s` to that row if %s should depend on %s (and draw the edge in the diagram above it), or remove the import",
					p.path, imp, p.imports[imp], sect, lay.line[p.path], p.path, imp, p.path, imp))
			}
		}
		for _, m := range sortedKeys(allow) {
			if _, ok := p.imports[m]; !ok && exists[m] {
				unused = append(unused, fmt.Sprintf("%s → %s (%s:%d)", p.path, m, layeringDoc, lay.line[p.path]))
			}
		}
		if p.path == cliPkg || strings.HasPrefix(p.path, cliPkg+"/") || p.path == "cmd" || strings.HasPrefix(p.path, "cmd/") {
			continue
		}
		for _, imp := range sortedKeys(p.testImports) {
			if imp == cliPkg || strings.HasPrefix(imp, cliPkg+"/") {
				problems = append(problems, fmt.Sprintf("test import %s → %s (%s): only cmd/ imports %s, tests included (%s, section %q): test the package that holds the logic instead",
					p.path, imp, p.testImports[imp], cliPkg, layeringDoc, "Layering: data flows one way"))
			}
		}
	}
	for _, p := range sortedKeys(lay.line) {
		if !exists[p] {
			problems = append(problems, fmt.Sprintf("%s:%d: package %s has a row in section %q but does not exist (go list ./... does not list it): remove the row, and the package from the rest of the document",
				layeringDoc, lay.line[p], p, allowedSection))
		}
	}
	for _, m := range sortedKeys(lay.mentioned) {
		if !exists[m] {
			problems = append(problems, fmt.Sprintf("%s:%d: `%s` is listed as an import in section %q but does not exist (go list ./... does not list it): remove it from every row",
				layeringDoc, lay.mentioned[m], m, allowedSection))
		}
	}
	for _, p := range sortedKeys(described) {
		if !exists[p] {
			problems = append(problems, fmt.Sprintf("%s:%d: package %s is in the table %q but does not exist (go list ./... does not list it): remove or rename its row",
				layeringDoc, described[p], p, packagesSection))
		}
	}
	return problems, unused
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// listedPkg is the part of `go list -json` the test reads.
type listedPkg struct {
	ImportPath, Name, Dir              string
	GoFiles, CgoFiles, IgnoredGoFiles  []string
	TestGoFiles, XTestGoFiles          []string
	Imports, TestImports, XTestImports []string
	Error                              *struct{ Err string }
}

// listFields are the fields asked of go list (-json=...), to keep its
// output small.
const listFields = "ImportPath,Name,Dir,GoFiles,CgoFiles,IgnoredGoFiles,TestGoFiles,XTestGoFiles,Imports,TestImports,XTestImports,Error"

// goList lists the module's packages with `go list -e ./...` run in root.
func goList(t *testing.T, root string) []listedPkg {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the layering test needs `go list`, and go is not on PATH (%v): it runs in CI, where go is", err)
	}
	cmd := exec.Command(gobin, "list", "-e", "-json="+listFields, "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Skipf("go list cannot run (%v): the layering test needs it", err)
		}
		t.Fatalf("go list -e ./... in %s: %v\n%s", root, err, stderr.Bytes())
	}
	var pkgs []listedPkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list -json output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// loadPkgInfo turns go list's packages into pkgInfos, reading every file's
// imports with go/parser (so that files of other build configurations
// count too, and each import has a position). Packages outside the module
// are ignored; a package go list could not load fails the test.
func loadPkgInfo(t *testing.T, root string, listed []listedPkg) []pkgInfo {
	t.Helper()
	var out []pkgInfo
	for _, lp := range listed {
		if lp.Error != nil {
			t.Errorf("go list: %s: %s", lp.ImportPath, lp.Error.Err)
		}
		rel, ok := relPkg(lp.ImportPath)
		if !ok {
			continue
		}
		dir, err := filepath.Rel(root, lp.Dir)
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.ToSlash(dir)
		p := pkgInfo{path: rel, imports: map[string]string{}, testImports: map[string]string{}}
		var files []string
		files = append(files, lp.GoFiles...)
		files = append(files, lp.CgoFiles...)
		files = append(files, lp.IgnoredGoFiles...)
		files = append(files, lp.TestGoFiles...)
		files = append(files, lp.XTestGoFiles...)
		slices.Sort(files)
		files = slices.Compact(files)
		fset := token.NewFileSet()
		for _, name := range files {
			f, err := parser.ParseFile(fset, filepath.Join(lp.Dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Errorf("%s/%s: %v", dir, name, err)
				continue
			}
			test := strings.HasSuffix(name, "_test.go")
			if !test && lp.Name != "" && f.Name.Name != lp.Name {
				continue // a program beside the package (//go:build ignore, package main)
			}
			if p.file == "" || !test && strings.HasSuffix(p.file, "_test.go") {
				p.file = dir + "/" + name
			}
			into := p.imports
			if test {
				into = p.testImports
			}
			for _, s := range f.Imports {
				ip, err := strconv.Unquote(s.Path.Value)
				if err != nil {
					continue
				}
				if r, ok := relPkg(ip); ok {
					if _, seen := into[r]; !seen {
						into[r] = fmt.Sprintf("%s/%s:%d", dir, name, fset.Position(s.Pos()).Line)
					}
				}
			}
		}
		// go list's own view must be contained in what the files say, or
		// this test misses a kind of file.
		for _, set := range []struct {
			from []string
			to   map[string]string
		}{{lp.Imports, p.imports}, {lp.TestImports, p.testImports}, {lp.XTestImports, p.testImports}} {
			for _, ip := range set.from {
				if r, ok := relPkg(ip); ok && r != rel {
					if _, ok := set.to[r]; !ok {
						t.Errorf("go list says %s imports %s, but no file the layering test read does: layering_test.go misses a kind of file", rel, r)
					}
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// relPkg returns an import path relative to the module root, if it is in
// the module.
func relPkg(ip string) (string, bool) {
	if !strings.HasPrefix(ip, modulePath+"/") {
		return "", false
	}
	return strings.TrimPrefix(ip, modulePath+"/"), true
}

// TestLayering holds docs/architecture.md to the code: every import between
// gpufrag packages is allowed by the section "Allowed imports", every
// package has a row there and in the table "Packages", and every package
// those tables name exists. go test -v lists the allowances no import uses.
func TestLayering(t *testing.T) {
	root := testkit.ModuleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(layeringDoc)))
	if err != nil {
		t.Fatal(err)
	}
	lay, err := parseLayering(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	described, err := parsePackages(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := loadPkgInfo(t, root, goList(t, root))
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages of %s: not the module", len(pkgs), modulePath)
	}
	problems, unused := checkLayering(lay, described, pkgs)
	for _, p := range problems {
		t.Error(p)
	}
	for _, u := range unused {
		t.Logf("allowed, not imported today: %s", u)
	}
}
