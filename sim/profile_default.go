// The embedded profiles. sim/profiles/<gpu>.yaml, one per GPU preset, is
// the hand-written prior for vLLM V1: datasheet peaks and efficiencies read
// from published figures, each cited in its comments. The profiles of the
// other engines are derived from it (PriorProfile). A fitted profile,
// sim/profiles/<gpu>.<engine>.yaml (written by calib's fit to published
// figures, calib/fitfig.go), replaces the prior of that GPU and engine in
// DefaultProfile.

package sim

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/model"
)

//go:embed profiles/*.yaml
var profileFS embed.FS

// ErrNoProfile is returned (wrapped) by DefaultProfile for a GPU without an
// embedded profile.
var ErrNoProfile = fmt.Errorf("%w: no embedded profile", ErrBadProfile)

// ProfileGPUs returns the GPUs with an embedded profile, sorted.
func ProfileGPUs() []string {
	ents, err := fs.ReadDir(profileFS, "profiles")
	if err != nil {
		panic(fmt.Errorf("sim: embedded profiles unreadable: %w", err))
	}
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok && !strings.Contains(n, ".") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// FittedProfileYAML returns the text of the fitted embedded profile of gpu
// under engine (sim/profiles/<gpu>.<engine>.yaml), and whether there is one.
func FittedProfileYAML(gpu string, engine EngineKind) ([]byte, bool) {
	name := strings.ToLower(strings.TrimSpace(gpu))
	if name == "" || strings.ContainsAny(name, "/\\.") || !engine.Valid() {
		return nil, false
	}
	data, err := profileFS.ReadFile("profiles/" + name + "." + engine.String() + ".yaml")
	return data, err == nil
}

// EmbeddedProfileYAML returns the text of gpu's embedded profile (its
// comments say where each number comes from).
func EmbeddedProfileYAML(gpu string) ([]byte, error) {
	name := strings.ToLower(strings.TrimSpace(gpu))
	var data []byte
	err := ErrNoProfile
	if name != "" && !strings.ContainsAny(name, "/\\.") {
		data, err = profileFS.ReadFile("profiles/" + name + ".yaml")
	}
	if err != nil {
		return nil, fmt.Errorf("%w for gpu %q (profiles: %s); write one (start from sim/profiles/h100-80g.yaml) or fit one with gpufrag calibrate",
			ErrNoProfile, clip(gpu), strings.Join(ProfileGPUs(), ", "))
	}
	return data, nil
}

// DefaultProfile returns a fresh copy of the embedded profile of gpu (a
// preset name, case-insensitive) for the engine: the fitted one where there
// is one (FittedProfileYAML), else PriorProfile.
func DefaultProfile(gpu string, engine EngineKind) (*Profile, error) {
	if !engine.Valid() {
		return nil, fmt.Errorf("%w: engine %v", ErrBadProfile, engine)
	}
	if data, ok := FittedProfileYAML(gpu, engine); ok {
		name := "sim/profiles/" + strings.ToLower(strings.TrimSpace(gpu)) + "." + engine.String() + ".yaml"
		p, err := LoadProfile(bytes.NewReader(data), name)
		if err != nil {
			panic(fmt.Errorf("sim: embedded profile does not load: %w", err)) // TestEmbeddedProfiles holds them
		}
		if p.Engine != engine || !strings.EqualFold(p.GPU, strings.TrimSpace(gpu)) {
			panic(fmt.Errorf("sim: %s is for %s under %v", name, p.GPU, p.Engine)) // TestEmbeddedProfiles holds them
		}
		return p, nil
	}
	return PriorProfile(gpu, engine)
}

// PriorProfile returns a fresh copy of the hand-written embedded profile of
// gpu (sim/profiles/<gpu>.yaml, for vLLM V1), derived for the engine: for
// vllm-v0 and sglang the CUDA-graph part is that engine's default
// (profile_engine.go) and every other parameter the file's (the hardware
// terms are the engine's kernels on the same GPU; the overheads are V1's).
// It is where a fit starts, whatever has been fitted since.
func PriorProfile(gpu string, engine EngineKind) (*Profile, error) {
	if !engine.Valid() {
		return nil, fmt.Errorf("%w: engine %v", ErrBadProfile, engine)
	}
	data, err := EmbeddedProfileYAML(gpu)
	if err != nil {
		return nil, err
	}
	p, err := LoadProfile(bytes.NewReader(data), "sim/profiles/"+strings.ToLower(strings.TrimSpace(gpu))+".yaml")
	if err != nil {
		panic(fmt.Errorf("sim: embedded profile does not load: %w", err)) // TestEmbeddedProfiles holds them
	}
	switch engine {
	case EngineVLLMV0:
		p.CUDAGraph = CUDAGraphTerm{Sizes: vllmV0GraphSizes()}
	case EngineSGLang:
		var capacity int64
		if g, err := model.LookupGPU(p.GPU); err == nil {
			capacity = g.Capacity
		}
		p.CUDAGraph = CUDAGraphTerm{Sizes: sglangGraphSizes(capacity)}
	}
	if engine != EngineVLLMV1 {
		p.Engine = engine
		p.Notes = strings.TrimSpace(p.Notes + "\n" + fmt.Sprintf(
			"Derived for %s: cuda_graph is %s's default capture list (sim/profile_engine.go); every other parameter is the vllm-v1 profile's.",
			engine, engine))
	}
	return p, nil
}
