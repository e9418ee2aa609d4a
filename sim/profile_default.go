// The embedded joint models: sim/profiles/prior.yaml, the hand-written
// prior (every starting value cited in its comments), and
// sim/profiles/joint.yaml, the prior fitted to every published figure at
// once (calib's joint fit, written by `go run ./calib/cmd/refit`).
// DefaultProfile derives a GPU's profile from the fitted one.

package sim

import (
	"bytes"
	_ "embed"
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/model"
)

var (
	//go:embed profiles/prior.yaml
	priorYAML []byte
	//go:embed profiles/joint.yaml
	jointYAML []byte
)

// ErrNoProfile is returned (wrapped) by DefaultProfile for a GPU that is
// not a preset: its datasheet peaks are unknown.
var ErrNoProfile = fmt.Errorf("%w: no embedded profile", ErrBadProfile)

// JointPath and PriorPath are the embedded models' files, from the
// repository root.
const (
	JointPath = "sim/profiles/joint.yaml"
	PriorPath = "sim/profiles/prior.yaml"
)

// ProfileGPUs returns the GPUs with an embedded profile, sorted: every GPU
// preset, since the joint model derives each one's from its datasheet.
func ProfileGPUs() []string { return model.GPUNames() }

// PriorYAML returns the text of the hand-written prior (its comments cite
// every value).
func PriorYAML() []byte { return bytes.Clone(priorYAML) }

func mustJoint(data []byte, name string) *JointModel {
	j, err := LoadJointModel(bytes.NewReader(data), name)
	if err != nil {
		panic(fmt.Errorf("sim: embedded joint model does not load: %w", err)) // TestEmbeddedProfiles holds them
	}
	return j
}

// DefaultJoint returns a fresh copy of the fitted joint model.
func DefaultJoint() *JointModel { return mustJoint(jointYAML, JointPath) }

// PriorJoint returns a fresh copy of the hand-written prior joint model.
func PriorJoint() *JointModel { return mustJoint(priorYAML, PriorPath) }

// DefaultProfile returns the profile of gpu (a preset name,
// case-insensitive) under engine at release version ("" for the engine's
// default; ParseEngineVersion), derived from the fitted joint model.
func DefaultProfile(gpu string, engine EngineKind, version string) (*Profile, error) {
	return jointProfile(DefaultJoint(), gpu, engine, version)
}

// PriorProfile is DefaultProfile from the hand-written prior: where a
// calibration starts, whatever has been fitted since.
func PriorProfile(gpu string, engine EngineKind, version string) (*Profile, error) {
	return jointProfile(PriorJoint(), gpu, engine, version)
}

// ProfileFor is DefaultProfile from j instead of the embedded joint model
// (a leave-one-out model of calib/loso, a refit's joint.yaml).
func (j *JointModel) ProfileFor(gpu string, engine EngineKind, version string) (*Profile, error) {
	return jointProfile(j, gpu, engine, version)
}

func jointProfile(j *JointModel, gpu string, engine EngineKind, version string) (*Profile, error) {
	if !engine.Valid() {
		return nil, fmt.Errorf("%w: engine %v", ErrBadProfile, engine)
	}
	g, err := model.LookupGPU(gpu)
	if err != nil {
		return nil, fmt.Errorf("%w for gpu %q (profiles: every GPU preset, %s); or fit one with gpufrag calibrate",
			ErrNoProfile, clip(strings.TrimSpace(gpu)), strings.Join(ProfileGPUs(), ", "))
	}
	v, err := ParseEngineVersion(engine, version)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadProfile, err)
	}
	return j.Profile(g, engine, v)
}

// The step-time models a run can use when none is named.
const (
	StepTimeRoofline = "roofline" // Config.Roofline, Config.Profile nil
	StepTimeJoint    = "joint"    // DefaultProfile of the run's GPU, engine and release
)

// DefaultStepTime is the step-time model of a run that names none
// (simulate, advise and the experiments without a profile): whichever of
// the joint model and the roofline is better out of sample, by the
// leave-one-source-out figures of docs/fidelity.md (calib's
// TestDefaultStepTime holds it to them).
const DefaultStepTime = StepTimeJoint

// DefaultStepProfile is the profile a run of gpu under engine at release
// version gets when it names none: DefaultProfile's under the joint model,
// nil under the roofline.
func DefaultStepProfile(gpu string, engine EngineKind, version string) (*Profile, error) {
	if DefaultStepTime == StepTimeRoofline {
		return nil, nil
	}
	return DefaultProfile(gpu, engine, version)
}
