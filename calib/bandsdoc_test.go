package calib

import (
	"strings"
	"testing"
)

// TestBandsDocRewrites: BandsDoc replaces what lies between the markers,
// and only that; a current page comes back unchanged; a page without both
// markers is an error naming it.
func TestBandsDocRewrites(t *testing.T) {
	f, err := EmbeddedResiduals()
	if err != nil {
		t.Fatal(err)
	}
	table := NewBands(f).Table()
	stale := "# page\n\n" + bandsBegin + "| an old table |\n" + bandsEnd + "\n\nafter\n"
	got, err := BandsDoc([]byte(stale), "page.md")
	if want := "# page\n\n" + bandsBegin + table + bandsEnd + "\n\nafter\n"; err != nil || string(got) != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	if again, err := BandsDoc(got, "page.md"); err != nil || string(again) != string(got) {
		t.Errorf("a current page changed: %q, %v", again, err)
	}
	for _, doc := range []string{"# page\n", bandsBegin + "| t |\n", "| t |\n" + bandsEnd, bandsEnd + "\n" + bandsBegin} {
		if _, err := BandsDoc([]byte(doc), "page.md"); err == nil || !strings.HasPrefix(err.Error(), `page.md: no line "<!-- bands table: begin -->" followed by`) {
			t.Errorf("%q: %v", doc, err)
		}
	}
}
