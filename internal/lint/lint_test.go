package lint

import (
	"bufio"
	"fmt"
	"github.com/gpufrag/gpufrag/internal/testkit"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// file is one parsed Go source file.
type file struct {
	path string // slash-separated, relative to the module root ("mem/device.go")
	fset *token.FileSet
	ast  *ast.File
	test bool // a _test.go file
}

// finding is one violation.
type finding struct {
	pos token.Position
	msg string
}

// snippet is an in-memory file for a rule's self-test. Lines that end in
// "// want" must be reported; no other line may be.
type snippet struct {
	path string
	src  string
}

// rule is one project rule.
type rule struct {
	name string
	// applies says whether the rule looks at a file (path relative to the
	// module root, slash-separated).
	applies func(path string, test bool) bool
	check   func(f *file) []finding
	// skip exempts files (path → reason, with a TODO naming who fixes it).
	skip map[string]string
	// cases prove the rule catches what it is for and nothing else.
	cases []snippet
}

// corePrefixes are the deterministic core (STYLE.md #4, DESIGN.md §2): no wall
// clock, no goroutines, no global random source.
var corePrefixes = []string{
	"mem", "alloc", "frag", "kv", "sim", "defrag", "cluster", "model", "workload",
}

// coreIOPrefixes are I/O packages under a core prefix, outside the core:
// cluster/kube/live is the Kubernetes API server's client (docs/architecture.md,
// "Where I/O lives"); it reads the wall clock for credential expiry and
// request timeouts. The global-rand rule still holds there.
var coreIOPrefixes = []string{"cluster/kube/live"}

// inCore reports whether path is in the deterministic core.
func inCore(path string) bool { return under(path, corePrefixes) && !under(path, coreIOPrefixes) }

// ioPrefixes may import HTTP and Prometheus (STYLE.md #5); cluster/kube/live
// is the client of the Kubernetes API server (net/http since issue 29).
var ioPrefixes = []string{"exporter", "cmd", "cluster/kube/live"}

// ioTestPrefixes may import them in tests: probe/ holds only the Go tests
// of the Python probe, whose end-to-end test talks to the exporter and to
// Prometheus over HTTP.
var ioTestPrefixes = []string{"probe"}

func under(path string, prefixes []string) bool {
	dir := filepath.ToSlash(filepath.Dir(filepath.FromSlash(path)))
	for _, p := range prefixes {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			return true
		}
	}
	return false
}

var rules = []rule{
	{
		name:    "determinism/wall-clock",
		applies: func(path string, test bool) bool { return !test && inCore(path) },
		check:   checkWallClock,
		cases: []snippet{
			{"sim/engine.go", `package sim
import "time"
func f() time.Duration {
	t := time.Now() // want
	time.Sleep(time.Second) // want
	_ = time.Duration(3) * time.Millisecond
	return time.Since(t) // want
}`},
			{"alloc/caching/x.go", `package caching
import clock "time"
var now = clock.Now // want
`},
			// A local variable that shadows the package is not the package.
			{"frag/x.go", `package frag
import "time"
type fake struct{}
func (fake) Now() int { return 0 }
func f() (int, time.Duration) { time := fake{}; return time.Now(), 0 }
`},
			// Outside the core and in tests the clock is allowed.
			{"exporter/x.go", `package exporter
import "time"
var start = time.Now()
`},
			// The API server's client is I/O, though under cluster/; the
			// model it feeds is core.
			{"cluster/kube/live/x.go", `package live
import "time"
var start = time.Now()
`},
			{"cluster/kube/x.go", `package kube
import "time"
var start = time.Now() // want
`},
			{"sim/engine_test.go", `package sim
import "time"
var start = time.Now()
`},
		},
	},
	{
		name:    "determinism/global-rand",
		applies: func(path string, test bool) bool { return under(path, corePrefixes) },
		check:   checkGlobalRand,
		cases: []snippet{
			{"workload/gen.go", `package workload
import (
	"math/rand/v2"
	"time"
)
type G struct{ r *rand.Rand }
func New(seed uint64) *G { return &G{r: rand.New(rand.NewPCG(seed, 1))} }
func (g *G) Next() int { return g.r.IntN(10) + rand.IntN(10) } // want
func d() time.Duration { return rand.N[time.Duration](5) } // want
var pick = rand.Float64 // want
`},
			{"kv/blockpool/x_test.go", `package blockpool
import mrand "math/rand"
func f() int { return mrand.Intn(3) } // want
var r = mrand.New(mrand.NewSource(1))
`},
			// crypto/rand is not a random *source* for simulation and is not
			// this rule's business; code outside the core may use anything.
			{"sim/x.go", `package sim
import "crypto/rand"
func f(b []byte) { rand.Read(b) }
`},
			{"report/x.go", `package report
import "math/rand/v2"
func f() int { return rand.IntN(3) }
`},
		},
	},
	{
		name:    "determinism/goroutine",
		applies: func(path string, test bool) bool { return !test && inCore(path) },
		check:   checkGoStmt,
		cases: []snippet{
			{"defrag/plan.go", `package defrag
func f(c chan int) {
	go func() { c <- 1 }() // want
}`},
			{"cmd/gpufrag/internal/cli/x.go", `package cli
func f(c chan int) { go func() { c <- 1 }() }
`},
			{"defrag/plan_test.go", `package defrag
func f(c chan int) { go func() { c <- 1 }() }
`},
		},
	},
	{
		name: "io-boundary",
		applies: func(path string, test bool) bool {
			return !under(path, ioPrefixes) && !(test && under(path, ioTestPrefixes))
		},
		check: checkIOImports,
		cases: []snippet{
			{"frag/x.go", `package frag
import (
	"net/http" // want
	_ "net/http/pprof" // want
	"github.com/prometheus/client_golang/prometheus" // want
	"net/url"
)
`},
			{"sim/x_test.go", `package sim
import "net/http/httptest" // want
`},
			{"exporter/nvml/x.go", `package nvml
import (
	"net/http"
	"github.com/prometheus/client_golang/prometheus"
)
`},
			{"cmd/gpufrag/main.go", `package main
import "net/http"
`},
		},
	},
	{
		name:    "errorf-wrap",
		applies: func(path string, test bool) bool { return !test },
		check:   checkErrorfWrap,
		cases: []snippet{
			{"workload/x.go", `package workload
import (
	"errors"
	"fmt"
)
var ErrBad = errors.New("bad")
func f(err error, line int) error {
	_ = fmt.Errorf("line %d: %v", line, err) // want
	_ = fmt.Errorf("%w: line %d: %v", ErrBad, line, err) // want
	_ = fmt.Errorf("line %d: " + "%s", line, err) // want
	_ = fmt.Errorf("line %d: %w", line, err)
	_ = fmt.Errorf("%w: line %d: %w", ErrBad, line, err)
	_ = fmt.Errorf("100%% at %*d: %w", 3, line, err)
	_ = fmt.Errorf("%w: %s", ErrBad, err.Error())
	return fmt.Errorf("%[2]d: %[1]v", err, line) // want
}`},
			// Tests may flatten errors into messages.
			{"workload/x_test.go", `package workload
import "fmt"
func f(err error) error { return fmt.Errorf("%v", err) }
`},
		},
	},
	{
		name:    "panic-literal",
		applies: func(path string, test bool) bool { return !test },
		check:   checkPanicLiteral,
		cases: []snippet{
			{"alloc/arena/x.go", `package arena
import (
	"errors"
	"fmt"
)
func f(n int) {
	if n < 0 {
		panic("arena: negative") // want
	}
	if n == 1 {
		panic(("arena: " + "one")) // want
	}
	if n == 2 {
		panic(fmt.Sprintf("arena: bad size %d", n))
	}
	panic(errors.New("arena: unreachable"))
}`},
			{"alloc/arena/x_test.go", `package arena
func f() { panic("fine in tests") }
`},
		},
	},
	allocImplRule,
	{
		name:    "tuned-constant",
		applies: func(path string, test bool) bool { return !test },
		check:   checkTunedConstant,
		cases: []snippet{
			{"cluster/x.go", `package cluster

// Scarcity is tuned by hand on the gpuspec lists.
const Scarcity = 20 // want

// Threshold was tuned on TuneLists.
var Threshold = 0.5 // want

// Margin was tuned on the tuning lists; validated on the judging lists.
const Margin = 2

const (
	// Steps: chosen by hand, not
	// tuned.
	Steps = 4
	// Rate is tuned on suite A and validated on suite B.
	Rate = 1.5
	Plain = 3
)
`},
			{"cluster/x_test.go", `package cluster

// tuned by hand, only for the test
const k = 1
`},
		},
	},
}

// tunedRE finds a comment that says a value was tuned; notTunedRE one that
// says it was not.
var (
	tunedRE     = regexp.MustCompile(`(?i)\btuned\b`)
	notTunedRE  = regexp.MustCompile(`(?i)\bnot\s+tuned\b|\buntuned\b`)
	tunedOnRE   = regexp.MustCompile(`(?i)\btuned\s+on\b`)
	validatedRE = regexp.MustCompile(`(?i)\bvalidated\b`)
)

// checkTunedConstant holds every constant or variable whose comment says it
// was tuned to issue 17's rule: the comment names what it was tuned on and
// what it was validated on ("Tuned on X; validated on Y").
func checkTunedConstant(f *file) []finding {
	var out []finding
	for _, d := range f.ast.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || (gd.Tok != token.CONST && gd.Tok != token.VAR) {
			continue
		}
		for _, sp := range gd.Specs {
			vs := sp.(*ast.ValueSpec)
			doc := vs.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			if doc == nil {
				continue
			}
			text := doc.Text()
			if !tunedRE.MatchString(text) || notTunedRE.MatchString(text) {
				continue
			}
			if !tunedOnRE.MatchString(text) || !validatedRE.MatchString(text) {
				out = append(out, finding{f.fset.Position(vs.Names[0].Pos()),
					"a tuned value's comment says what it was tuned on and what it was validated on (\"Tuned on X; validated on Y\")"})
			}
		}
	}
	return out
}

// importName returns the name under which f imports path ("" if it does not,
// "_" or "." for blank and dot imports).
func importName(f *ast.File, path string) string {
	for _, s := range f.Imports {
		p, err := strconv.Unquote(s.Path.Value)
		if err != nil || p != path {
			continue
		}
		if s.Name != nil {
			return s.Name.Name
		}
		return defaultName(path)
	}
	return ""
}

// defaultName is the package name an import path conventionally declares:
// its last element, skipping a major-version suffix ("math/rand/v2" → rand).
func defaultName(path string) string {
	elems := strings.Split(path, "/")
	last := elems[len(elems)-1]
	if len(elems) > 1 && len(last) > 1 && last[0] == 'v' && strings.Trim(last[1:], "0123456789") == "" {
		last = elems[len(elems)-2]
	}
	return last
}

// pkgSelectors calls fn for every selector pkg.Name where pkg is the file's
// import of path (not a local variable that shadows it).
func pkgSelectors(f *file, path string, fn func(sel *ast.SelectorExpr)) {
	name := importName(f.ast, path)
	if name == "" || name == "_" || name == "." {
		return
	}
	ast.Inspect(f.ast, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		// go/parser resolves identifiers declared in the file; an
		// unresolved identifier spelled like the import is the package.
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == name && id.Obj == nil {
			fn(sel)
		}
		return true
	})
}

// wallClock are the time functions that read or wait on the wall clock.
var wallClock = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true,
	"After": true, "AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true,
}

func checkWallClock(f *file) []finding {
	var out []finding
	pkgSelectors(f, "time", func(sel *ast.SelectorExpr) {
		if wallClock[sel.Sel.Name] {
			out = append(out, finding{f.fset.Position(sel.Pos()),
				"time." + sel.Sel.Name + " in the deterministic core: use the simulator's virtual clock (sim.Time)"})
		}
	})
	return out
}

// randAllowed are the names of math/rand and math/rand/v2 that do not touch
// the global source: types and constructors of explicit sources.
var randAllowed = map[string]bool{
	"Rand": true, "Source": true, "Source64": true, "Zipf": true, "PCG": true, "ChaCha8": true,
	"New": true, "NewSource": true, "NewZipf": true, "NewPCG": true, "NewChaCha8": true,
}

func checkGlobalRand(f *file) []finding {
	var out []finding
	for _, path := range []string{"math/rand", "math/rand/v2"} {
		pkgSelectors(f, path, func(sel *ast.SelectorExpr) {
			if !randAllowed[sel.Sel.Name] {
				out = append(out, finding{f.fset.Position(sel.Pos()),
					"rand." + sel.Sel.Name + " uses the global random source: take a *rand.Rand from rand.New(rand.NewPCG(seed, stream))"})
			}
		})
	}
	return out
}

func checkGoStmt(f *file) []finding {
	var out []finding
	ast.Inspect(f.ast, func(n ast.Node) bool {
		if g, ok := n.(*ast.GoStmt); ok {
			out = append(out, finding{f.fset.Position(g.Pos()),
				"go statement in the deterministic core: the core describes work, drivers run it"})
		}
		return true
	})
	return out
}

func checkIOImports(f *file) []finding {
	var out []finding
	for _, s := range f.ast.Imports {
		p, err := strconv.Unquote(s.Path.Value)
		if err != nil {
			continue
		}
		if p == "net/http" || strings.HasPrefix(p, "net/http/") ||
			strings.HasPrefix(p, "github.com/prometheus/") {
			out = append(out, finding{f.fset.Position(s.Pos()),
				"import of " + p + " outside exporter/, cmd/ and cluster/kube/live/"})
		}
	}
	return out
}

// stringLit returns the value of a string literal or a + concatenation of them.
func stringLit(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.ParenExpr:
		return stringLit(e.X)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok1 := stringLit(e.X)
		y, ok2 := stringLit(e.Y)
		return x + y, ok1 && ok2
	}
	return "", false
}

// verbs lists the verb consuming each argument of a format string, in order
// ('*' for a width or precision argument). ok is false for formats this
// simple scanner does not follow (explicit argument indexes such as %[2]d).
func verbs(format string) (vs []rune, ok bool) {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		for i < len(format) && (format[i] >= '0' && format[i] <= '9' || format[i] == '*' || format[i] == '.') {
			if format[i] == '*' {
				vs = append(vs, '*')
			}
			i++
		}
		if i >= len(format) {
			break
		}
		switch format[i] {
		case '%':
		case '[':
			return nil, false
		default:
			vs = append(vs, rune(format[i]))
		}
	}
	return vs, true
}

func checkErrorfWrap(f *file) []finding {
	name := importName(f.ast, "fmt")
	if name == "" || name == "_" || name == "." {
		return nil
	}
	var out []finding
	ast.Inspect(f.ast, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) < 2 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Errorf" {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); !ok || id.Name != name || id.Obj != nil {
			return true
		}
		format, ok := stringLit(call.Args[0])
		if !ok {
			return true // a non-literal format cannot be checked here
		}
		vs, exact := verbs(format)
		for i, a := range call.Args[1:] {
			if id, ok := a.(*ast.Ident); !ok || id.Name != "err" {
				continue
			}
			wrapped := strings.Contains(format, "%w")
			if exact {
				wrapped = i < len(vs) && vs[i] == 'w'
			}
			if !wrapped {
				out = append(out, finding{f.fset.Position(a.Pos()),
					"fmt.Errorf formats err without %w: wrap it so callers can errors.Is/As the cause"})
			}
		}
		return true
	})
	return out
}

func checkPanicLiteral(f *file) []finding {
	var out []finding
	ast.Inspect(f.ast, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "panic" || id.Obj != nil {
			return true
		}
		if _, ok := stringLit(call.Args[0]); ok {
			out = append(out, finding{f.fset.Position(call.Pos()),
				`panic with a bare string: use panic(fmt.Sprintf("pkg: ... %v", values)) or panic(err)`})
		}
		return true
	})
	return out
}

// loadModule parses every Go file of the module rooted at root.
func loadModule(t *testing.T, root string) []*file {
	t.Helper()
	var files []*file
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p == root {
				return nil
			}
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module lints itself
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parse(filepath.ToSlash(rel), string(src))
		if err != nil {
			t.Errorf("%v", err)
			return nil
		}
		if !ast.IsGenerated(f.ast) {
			files = append(files, f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func parse(path, src string) (*file, error) {
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	return &file{path: path, fset: fset, ast: af, test: strings.HasSuffix(path, "_test.go")}, nil
}

// run applies r to f, honouring applies (but not skip).
func (r rule) run(f *file) []finding {
	if !r.applies(f.path, f.test) {
		return nil
	}
	return r.check(f)
}

// TestLint checks every rule over the module's Go files.
func TestLint(t *testing.T) {
	root := testkit.ModuleRoot(t)
	files := loadModule(t, root)
	// Guard against a walk that silently finds nothing (wrong root, new
	// skip rule): the module's leaf package and this file must be seen.
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.path] = true
	}
	for _, must := range []string{"mem/doc.go", "internal/lint/lint_test.go"} {
		if !seen[must] {
			t.Fatalf("lint walked %d files under %s but not %s", len(files), root, must)
		}
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			for path := range r.skip {
				if !seen[path] {
					t.Errorf("exemption for %s, which no longer exists: remove it", path)
				}
			}
			n := 0
			for _, f := range files {
				if r.applies(f.path, f.test) {
					n++
				}
				found := r.run(f)
				why, exempt := r.skip[f.path]
				switch {
				case exempt && len(found) == 0:
					t.Errorf("exemption for %s is no longer needed: remove it from rule %s", f.path, r.name)
				case exempt:
					for _, v := range found {
						t.Logf("exempt (%s): %s: %s", why, v.pos, v.msg)
					}
				default:
					for _, v := range found {
						t.Errorf("%s: %s", v.pos, v.msg)
					}
				}
			}
			t.Logf("%d files checked", n)
		})
	}
}

// TestRulesSelfTest proves each rule reports exactly the lines of its
// snippets marked "// want", and that each rule has at least one such line,
// so no rule can pass vacuously.
func TestRulesSelfTest(t *testing.T) {
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			wants := 0
			for _, c := range r.cases {
				f, err := parse(c.path, c.src)
				if err != nil {
					t.Fatalf("snippet %s: %v", c.path, err)
				}
				want := wantLines(c.src)
				wants += len(want)
				var got []int
				for _, v := range r.run(f) {
					got = append(got, v.pos.Line)
				}
				sort.Ints(got)
				got = dedup(got)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: findings on lines %v, want %v", c.path, got, want)
				}
			}
			if wants == 0 {
				t.Errorf("rule %s has no snippet it must catch", r.name)
			}
		})
	}
}

func wantLines(src string) []int {
	var out []int
	sc := bufio.NewScanner(strings.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		if strings.HasSuffix(strings.TrimSpace(sc.Text()), "// want") {
			out = append(out, n)
		}
	}
	if out == nil {
		out = []int{}
	}
	return out
}

func dedup(xs []int) []int {
	out := []int{}
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}
