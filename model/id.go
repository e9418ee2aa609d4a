// What a Hugging Face model id says of the model it names. See package
// model for the overview.

package model

import (
	"fmt"
	"strconv"
	"strings"
)

// idFamilies are the families a model id's words can name, each with the
// config.json model_type prefixes it takes ("qwen" is qwen2, qwen3, ...).
var idFamilies = []struct{ word, family string }{
	{"llama", "llama"}, {"qwen", "qwen"}, {"opt", "opt"}, {"deepseek", "deepseek"}, {"mistral", "mistral"},
	{"mixtral", "mixtral"}, {"gemma", "gemma"}, {"phi", "phi"}, {"falcon", "falcon"},
}

// llamaBuilt are families some of whose releases are Llama's architecture
// (config.json model_type llama): DeepSeek's first models
// (deepseek-coder, deepseek-llm, deepseek-math) and Falcon3. An id naming
// one of them is no mismatch with a llama model.
var llamaBuilt = map[string]bool{"deepseek": true, "falcon": true}

// idWords splits a model id into lower-case words at its separators, not
// at a dot ("meta-llama/Llama-3.3-70B-Instruct": meta, llama, llama, 3.3,
// 70b, instruct; "Qwen2.5-0.5B": qwen2.5, 0.5b).
func idWords(id string) []string {
	return strings.FieldsFunc(strings.ToLower(id), func(r rune) bool { return strings.ContainsRune("-_/: ", r) })
}

// IDSize returns the parameter count, in billions, that a model id states
// as a word of its own ("70B", "0.5b"), and false when it states none or
// two that differ. A mixture's "8x7B" and an active count's "A3B" are not
// such a word, so "Qwen3-30B-A3B" states 30.
func IDSize(id string) (float64, bool) {
	var size float64
	for _, w := range idWords(id) {
		n, ok := strings.CutSuffix(w, "b")
		if !ok || n == "" || strings.Trim(n, "0123456789.") != "" {
			continue
		}
		x, err := strconv.ParseFloat(n, 64)
		if err != nil || x <= 0 {
			continue
		}
		if size != 0 && x != size {
			return 0, false
		}
		size = x
	}
	return size, size != 0
}

// IDFamily returns the family a model id names (one of its words is
// idFamilies' word, alone or followed by a version: "Qwen2.5" names qwen,
// "optimized" names none), and false when it names none or two
// ("DeepSeek-R1-Distill-Llama-8B").
func IDFamily(id string) (string, bool) {
	var fam string
	for _, w := range idWords(id) {
		for _, f := range idFamilies {
			rest, ok := strings.CutPrefix(w, f.word)
			if !ok || rest != "" && (rest[0] < '0' || rest[0] > '9') { // "qwen2" and "phi3", not "optimized"
				continue
			}
			if fam != "" && fam != f.family {
				return "", false
			}
			fam = f.family
		}
	}
	return fam, fam != ""
}

// idSizeTolerance is how far a model's parameter count may be from the
// size its id states, as a ratio either way: ids round (Llama-3.2-1B has
// 1.24B parameters, Qwen2.5-7B 7.6B, Gemma-2-2B 2.6B), and the sizes
// released side by side (7 or 8, 13, 30-34, 70, 405) are further apart
// than 1.5×.
const idSizeTolerance = 1.5

// IDMismatch says how model id contradicts m: a family other than m's
// (Family, config.json's model_type) or a size more than idSizeTolerance
// from m.Params. It returns "" when they agree or the id says neither
// (ids are free text: a name that states nothing is not a mismatch).
func IDMismatch(id string, m Model) string {
	var why []string
	if fam, ok := IDFamily(id); ok && m.Family != "" && !strings.HasPrefix(strings.ToLower(m.Family), fam) &&
		!(llamaBuilt[fam] && strings.EqualFold(m.Family, "llama")) {
		why = append(why, fmt.Sprintf("a %s model, where %s is %s", fam, modelLabel(m), m.Family))
	}
	if size, ok := IDSize(id); ok && m.Params > 0 {
		have := float64(m.Params) / 1e9
		if r := size / have; r > idSizeTolerance || r < 1/idSizeTolerance {
			why = append(why, fmt.Sprintf("%sB parameters, where %s has %.3gB", strconv.FormatFloat(size, 'g', -1, 64), modelLabel(m), have))
		}
	}
	return strings.Join(why, ", and ")
}

// modelLabel is m's name, or "the model" for one without.
func modelLabel(m Model) string {
	if m.Name == "" {
		return "the model"
	}
	return m.Name
}

// IDAgrees reports whether model id positively names m: it states a family
// or a size, and IDMismatch finds neither contradicted. An id that states
// neither (a --served-model-name alias such as "llama") does not agree.
func IDAgrees(id string, m Model) bool {
	_, fam := IDFamily(id)
	_, size := IDSize(id)
	return (fam || size) && IDMismatch(id, m) == ""
}
