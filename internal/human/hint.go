package human

import (
	"fmt"
	"strings"
)

// DidYouMean is the hint every command adds to an unknown name: `; did you
// mean "h100-80g"?` when one known name (or a few, equally near) is within a
// small edit distance of name, or starts with it; "" otherwise. Case does
// not count. One helper for every list of names (GPUs, model presets, KV
// strategies, allocators, engines, profiles, formats, policies...), so that
// every command suggests alike.
func DidYouMean(name string, known []string) string {
	near := NearNames(name, known)
	if len(near) == 0 {
		return ""
	}
	q := make([]string, len(near))
	for i, n := range near {
		q[i] = fmt.Sprintf("%q", n)
	}
	return "; did you mean " + strings.Join(q, " or ") + "?"
}

// NearNames returns the known names nearest to name: those at the smallest
// edit distance when it is at most maxEdits(name), else the names name is
// the start of ("h100" → "h100-80g"), at most three of either.
func NearNames(name string, known []string) []string {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return nil
	}
	best, dist := []string(nil), maxEdits(n)+1
	var prefixed []string
	for _, k := range known {
		lk := strings.ToLower(k)
		if lk == n {
			return nil // not unknown: the caller's error is about something else
		}
		switch d := editDistance(n, lk); {
		case d < dist:
			best, dist = []string{k}, d
		case d == dist:
			best = append(best, k)
		}
		if strings.HasPrefix(lk, n) {
			prefixed = append(prefixed, k)
		}
	}
	if len(best) == 0 {
		best = prefixed
	}
	if len(best) > 3 {
		return nil // too many to be a hint
	}
	return best
}

// maxEdits is how many edits still make a near name: one for names up to
// four characters, two up to eight, three beyond ("llama3-8b" is one edit
// from "llama-3-8b"; "bestfi" one from "bestfit").
func maxEdits(name string) int {
	switch n := len([]rune(name)); {
	case n <= 4:
		return 1
	case n <= 8:
		return 2
	}
	return 3
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// SpecKind is the name part of a spec ("paged" of "paged:16",
// "caching" of "caching:expandable_segments:True"), what a hint compares.
func SpecKind(s string) string {
	k, _, _ := strings.Cut(strings.TrimSpace(s), ":")
	return k
}

// SpecKinds returns the distinct kinds of names ("paged:B" → "paged").
func SpecKinds(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if k := SpecKind(n); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
