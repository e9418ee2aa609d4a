// Engine versions: which release of vLLM or SGLang a run stands for. The
// release sets the software overheads of the step-time model (its
// overhead class: the joint model's per-engine parameters, joint.go); the
// scheduler's step composition is Config.Engine's. See profile_engine.go
// for the engines.

package sim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Version is a release of a serving engine, major.minor.patch.
type Version struct{ Major, Minor, Patch int }

// String writes v as ParseEngineVersion reads it.
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// less reports whether v is an earlier release than w.
func (v Version) less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

// The releases gpufrag knows, by minor series of major 0 (both projects
// are still at 0.x): vLLM 0.1 (June 2023, the vLLM paper's) to 0.23, the
// newest a source in calib/published.yaml ran; SGLang 0.1 (January 2024)
// to 0.5. A version outside is refused: its overheads would be a guess.
const (
	vllmFirstMinor, vllmLastMinor     = 1, 23
	sglangFirstMinor, sglangLastMinor = 1, 5
	maxPatch                          = 99
)

// Release boundaries that change how a step is served.
var (
	// vllmV1First is the release that made V1 vLLM's engine (0.8.0; V1
	// was an opt-in alpha in 0.7).
	vllmV1First = Version{0, 8, 0}
	// vllmV0Removed is the release that removed V0 (0.11.0).
	vllmV0Removed = Version{0, 11, 0}
	// vllmAsyncOutput is the release that moved V0's output processing
	// off the step's critical path and cut its per-step CPU work (0.6.0:
	// asynchronous output processing, multi-step scheduling, the object
	// cache; the vLLM blog of 2024-09-05 credits them with 2.7x the
	// throughput of 0.5.3 for Llama-3-8B on one H100, when the API
	// server and scheduling took 62% of a step's time before).
	vllmAsyncOutput = Version{0, 6, 0}
	// vllmMultiStep is the first release with V0's multi-step scheduling
	// (--num-scheduler-steps, Config.SchedulerSteps): 0.6.0, the same
	// release as vllmAsyncOutput.
	vllmMultiStep = Version{0, 6, 0}
	// vllmUnsortedRunning is the first release whose V0 scheduler no longer
	// sorts the running queue by arrival before each step
	// (vllm-project/vllm#6867, in 0.5.4), and vllmDecodesFirst the one that
	// put running decodes back ahead of prefills under chunked prefill
	// (#7874, fixing #7592; discussed 2024-08-26 to 28, so taken to be in
	// 0.6.0 of 2024-09-04: no run gpufrag replays is of 0.6.0 with chunked
	// prefill, so nothing here tests that edge). Between the two, a request
	// admitted with a partial first chunk is first in line at the next
	// step, before the running decodes (PrefillFirstRequeue).
	vllmUnsortedRunning = Version{0, 5, 4}
	vllmDecodesFirst    = Version{0, 6, 0}
	// vllmAsyncSchedule is the release that made V1's async scheduling the
	// default (0.14.0, release notes: "Async scheduling is now enabled by
	// default", vllm-project/vllm#27614: the engine core schedules step
	// n+1 while the GPU runs step n; not with pipeline parallelism).
	vllmAsyncSchedule = Version{0, 14, 0}
	// sglangOverlapSchedule is the release that made SGLang's overlap
	// scheduler ("zero-overhead batch scheduler", the SGLang v0.4 blog of
	// 2024-12-04) the default.
	sglangOverlapSchedule = Version{0, 4, 0}
)

// ScheduleOverlap reports whether engine at release v prepares each step
// while the GPU runs the one before, by default (OverheadTerm.ScheduleOverlap).
func ScheduleOverlap(engine EngineKind, v Version) bool {
	switch engine {
	case EngineVLLMV1:
		return !v.less(vllmAsyncSchedule)
	case EngineSGLang:
		return !v.less(sglangOverlapSchedule)
	}
	return false
}

// PrefillFirstRequeue reports whether engine at release v, with chunked
// prefill, requeues its running requests after each step as vLLM 0.5.4 and
// 0.5.5 did: the ones the token budget left out first, then the requests
// admitted in the step, then the decodes, then the running prefill chunks.
// The next step takes the running queue in that order, so a prompt
// admitted with a small first chunk takes its remaining tokens before any
// decode, and the decodes the budget no longer covers skip the step.
func PrefillFirstRequeue(engine EngineKind, v Version, chunked bool) bool {
	return engine == EngineVLLMV0 && chunked && !v.less(vllmUnsortedRunning) && v.less(vllmDecodesFirst)
}

// Default releases: the newest gpufrag knows for V1 and SGLang; for V0, the
// last release where V0 was vLLM's engine (0.7.3: what a user who picks V0
// most likely ran).
var defaultVersions = [...]Version{
	EngineVLLMV1: {0, vllmLastMinor, 0},
	EngineVLLMV0: {0, 7, 3},
	EngineSGLang: {0, sglangLastMinor, 6},
}

// DefaultEngineVersion is the release a run of engine stands for when none
// is given.
func DefaultEngineVersion(engine EngineKind) Version {
	if !engine.Valid() {
		return Version{}
	}
	return defaultVersions[engine]
}

// EngineReleases lists the minor releases of engine's project that
// ParseEngineVersion takes for it, oldest first, as "0.N" (patch 0; later
// patches of a series are taken too): for hints and shell completion.
func EngineReleases(engine EngineKind) []string {
	if !engine.Valid() {
		return nil
	}
	first, last := vllmFirstMinor, vllmLastMinor
	if engine == EngineSGLang {
		first, last = sglangFirstMinor, sglangLastMinor
	}
	var out []string
	for minor := first; minor <= last; minor++ {
		s := fmt.Sprintf("0.%d", minor)
		if _, err := ParseEngineVersion(engine, s); err == nil {
			out = append(out, s)
		}
	}
	return out
}

var versionRE = regexp.MustCompile(`^[vV]?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,3}))?(?:\.post\d{1,3})?$`)

// project names the engine's project in messages.
func project(engine EngineKind) string {
	if engine == EngineSGLang {
		return "SGLang"
	}
	return "vLLM"
}

// ParseEngineVersion reads a release of engine's project: "0.8.3", "v0.8.3",
// "0.8" (patch 0) or "0.6.3.post1". "" is DefaultEngineVersion. A release
// gpufrag does not know, or one the engine did not exist in (V1 before
// 0.8, V0 from 0.11), is an error wrapping ErrBadConfig that names the
// known range and the nearest known release.
func ParseEngineVersion(engine EngineKind, s string) (Version, error) {
	if !engine.Valid() {
		return Version{}, fmt.Errorf("%w: engine %v", ErrBadConfig, engine)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultEngineVersion(engine), nil
	}
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("%w: engine version %q: want a %s release such as %s", ErrBadConfig, clip(s), project(engine), DefaultEngineVersion(engine))
	}
	var v Version
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.Patch, _ = strconv.Atoi(m[3])
	}
	first, last := vllmFirstMinor, vllmLastMinor
	if engine == EngineSGLang {
		first, last = sglangFirstMinor, sglangLastMinor
	}
	if v.Major != 0 || v.Minor < first || v.Minor > last || v.Patch > maxPatch {
		near := Version{0, min(max(v.Minor, first), last), 0}
		if v.Major > 0 {
			near.Minor = last
		}
		return Version{}, fmt.Errorf("%w: engine version %q: not a %s release gpufrag knows (0.%d to 0.%d); did you mean %q?",
			ErrBadConfig, clip(s), project(engine), first, last, fmt.Sprintf("0.%d", near.Minor))
	}
	switch {
	case engine == EngineVLLMV1 && v.less(vllmV1First):
		return Version{}, fmt.Errorf("%w: engine version %q: vLLM's V1 engine arrived in %d.%d; for an earlier release use engine vllm-v0",
			ErrBadConfig, clip(s), vllmV1First.Major, vllmV1First.Minor)
	case engine == EngineVLLMV0 && !v.less(vllmV0Removed):
		return Version{}, fmt.Errorf("%w: engine version %q: vLLM removed its V0 engine in %d.%d; use engine vllm-v1, or a release before it",
			ErrBadConfig, clip(s), vllmV0Removed.Major, vllmV0Removed.Minor)
	}
	return v, nil
}

// Overhead classes: the releases whose software overheads the step-time
// model tells apart (the joint model's engines section, joint.go). A
// class is what the published evidence separates: vLLM's V0 before 0.6.0
// ran the API server's output processing and the scheduler on the step's
// critical path; 0.6.0 took them off it; V1 runs the engine core apart from
// the API server; SGLang has its own scheduler and detokenizer processes.
const (
	ClassVLLMV0Sync = "vllm-v0-sync" // vLLM V0 before 0.6.0
	ClassVLLMV0     = "vllm-v0"      // vLLM V0 from 0.6.0
	ClassVLLMV1     = "vllm-v1"      // vLLM V1 (0.8.0 on)
	ClassSGLang     = "sglang"
	// ClassLMDeploy is lmdeploy's TurboMind: no engine of Config runs it,
	// but a calibration's figures may (calib's joint fit: its overheads
	// are its own, its GPU terms everyone's).
	ClassLMDeploy = "lmdeploy"
)

// OverheadClasses lists every class, in the joint model's order.
func OverheadClasses() []string {
	return []string{ClassVLLMV0Sync, ClassVLLMV0, ClassVLLMV1, ClassSGLang, ClassLMDeploy}
}

// OverheadClass is the class of engine at release v.
func OverheadClass(engine EngineKind, v Version) string {
	switch engine {
	case EngineSGLang:
		return ClassSGLang
	case EngineVLLMV0:
		if v.less(vllmAsyncOutput) {
			return ClassVLLMV0Sync
		}
		return ClassVLLMV0
	}
	return ClassVLLMV1
}
