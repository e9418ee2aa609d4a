package lint

// The layering tables of docs/architecture.md, parsed: the grammar of the
// two tables that layering_test.go compares with the module's packages.

import (
	"fmt"
	"regexp"
	"strings"
)

// layeringDoc is the document that holds the tables, relative to the module
// root.
const layeringDoc = "docs/architecture.md"

// The sections (by heading text) and the header each one's table must have.
const (
	allowedSection  = "Allowed imports"
	packagesSection = "Packages"
)

var (
	allowedHeader  = []string{"package", "may import"}
	packagesHeader = []string{"package", "job"}
)

// noImports is the cell of a row whose package imports no gpufrag package.
const noImports = "—"

// docRow is one row of a table: its line in the document (1-based) and its
// cells, trimmed.
type docRow struct {
	line  int
	cells []string
}

// heading matches a Markdown heading line: its level and its text.
var heading = regexp.MustCompile(`^(#{1,6})[ \t]+(.*?)[ \t#]*$`)

// docTable returns the rows of the one table in the section of doc headed
// title (any level), header row and delimiter row excluded, after checking
// that the header is want. The section ends at the next heading of the
// same or a higher level; headings inside fenced code blocks do not count.
func docTable(doc, title string, want []string) ([]docRow, error) {
	lines := strings.Split(doc, "\n")
	start, level := -1, 0
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(l)
		if fenced || m == nil {
			continue
		}
		if start < 0 {
			if m[2] == title {
				start, level = i+1, len(m[1])
			}
			continue
		}
		if len(m[1]) <= level {
			lines = lines[:i]
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("%s: no section %q: the layering test reads the table under that heading (restore it, or change internal/lint/layering_doc_test.go with it)",
			layeringDoc, title)
	}
	var rows []docRow
	ended := false // the table ended; a second one is an error
	for i := start; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "|") {
			if len(rows) > 0 {
				ended = true
			}
			continue
		}
		if ended {
			return nil, fmt.Errorf("%s:%d: a second table in section %q: the layering test reads one table there",
				layeringDoc, i+1, title)
		}
		if !strings.HasSuffix(l, "|") || len(l) < 2 {
			return nil, fmt.Errorf("%s:%d: a table row must start and end with |", layeringDoc, i+1)
		}
		cells := strings.Split(l[1:len(l)-1], "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, docRow{i + 1, cells})
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("%s:%d: section %q has no table (want a header | %s |)",
			layeringDoc, start, title, strings.Join(want, " | "))
	}
	hdr := rows[0]
	if len(hdr.cells) != len(want) || !equalFold(hdr.cells, want) {
		return nil, fmt.Errorf("%s:%d: the table of section %q has header | %s |, want | %s |",
			layeringDoc, hdr.line, title, strings.Join(hdr.cells, " | "), strings.Join(want, " | "))
	}
	for _, c := range rows[1].cells {
		if strings.Trim(c, ":-") != "" {
			return nil, fmt.Errorf("%s:%d: the table of section %q needs a delimiter row (|---|---|) under its header",
				layeringDoc, rows[1].line, title)
		}
	}
	rows = rows[2:]
	for _, r := range rows {
		if len(r.cells) != len(want) {
			return nil, fmt.Errorf("%s:%d: %d cells, want %d (| %s |)",
				layeringDoc, r.line, len(r.cells), len(want), strings.Join(want, " | "))
		}
	}
	return rows, nil
}

func equalFold(a, b []string) bool {
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}

// pkgPath matches a package path relative to the module root, before brace
// expansion: lower-case path elements of letters, digits, '_', '-' and '.',
// and at most one {a,b,...} group.
var pkgPath = regexp.MustCompile(`^[a-z0-9_.\-/]*(\{[a-z0-9_.\-/,]+\})?[a-z0-9_.\-/]*$`)

// packageCell returns the packages a cell names: `path` items separated by
// commas, each path relative to the module root, with one {a,b} group
// expanded ("alloc/{arena,async}" → alloc/arena, alloc/async) and a
// trailing slash dropped ("probe/" → probe). A cell holding only — names
// none, if none is allowed.
func packageCell(cell string, line int, none bool) ([]string, error) {
	bad := func(why string) error {
		return fmt.Errorf("%s:%d: cell %q: %s; a cell lists packages as `path` (relative to the module root), separated by commas%s",
			layeringDoc, line, clip(cell), why, map[bool]string{true: ", or is " + noImports + " for none", false: ""}[none])
	}
	if cell == noImports {
		if none {
			return nil, nil
		}
		return nil, bad(noImports + " is not allowed here")
	}
	var out []string
	rest := cell
	for {
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, "`") {
			return nil, bad("expected `")
		}
		end := strings.IndexByte(rest[1:], '`')
		if end < 0 {
			return nil, bad("unclosed `")
		}
		item := rest[1 : 1+end]
		rest = strings.TrimSpace(rest[2+end:])
		paths, err := expandPath(item)
		if err != nil {
			return nil, bad(err.Error())
		}
		out = append(out, paths...)
		if rest == "" {
			return out, nil
		}
		if !strings.HasPrefix(rest, ",") {
			return nil, bad(fmt.Sprintf("%q after `%s`", clip(rest), item))
		}
		rest = rest[1:]
	}
}

// expandPath expands one path's {a,b} group and checks every result.
func expandPath(item string) ([]string, error) {
	if !pkgPath.MatchString(item) {
		return nil, fmt.Errorf("%q is not a package path", item)
	}
	alts := []string{item}
	if open := strings.IndexByte(item, '{'); open >= 0 {
		end := strings.IndexByte(item, '}')
		alts = nil
		for a := range strings.SplitSeq(item[open+1:end], ",") {
			alts = append(alts, item[:open]+a+item[end+1:])
		}
	}
	for i, p := range alts {
		p = strings.TrimSuffix(p, "/")
		if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "//") ||
			p == "." || strings.HasPrefix(p, "./") || strings.Contains(p, "/./") || strings.Contains(p, "..") {
			return nil, fmt.Errorf("%q is not a package path relative to the module root", item)
		}
		alts[i] = p
	}
	return alts, nil
}

// clip shortens a cell for a message.
func clip(s string) string {
	const max = 60 // a message names the cell, it does not reproduce a long one
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// layering is the "Allowed imports" table: for each package, the gpufrag
// packages its non-test files may import.
type layering struct {
	allow map[string]map[string]bool // package → packages it may import
	line  map[string]int             // package → line of its row
	// mentioned are the packages named in "may import" cells, with the
	// line of the first row naming each.
	mentioned map[string]int
}

// parseLayering reads the "Allowed imports" table of doc.
func parseLayering(doc string) (*layering, error) {
	rows, err := docTable(doc, allowedSection, allowedHeader)
	if err != nil {
		return nil, err
	}
	l := &layering{allow: map[string]map[string]bool{}, line: map[string]int{}, mentioned: map[string]int{}}
	for _, r := range rows {
		pkgs, err := packageCell(r.cells[0], r.line, false)
		if err != nil {
			return nil, err
		}
		may, err := packageCell(r.cells[1], r.line, true)
		if err != nil {
			return nil, err
		}
		for _, p := range pkgs {
			if prev, dup := l.line[p]; dup {
				return nil, fmt.Errorf("%s:%d: package %s has a row already (line %d): one row per package", layeringDoc, r.line, p, prev)
			}
			l.line[p] = r.line
			l.allow[p] = map[string]bool{}
			for _, m := range may {
				if m == p {
					return nil, fmt.Errorf("%s:%d: package %s is listed as an import of itself: remove it from its own row", layeringDoc, r.line, p)
				}
				l.allow[p][m] = true
			}
		}
		for _, m := range may {
			if _, ok := l.mentioned[m]; !ok {
				l.mentioned[m] = r.line
			}
		}
	}
	return l, nil
}

// parsePackages reads the first column of the "Packages" table of doc: the
// packages it describes, with the line of each one's row.
func parsePackages(doc string) (map[string]int, error) {
	rows, err := docTable(doc, packagesSection, packagesHeader)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, r := range rows {
		pkgs, err := packageCell(r.cells[0], r.line, false)
		if err != nil {
			return nil, err
		}
		for _, p := range pkgs {
			if prev, dup := out[p]; dup {
				return nil, fmt.Errorf("%s:%d: package %s has a row already (line %d): one row per package", layeringDoc, r.line, p, prev)
			}
			out[p] = r.line
		}
	}
	return out, nil
}
