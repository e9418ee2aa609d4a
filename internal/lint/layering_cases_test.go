package lint

// The layering check on small inline documents and package graphs: what
// passes, and the message of each way to fail.

import (
	"reflect"
	"strings"
	"testing"
)

// testDoc is a small architecture page in the real one's form.
const testDoc = "# arch\n\n" +
	"## Packages\n\n" +
	"| package | job |\n|---|---|\n" +
	"| `mem` | leaf types |\n" +
	"| `alloc`, `alloc/{caching,vmm}` | allocators |\n" +
	"| `frag` | metrics |\n" +
	"| `probe/` | the Python probe |\n\n" +
	"## Layering: data flows one way\n\n" +
	"```\n# not a heading: inside a fence\nalloc → mem\n```\n\n" +
	"### Allowed imports\n\n" +
	"Prose before the table is fine.\n\n" +
	"| package | may import |\n|:--|--|\n" +
	"| `mem`, `probe` | — |\n" +
	"| `alloc` | `mem` |\n" +
	"| `alloc/{caching,vmm}` | `alloc`, `mem` |\n" +
	"| `frag` | `mem` |\n\n" +
	"```sh\n# a comment in a fence ends no section\n```\n\n" +
	"Prose after it too.\n\n" +
	"## Next section\n\n" +
	"| package | may import |\n|---|---|\n| `frag` | `alloc` |\n"

// testPkgs is the package graph testDoc describes.
func testPkgs() []pkgInfo {
	return []pkgInfo{
		{path: "mem", file: "mem/mem.go"},
		{path: "alloc", file: "alloc/alloc.go", imports: map[string]string{"mem": "alloc/alloc.go:5"}},
		{path: "alloc/caching", file: "alloc/caching/caching.go",
			imports:     map[string]string{"alloc": "alloc/caching/caching.go:4", "mem": "alloc/caching/caching.go:5"},
			testImports: map[string]string{"frag": "alloc/caching/x_test.go:6"}},
		{path: "alloc/vmm", file: "alloc/vmm/vmm.go", imports: map[string]string{"alloc": "alloc/vmm/vmm.go:4"}},
		{path: "frag", file: "frag/frag.go", imports: map[string]string{"mem": "frag/frag.go:3"}},
		{path: "probe", file: "probe/e2e_test.go"},
	}
}

// check parses doc and checks pkgs against it.
func check(t *testing.T, doc string, pkgs []pkgInfo) (problems, unused []string) {
	t.Helper()
	lay, err := parseLayering(doc)
	if err != nil {
		t.Fatal(err)
	}
	described, err := parsePackages(doc)
	if err != nil {
		t.Fatal(err)
	}
	return checkLayering(lay, described, pkgs)
}

func TestLayeringDocParse(t *testing.T) {
	lay, err := parseLayering(testDoc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]bool{
		"mem": {}, "probe": {}, "alloc": {"mem": true},
		"alloc/caching": {"alloc": true, "mem": true}, "alloc/vmm": {"alloc": true, "mem": true},
		"frag": {"mem": true},
	}
	if !reflect.DeepEqual(lay.allow, want) {
		t.Errorf("allow = %v, want %v (the table of the next section must not be read)", lay.allow, want)
	}
	if lay.line["alloc/vmm"] != 27 || lay.line["frag"] != 28 {
		t.Errorf("lines = %v, want alloc/vmm on 27 and frag on 28", lay.line)
	}
	described, err := parsePackages(testDoc)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"mem": 7, "alloc": 8, "alloc/caching": 8, "alloc/vmm": 8, "frag": 9, "probe": 10}; !reflect.DeepEqual(described, want) {
		t.Errorf("packages = %v, want %v", described, want)
	}
}

func TestLayeringCheckPasses(t *testing.T) {
	problems, unused := check(t, testDoc, testPkgs())
	if len(problems) > 0 {
		t.Errorf("problems on a consistent document:\n%s", strings.Join(problems, "\n"))
	}
	// alloc/vmm may import mem and does not; a test importing frag from
	// alloc/caching is no production edge.
	if want := []string{"alloc/vmm → mem (docs/architecture.md:27)"}; !reflect.DeepEqual(unused, want) {
		t.Errorf("unused = %q, want %q", unused, want)
	}
}

// TestLayeringCheckFails gives each way the code and the document can
// disagree, and the whole message it must produce.
func TestLayeringCheckFails(t *testing.T) {
	cases := []struct {
		name string
		doc  func(string) string // edits testDoc
		pkgs func([]pkgInfo) []pkgInfo
		want []string
	}{
		{
			name: "an import the document does not allow",
			pkgs: func(ps []pkgInfo) []pkgInfo {
				ps[4].imports["alloc/caching"] = "frag/frag.go:4"
				return ps
			},
			want: []string{"import frag → alloc/caching (frag/frag.go:4) is not allowed by docs/architecture.md, section \"Allowed imports\" (line 28, the row of frag): " +
				"add `alloc/caching` to that row if frag should depend on alloc/caching (and draw the edge in the diagram above it), or remove the import"},
		},
		{
			name: "a document missing an edge",
			doc: func(d string) string {
				return strings.Replace(d, "| `alloc` | `mem` |", "| `alloc` | — |", 1)
			},
			want: []string{"import alloc → mem (alloc/alloc.go:5) is not allowed by docs/architecture.md, section \"Allowed imports\" (line 26, the row of alloc): " +
				"add `mem` to that row if alloc should depend on mem (and draw the edge in the diagram above it), or remove the import"},
		},
		{
			name: "a package without a row",
			pkgs: func(ps []pkgInfo) []pkgInfo {
				return append(ps, pkgInfo{path: "sim", file: "sim/doc.go", imports: map[string]string{"frag": "sim/a.go:3", "alloc": "sim/b.go:4"}})
			},
			want: []string{
				"package sim (sim/doc.go) is not in docs/architecture.md's table \"Packages\": add a row saying what it does",
				"package sim (sim/doc.go) has no row in docs/architecture.md, section \"Allowed imports\": add | `sim` | `alloc`, `frag` | if these imports are intended",
			},
		},
		{
			name: "a documented package that no longer exists",
			pkgs: func(ps []pkgInfo) []pkgInfo {
				ps[0].path = "memory" // renamed: alloc and frag import mem still, in the fake
				return ps
			},
			want: []string{
				"package memory (mem/mem.go) is not in docs/architecture.md's table \"Packages\": add a row saying what it does",
				"package memory (mem/mem.go) has no row in docs/architecture.md, section \"Allowed imports\": add | `memory` | — | if these imports are intended",
				"docs/architecture.md:25: package mem has a row in section \"Allowed imports\" but does not exist (go list ./... does not list it): remove the row, and the package from the rest of the document",
				"docs/architecture.md:26: `mem` is listed as an import in section \"Allowed imports\" but does not exist (go list ./... does not list it): remove it from every row",
				"docs/architecture.md:7: package mem is in the table \"Packages\" but does not exist (go list ./... does not list it): remove or rename its row",
			},
		},
		{
			name: "a test that imports the command line",
			pkgs: func(ps []pkgInfo) []pkgInfo {
				ps[4].testImports = map[string]string{"cmd/gpufrag/internal/cli": "frag/cli_test.go:7"}
				return ps
			},
			want: []string{"test import frag → cmd/gpufrag/internal/cli (frag/cli_test.go:7): only cmd/ imports cmd/gpufrag/internal/cli, tests included (docs/architecture.md, section \"Layering: data flows one way\"): test the package that holds the logic instead"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, pkgs := testDoc, testPkgs()
			if c.doc != nil {
				doc = c.doc(doc)
			}
			if c.pkgs != nil {
				pkgs = c.pkgs(pkgs)
			}
			problems, _ := check(t, doc, pkgs)
			if !reflect.DeepEqual(problems, c.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestLayeringDocErrors: a table the parser cannot read fails with the line
// and what to write instead, never by reading less than is there.
func TestLayeringDocErrors(t *testing.T) {
	row := "| `alloc` | `mem` |"
	cases := []struct{ name, old, new, want string }{
		{"no section", "### Allowed imports", "### Imports", `docs/architecture.md: no section "Allowed imports": the layering test reads the table under that heading`},
		{"no table", "| package | may import |\n|:--|--|\n| `mem`, `probe` | — |\n| `alloc` | `mem` |\n| `alloc/{caching,vmm}` | `alloc`, `mem` |\n| `frag` | `mem` |\n", "",
			`docs/architecture.md:19: section "Allowed imports" has no table (want a header | package | may import |)`},
		{"no delimiter row", "|:--|--|\n", "", `docs/architecture.md:24: the table of section "Allowed imports" needs a delimiter row (|---|---|) under its header`},
		{"wrong header", "| package | may import |", "| package | imports |", `docs/architecture.md:23: the table of section "Allowed imports" has header | package | imports |, want | package | may import |`},
		{"a cell too many", row, "| `alloc` | `mem` | why |", "docs/architecture.md:26: 3 cells, want 2"},
		{"no backquotes", row, "| `alloc` | mem |", "docs/architecture.md:26: cell \"mem\": expected `"},
		{"prose after a path", row, "| `alloc` | `mem` (mostly) |", "docs/architecture.md:26: cell \"`mem` (mostly)\": \"(mostly)\" after `mem`"},
		{"empty cell", row, "| `alloc` |  |", "docs/architecture.md:26: cell \"\": expected `"},
		{"none for a package", row, "| — | `mem` |", "docs/architecture.md:26: cell \"—\": — is not allowed here"},
		{"not a path", row, "| `alloc` | `Mem Pkg` |", "docs/architecture.md:26: cell \"`Mem Pkg`\": \"Mem Pkg\" is not a package path"},
		{"an absolute path", row, "| `alloc` | `/mem` |", `"/mem" is not a package path relative to the module root`},
		{"two brace groups", row, "| `alloc` | `{a,b}/{c,d}` |", `"{a,b}/{c,d}" is not a package path`},
		{"a duplicate row", row, row + "\n| `alloc` | `mem` |", "docs/architecture.md:27: package alloc has a row already (line 26): one row per package"},
		{"a duplicate from braces", row, "| `alloc`, `alloc/caching` | `mem` |", "docs/architecture.md:27: package alloc/caching has a row already (line 26)"},
		{"an import of itself", row, "| `alloc` | `mem`, `alloc` |", "docs/architecture.md:26: package alloc is listed as an import of itself"},
		{"a second table", "Prose after it too.", "| package | may import |\n|---|---|", `docs/architecture.md:34: a second table in section "Allowed imports"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(testDoc, c.old, c.new, 1)
			if doc == testDoc {
				t.Fatalf("the case does not change the document (%q not found)", c.old)
			}
			_, err := parseLayering(doc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// The table "Packages" is read with the same rules.
	doc := strings.Replace(testDoc, "| `frag` | metrics |", "| frag | metrics |", 1)
	if _, err := parsePackages(doc); err == nil || !strings.Contains(err.Error(), "docs/architecture.md:9: cell \"frag\": expected `") {
		t.Errorf("parsePackages: error %v, want one naming line 9", err)
	}
}
