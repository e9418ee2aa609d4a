package judge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpufrag/gpufrag/cluster/protocol"
)

// The text has a row per list and per family with every candidate's
// difference, and the rule's verdict per candidate.
func TestWriteText(t *testing.T) {
	j := &Judgement{Ref: "fgd", Candidates: []string{"a", "b"}, Seeds: []uint64{42, 43, 44},
		Lists: []ListResult{{List: "cpu-0.15", Family: "cpu", Ref: protocol.MeanStd{Mean: 0.055},
			Diffs: []Paired{NewPaired([]float64{-0.01, -0.012, -0.011}), NewPaired([]float64{0.01, 0.03, 0.02})}}},
		Families: []FamilyResult{{Family: "cpu", Diffs: []Paired{NewPaired([]float64{-0.01, -0.012, -0.011}), NewPaired([]float64{0.01, 0.03, 0.02})},
			Worse: []int{0, 1}, Equal: []int{0, 0}, Better: []int{1, 0}}},
		Mean: []float64{-0.011, 0.02}, Passes: []bool{true, false}}
	var sb strings.Builder
	if err := WriteText(&sb, j); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		"3 seeds (42-44), paired against fgd:",
		"  [1] a\n  [2] b\n",
		"\ncpu-0.15               cpu       ",
		fmt.Sprintf("%+.2f ±", 100*j.Lists[0].Diffs[0].Mean) + fmt.Sprintf("%.2f %-6s", 100*(j.Lists[0].Diffs[0].High-j.Lists[0].Diffs[0].Mean), j.Lists[0].Diffs[0].Verdict()),
		" 0/0/1", " 1/0/0",
		"[1] a: mean over families -1.100 points; passes the rule\n",
		"[2] b: mean over families +2.000 points; fails the rule\n",
		"\nbest passing candidate: a\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	j.Passes[0] = false
	sb.Reset()
	if err := WriteText(&sb, j); err != nil || !strings.Contains(sb.String(), "no candidate passes") || !strings.Contains(sb.String(), "recommend fgd\n") {
		t.Errorf("no candidate passing: %v\n%s", err, sb.String())
	}
}

func TestSet(t *testing.T) {
	lists, seeds, ok := Set("tune", 0)
	if !ok || len(lists) != len(TuneLists) || &seeds[0] != &TuneSeeds[0] {
		t.Errorf("tune: %d lists, seeds %v, %v", len(lists), seeds, ok)
	}
	lists, seeds, ok = Set("judge", 100)
	if !ok || len(lists) != len(JudgeLists) || lists[0].Seed != JudgeLists[0].Seed+100 || &seeds[0] != &JudgeSeeds[0] {
		t.Errorf("judge +100: %+v, %v", lists, ok)
	}
	if JudgeLists[0].Seed != 201 {
		t.Errorf("the offset changed JudgeLists: %+v", JudgeLists[0])
	}
	if lists, seeds, ok := Set("none", 5); !ok || lists != nil || len(seeds) != len(JudgeSeeds) {
		t.Errorf("none: %v %v %v", lists, seeds, ok)
	}
	if _, _, ok := Set("tunes", 0); ok {
		t.Error("an unknown set is accepted")
	}
}
