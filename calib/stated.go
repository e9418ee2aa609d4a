// The setup the benchmark files state: the server's settings a run
// records (workload.BenchResult.Server: vllm bench sweep's serve
// parameters, --metadata KEY=VALUE) and the weight type its model id names.
// gpufrag calibrate replays the runs with them where no flag says
// otherwise (ResolveStated).

package calib

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/workload"
)

// Stated is one setting of the setup a run states.
type Stated struct {
	// Flag names the setting as the gpufrag flag that sets it ("tp",
	// "max-seqs", "weight-dtype"); Value is the value in that flag's
	// canonical syntax ("8", "fp8_e4m3", "false").
	Flag  string `json:"flag"`
	Value string `json:"value"`
	// Where is the run ("FILE", "FILE: run 2 of 5"); Said the file's key
	// and value as written ("tensor_parallel_size 8").
	Where string `json:"where"`
	Said  string `json:"said"`
}

func (s Stated) String() string { return s.Where + " states " + s.Said }

// statedKeys maps a server setting's key (workload.ServerKeys) to the flag
// that sets the same thing; dtype and quantization are the weights' type
// (weightDType), kept apart.
var statedKeys = map[string]string{
	"tensor_parallel_size": "tp", "kv_cache_dtype": "kv-dtype", "max_model_len": "max-context", "max_num_seqs": "max-seqs",
	"max_num_batched_tokens": "max-batch-tokens", "enable_chunked_prefill": "chunked-prefill",
	"enable_prefix_caching": "prefix-caching", "gpu_memory_utilization": "gpu-memory-utilization",
}

// CanonicalSetting returns value in flag's canonical syntax, or an error
// when it is not a value the flag takes (the checks of the flag itself:
// positive counts, a share in (0, 1], a known type). "auto" for a type is
// ok false: the engine's default, no statement.
func CanonicalSetting(flag, value string) (canonical string, ok bool, err error) {
	v := strings.TrimSpace(value)
	switch flag {
	case "tp", "max-context", "max-seqs", "max-batch-tokens":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "", false, fmt.Errorf("want a positive integer")
		}
		return strconv.Itoa(n), true, nil
	case "chunked-prefill", "prefix-caching":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", false, fmt.Errorf("want true or false")
		}
		return strconv.FormatBool(b), true, nil
	case "gpu-memory-utilization":
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x > 0 && x <= 1) {
			return "", false, fmt.Errorf("want a share in (0, 1]")
		}
		return strconv.FormatFloat(x, 'g', -1, 64), true, nil
	case "weight-dtype", "kv-dtype":
		if strings.EqualFold(v, "auto") {
			return "", false, nil
		}
		parse := model.ParseDType
		if flag == "kv-dtype" {
			parse = model.ParseKVDType
		}
		d, err := parse(v)
		if err != nil {
			return "", false, err
		}
		return d.String(), true, nil
	}
	return "", false, fmt.Errorf("calib: no setting %q", flag)
}

// quantizations are the values of vLLM's --quantization whose weight type
// is known from the name alone (GPTQ's bits are in the model's config, so
// it is not one of them).
var quantizations = map[string]string{"fp8": "fp8", "fbgemm_fp8": "fp8", "awq": "int4", "awq_marlin": "int4"}

// modelIDTypes are the words of a model id that name its weights' type
// (neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8-dynamic,
// hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4).
var modelIDTypes = map[string]string{"fp8": "fp8", "int4": "int4", "awq": "int4", "w4a16": "int4", "int8": "int8",
	"w8a8": "int8", "w8a16": "int8"}

// modelIDWeights returns the weight type a model id names, and the word
// that names it; "" when it names none or names two.
func modelIDWeights(id string) (dtype, word string) {
	for _, w := range strings.FieldsFunc(strings.ToLower(id), func(r rune) bool { return strings.ContainsRune("-_./ ", r) }) {
		if d, ok := modelIDTypes[w]; ok {
			if dtype != "" && d != dtype {
				return "", ""
			}
			dtype, word = d, w
		}
	}
	return dtype, word
}

// runStated returns what run r (named where) states, in workload.ServerKeys'
// order and then the weights' type; warnings for settings it records that
// say nothing calibrate can use. A value no flag would take is an error
// naming the run and the key. The weights' type is quantization's where
// its name tells it, else the one the model id names, else dtype's: vLLM's
// --dtype is the type of the activations, which is the weights' only for a
// checkpoint that is not quantized.
func runStated(r *workload.BenchResult, where string) ([]Stated, []string, error) {
	var out []Stated
	var warns []string
	var quant, dtype *Stated
	unknownQuant := false
	for _, a := range r.Server {
		said := a.Key + " " + clipLabel(a.Value)
		if a.Key == "quantization" {
			v := strings.ToLower(strings.TrimSpace(a.Value))
			if d, ok := quantizations[v]; ok {
				quant = &Stated{Flag: "weight-dtype", Value: d, Where: where, Said: said}
			} else if v != "" && v != "none" {
				unknownQuant = true
				warns = append(warns, fmt.Sprintf("%s states quantization %s, whose weight type calibrate cannot tell from its name: give --weight-dtype",
					where, clipLabel(a.Value)))
			}
			continue
		}
		flag := statedKeys[a.Key]
		if a.Key == "dtype" {
			flag = "weight-dtype"
		}
		v, ok, err := CanonicalSetting(flag, a.Value)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %s %s: %w", ErrSetup, where, a.Key, clipLabel(a.Value), err)
		}
		if !ok {
			continue
		}
		s := Stated{Flag: flag, Value: v, Where: where, Said: said}
		if a.Key == "dtype" {
			dtype = &s
			continue
		}
		out = append(out, s)
	}
	weights := quant
	if weights == nil && !unknownQuant {
		if d, word := modelIDWeights(r.Model); d != "" {
			weights = &Stated{Flag: "weight-dtype", Value: d, Where: where, Said: fmt.Sprintf("model_id %s (%s)", clipLabel(r.Model), word)}
		} else {
			weights = dtype
		}
	}
	if weights != nil {
		v, _, err := CanonicalSetting("weight-dtype", weights.Value)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %s: %w", ErrSetup, where, weights.Said, err)
		}
		weights.Value = v
		out = append(out, *weights)
	}
	return out, warns, nil
}

// StatedSetup returns what the runs of the files state, run by run, and
// warnings for settings they record that calibrate cannot use. Runs that
// name different models (model_id) are one calibration only where they
// agree on whether and how the weights are quantized (each run's type as
// runStated resolves it: quantization, else the model id, else dtype; a
// 16-bit type or none is unquantized): a run of an FP8 checkpoint beside
// one of its BF16 original is refused, since the one weight type calibrate
// replays would be wrong for one of them; other differing names are a
// warning (--model sets the model all runs are replayed as).
func StatedSetup(files ...[]*File) ([]Stated, []string, error) {
	var out []Stated
	var warns []string
	var firstID, firstWhere, firstQuant string
	differ := false
	for _, group := range files {
		for _, f := range group {
			for _, r := range f.Runs {
				where := f.Name
				if r.Runs > 1 {
					where = fmt.Sprintf("%s: run %d of %d", f.Name, r.Run, r.Runs)
				}
				s, w, err := runStated(r, where)
				if err != nil {
					return nil, nil, err
				}
				if id := strings.TrimSpace(r.Model); id != "" {
					quant := quantizedType(s)
					switch {
					case firstWhere == "":
						firstID, firstWhere, firstQuant = id, where, quant
					case id != firstID && quant != firstQuant:
						return nil, nil, fmt.Errorf("%w: %s names model %s and %s names %s, whose weights differ (%s, %s): the runs of one calibration "+
							"must share one setup; calibrate them apart", ErrSetup, firstWhere, clipLabel(firstID), where, clipLabel(id),
							weightsOrUnnamed(firstQuant), weightsOrUnnamed(quant))
					case id != firstID && !differ:
						warns = append(warns, fmt.Sprintf("%s names model %s and %s names %s: calibrate replays every run as the one model --model gives",
							firstWhere, clipLabel(firstID), where, clipLabel(id)))
						differ = true
					}
				}
				out, warns = append(out, s...), append(warns, w...)
			}
		}
	}
	return out, warns, nil
}

// quantizedType is the weights' type a run states (runStated's
// weight-dtype) when it is a quantized one; "" for a 16-bit type or none.
func quantizedType(stated []Stated) string {
	for _, st := range stated {
		if st.Flag == "weight-dtype" {
			if d, err := model.ParseDType(st.Value); err == nil && d.Bytes() < 2 {
				return st.Value
			}
		}
	}
	return ""
}

// weightsOrUnnamed is a quantized weight type a run states, or what its
// absence means in a message.
func weightsOrUnnamed(dtype string) string {
	if dtype == "" {
		return "not quantized"
	}
	return dtype
}

// ResolveStated decides what the stated settings set: a flag that was
// given (given returns its canonical value, true) overrides what the files
// state, with a warning for each run that states otherwise; a setting no
// flag gave is the files' when they agree, and refused naming two runs
// that state different values. apply holds one Stated per setting to set,
// in the order first stated.
func ResolveStated(stated []Stated, given func(flag string) (string, bool)) (apply []Stated, warns []string, err error) {
	var flags []string
	for _, s := range stated {
		if !slices.Contains(flags, s.Flag) {
			flags = append(flags, s.Flag)
		}
	}
	for _, flag := range flags {
		var first *Stated
		for i := range stated {
			s := &stated[i]
			if s.Flag != flag {
				continue
			}
			if v, ok := given(flag); ok {
				if v != s.Value {
					warns = append(warns, fmt.Sprintf("--%s %s overrides what %s", flag, v, s))
				}
				continue
			}
			switch {
			case first == nil:
				first = s
			case first.Value != s.Value:
				return nil, nil, fmt.Errorf("%w: %s and %s: the runs of one calibration must share one setup (%s %s, %s %s); "+
					"calibrate them apart, or give --%s to replay them all with one value", ErrSetup, first, s, flag, first.Value, flag, s.Value, flag)
			}
		}
		if first != nil {
			apply = append(apply, *first)
		}
	}
	return apply, warns, nil
}

// ModelIDMismatches returns, for each model id the runs of the files name
// that contradicts m (model.IDMismatch: another family or size), "WHERE
// names model ID: a 70B model, ..." once per id, at the first run that
// names it.
func ModelIDMismatches(m model.Model, files ...[]*File) []string {
	var out []string
	seen := map[string]bool{}
	for _, group := range files {
		for _, f := range group {
			for _, r := range f.Runs {
				id := strings.TrimSpace(r.Model)
				if id == "" || seen[id] {
					continue
				}
				seen[id] = true
				if why := model.IDMismatch(id, m); why != "" {
					where := f.Name
					if r.Runs > 1 {
						where = fmt.Sprintf("%s: run %d of %d", f.Name, r.Run, r.Runs)
					}
					out = append(out, fmt.Sprintf("%s names model %s: %s", where, clipLabel(id), why))
				}
			}
		}
	}
	return out
}
