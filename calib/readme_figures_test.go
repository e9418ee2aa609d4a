package calib

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEFidelityFigures: the README's paragraph on the joint model
// quotes docs/fidelity.md's summary and the vLLM paper's rows, and so does
// docs/calibrate.md's "where they stand"; each of their figures must be
// the page's, so that a regenerated page that moves one fails here until
// both say the same (the README had kept two roofline figures of an older
// page, docs/calibrate.md a whole paragraph).
func TestREADMEFidelityFigures(t *testing.T) {
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(b)), " ")
	}
	page, readme := read(filepath.Join("docs", "fidelity.md")), read("README.md")
	find := func(text, what, pattern string, n int) []string {
		t.Helper()
		m := regexp.MustCompile(pattern).FindStringSubmatch(text)
		if len(m) != n+1 {
			t.Fatalf("%s: no match for %q", what, pattern)
		}
		return m[1:]
	}
	row := func(label string) []string { // a Summary row: figures, median, worst
		return find(page, "docs/fidelity.md", `\| `+regexp.QuoteMeta(label)+` \| (\d+) \| ([0-9.]+)% \| ([0-9.]+)% \|`, 3)
	}
	errOf := func(id string) string { // a figure's error under the joint model held out by source
		return find(page, "docs/fidelity.md", "\\| `"+regexp.QuoteMeta(id)+"` \\|(?: [^|]* \\|){4} [^|]* \\| ([-+][0-9.]+)% \\|", 1)[0]
	}
	loso, logo, roof := row("leave one source out"), row("leave one GPU out"), row("roofline")
	never, neverRoof := row("never seen (sources no fit used), joint model"), row("never seen, roofline")

	got := find(readme, "README.md", `Judged on (\d+) figures with the model fitted without each figure's source, the median error is ([0-9.]+)% \(the target, 10%, met; the worst ([0-9.]+)%; the roofline's ([0-9.]+)%\); with the model fitted without each figure's GPU, ([0-9.]+)%; on the (\d+) figures of sources no fit used .*? it is ([0-9.]+)% \(the roofline's ([0-9.]+)%\), the worst ([0-9.]+)%`, 9)
	want := []string{loso[0], loso[1], loso[2], roof[1], logo[1], never[0], never[1], neverRoof[1], never[2]}
	names := []string{"figures", "leave one source out", "its worst", "roofline", "leave one GPU out", "never-seen figures", "never seen", "never seen, roofline", "never seen, worst"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("README.md: %s %s, docs/fidelity.md %s", names[i], got[i], want[i])
		}
	}

	status := find(read(filepath.Join("docs", "calibrate.md")), "docs/calibrate.md", `\*\*Now\*\* .*?: cross-source held-out median ([0-9.]+)% over (\d+) figures .*? worst ([0-9.]+)% .*? leave one GPU out ([0-9.]+)%; never-seen sources median ([0-9.]+)% over (\d+) figures .*? worst ([0-9.]+)% .*? Fig\. 13a, vLLM's mean batch −([0-9.]+)% .*? \(vLLM \+([0-9.]+)%, Orca Oracle \+([0-9.]+)%, Pow2 \+([0-9.]+)%, Max \+([0-9.]+)%`, 12)
	want = []string{loso[1], loso[0], loso[2], logo[1], never[1], never[0], never[2]}
	names = []string{"leave one source out", "figures", "its worst", "leave one GPU out", "never seen", "never-seen figures", "never seen, worst"}
	for i := range want {
		if status[i] != want[i] {
			t.Errorf("docs/calibrate.md, where the targets stand: %s %s, docs/fidelity.md %s", names[i], status[i], want[i])
		}
	}
	for i, id := range []string{"vllm-paper-fig13a-mean-batch-vllm", "vllm-paper-fig12a-rate-at-0.5-vllm", "vllm-paper-fig12a-rate-at-0.5-orca-oracle",
		"vllm-paper-fig12a-rate-at-0.5-orca-pow2", "vllm-paper-fig12a-rate-at-0.5-orca-max"} {
		if e := strings.TrimLeft(errOf(id), "+-"); status[7+i] != e {
			t.Errorf("docs/calibrate.md, where the targets stand: %s %s%%, docs/fidelity.md %s%%", id, status[7+i], e)
		}
	}

	paper := find(readme, "README.md", `Fig\. 13a mean batch of vLLM is ([0-9.]+)% low, its Fig\. 12a sustainable rates .*? ([0-9.]+)% too high for vLLM, ([0-9.]+)% and ([0-9.]+)% for Orca Oracle and Pow2 and ([0-9.]+)% for Orca Max`, 5)
	for i, id := range []string{"vllm-paper-fig13a-mean-batch-vllm", "vllm-paper-fig12a-rate-at-0.5-vllm", "vllm-paper-fig12a-rate-at-0.5-orca-oracle",
		"vllm-paper-fig12a-rate-at-0.5-orca-pow2", "vllm-paper-fig12a-rate-at-0.5-orca-max"} {
		if e := strings.TrimLeft(errOf(id), "+-"); paper[i] != e {
			t.Errorf("README.md: %s %s%%, docs/fidelity.md %s%%", id, paper[i], e)
		}
	}
}
