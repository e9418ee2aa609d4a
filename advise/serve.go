// The command that deploys a recommendation. See doc.go for the overview.

package advise

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/kv/strategy"
	"github.com/gpufrag/gpufrag/model"
)

// Deploy is what applies a setting on the engine its KV strategy stands
// for, as the text's "To deploy it" lines and --json's deploy object give
// it (Lines renders it; there is no second copy).
type Deploy struct {
	// Engine is "vllm" when Command is a `vllm serve` line; otherwise the
	// KV strategy's family ("contiguous", "vmm"), which no stock vLLM
	// mode serves.
	Engine string `json:"engine"`
	// Command is `vllm serve MODEL_ID` with every flag the setting and the
	// run's inputs need (tensor parallelism, context, KV cache and weight types), the
	// allocator's environment in front; for contiguous KV (an engine that
	// allocates KV per request), a sentence naming that engine and vLLM's
	// equivalents of the limits.
	Command string `json:"command"`
	// Env is the environment the command sets (registry.EnvVar), empty
	// when PyTorch's defaults apply.
	Env map[string]string `json:"env"`
	// Notes are what the command cannot say: settings with no vLLM or
	// PyTorch switch, a model id to fill in.
	Notes []string `json:"notes"`
}

// NewDeploy is the deployment of s under in: the model by in.ModelID
// (a placeholder that says so when unknown), in.TP, in.MaxContext and
// in.KVDType as vLLM flags (Inputs.engineFlags), then s's own
// (Settings.EngineFlags).
func NewDeploy(s Settings, in Inputs) Deploy {
	flags, notes := in.engineFlags()
	sflags, env, snotes := s.EngineFlags()
	flags, notes = append(flags, sflags...), append(notes, snotes...)
	id := in.ModelID
	if id == "" {
		id = "<hf-model-id>"
		notes = append(notes, fmt.Sprintf("%s has no known Hugging Face id (a config.json without _name_or_path): put the id you serve in place of <hf-model-id>", in.Model))
	}
	d := Deploy{Engine: s.KV.Family().String(), Env: map[string]string{}}
	if s.KV.Family() == strategy.Paged {
		d.Engine = "vllm"
	}
	if env != "" {
		d.Env[registry.EnvVar] = env
		notes = append(notes, registry.EnvVarNote)
	}
	if d.Engine == "vllm" {
		d.Command = "vllm serve " + id + " " + strings.Join(flags, " ")
		if env != "" {
			d.Command = registry.EnvVar + "=" + env + " " + d.Command
		}
	} else {
		d.Command = fmt.Sprintf("serve %s with an engine that allocates KV per request (%s); vLLM's equivalents of the limits: %s",
			id, s.KV, strings.Join(flags, " "))
	}
	d.Notes = notes
	if d.Notes == nil {
		d.Notes = []string{}
	}
	return d
}

// Lines is d as the text prints it: the command, for contiguous KV the
// allocator's environment on a line of its own, then the notes.
func (d Deploy) Lines() []string {
	out := []string{d.Command}
	if d.Engine != "vllm" {
		line := registry.EnvVar + " unset (PyTorch's defaults)"
		if v, ok := d.Env[registry.EnvVar]; ok {
			line = registry.EnvVar + "=" + v
		}
		out = append(out, line)
	}
	for _, n := range d.Notes {
		out = append(out, "note: "+n)
	}
	return out
}

// engineFlags are the vLLM flags that the run's inputs, not the swept
// settings, need: --tensor-parallel-size (a model sharded over TP GPUs
// does not start on one), --max-model-len (the context every candidate
// was sized for) and --kv-cache-dtype for an fp8 KV cache; a KV dtype
// vLLM's flag has no value for gets a note instead.
func (in Inputs) engineFlags() (flags, notes []string) {
	if in.TP > 1 {
		flags = append(flags, "--tensor-parallel-size "+strconv.Itoa(in.TP))
	}
	if in.MaxContext > 0 {
		flags = append(flags, "--max-model-len "+strconv.Itoa(in.MaxContext))
	}
	flags, notes = in.weightFlags(flags, notes)
	if in.KVDType == "" {
		return flags, notes
	}
	d, err := model.ParseKVDType(in.KVDType)
	switch {
	case err != nil:
		notes = append(notes, "KV cache dtype "+in.KVDType+": set vLLM's --kv-cache-dtype to match")
	case d == model.FP8E4M3:
		flags = append(flags, "--kv-cache-dtype fp8")
	case d == model.FP8E5M2:
		flags = append(flags, "--kv-cache-dtype fp8_e5m2")
	case d == model.INT8:
		notes = append(notes, "KV cache in int8: vLLM's --kv-cache-dtype has no int8 (its 8-bit KV cache is fp8)")
	default:
		if w, err := model.ParseDType(in.WeightDType); err == nil && w.Bytes() >= 2 && w != d {
			// weightFlags set --dtype already: a 16-bit KV cache is in its type.
			notes = append(notes, fmt.Sprintf("KV cache in %s with %s weights: vLLM keeps a 16-bit KV cache in --dtype's type (%s), so it cannot serve the two; "+
				"give --kv-dtype and --weight-dtype one type", d, w, vllmDType(w)))
			break
		}
		notes = append(notes, fmt.Sprintf("KV cache in %s: vLLM keeps the KV cache in the model's dtype (--kv-cache-dtype auto); add --dtype %s where the model's is another", d, vllmDType(d)))
	}
	return flags, notes
}

// weightFlags adds what --weight-dtype needs: fp8 weights from a checkpoint
// that is not one (its id does not say fp8) are vLLM's online quantization,
// --quantization fp8; a 16-bit type is --dtype; int8 and int4 weights come
// only from a checkpoint quantized so, which a note asks for.
func (in Inputs) weightFlags(flags, notes []string) ([]string, []string) {
	if in.WeightDType == "" {
		return flags, notes
	}
	d, err := model.ParseDType(in.WeightDType)
	switch {
	case err != nil:
	case d == model.FP8E4M3:
		if !strings.Contains(strings.ToLower(in.ModelID), "fp8") {
			flags = append(flags, "--quantization fp8")
		}
	case d == model.INT8 || d == model.INT4:
		notes = append(notes, fmt.Sprintf("weights in %s: serve a checkpoint quantized to %s (vLLM reads its method from the checkpoint's config) in place of %s",
			d, d, cmp.Or(in.ModelID, "<hf-model-id>")))
	case d.Bytes() >= 2:
		flags = append(flags, "--dtype "+vllmDType(d))
	}
	return flags, notes
}

// vllmDType is vLLM's --dtype name for a 16- or 32-bit type.
func vllmDType(d model.DType) string {
	switch d {
	case model.BF16:
		return "bfloat16"
	case model.FP16:
		return "float16"
	case model.FP32:
		return "float32"
	}
	return d.String()
}
