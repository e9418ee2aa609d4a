package analysis

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/gpufrag/gpufrag/snapshot"
)

// The one rule that decides which frame of an allocation's stack names its
// call site, used by the diagnosis's call sites, the oom entries and the
// attribution (attrib.go). PyTorch records stacks innermost first, C++
// frames (the allocator, the dispatcher, the interpreter's own
// _PyEval_EvalFrameDefault) interleaved with Python frames. A frame is
//
//   - FrameNative: not a Python source line (no ".py" file or no line
//     number): C++ and interpreter frames;
//   - FrameFramework: PyTorch's own Python (a path with a "torch"
//     directory) or Python's internals ("<frozen importlib._bootstrap>",
//     "<string>", the standard library under lib/pythonX.Y/ outside
//     site-packages);
//   - FrameLibrary: another installed package (under site-packages or
//     dist-packages): transformers, vllm, einops...;
//   - FrameUser: any other Python file: the program's own code.
//
// The call site is the innermost user frame; else, when the whole Python
// stack is installed code (a vLLM or SGLang server runs from
// site-packages), the innermost library frame; else the innermost frame
// with a line number; else the innermost frame. The collapsed stack is the
// call site followed by its Python callers that are user or library frames
// (the framework and native frames between them dropped), so a flame graph
// of collapsed stacks has the program's call chain as its trunk and the
// call sites as its leaves.

// FrameKind classifies a stack frame for attribution.
type FrameKind int

// The frame kinds, from the framework inward to the user's code.
const (
	FrameNative FrameKind = iota
	FrameFramework
	FrameLibrary
	FrameUser
)

// String names the kind.
func (k FrameKind) String() string {
	switch k {
	case FrameNative:
		return "native"
	case FrameFramework:
		return "framework"
	case FrameLibrary:
		return "library"
	case FrameUser:
		return "user"
	}
	return fmt.Sprintf("FrameKind(%d)", int(k))
}

// ClassifyFrame says which kind of frame f is (see the rule above).
func ClassifyFrame(f snapshot.Frame) FrameKind {
	name := strings.ReplaceAll(f.Filename, `\`, "/") // a snapshot taken on Windows
	if f.Line <= 0 || !strings.HasSuffix(name, ".py") {
		if strings.HasPrefix(name, "<") && f.Line > 0 { // <frozen ...>, <string>
			return FrameFramework
		}
		return FrameNative
	}
	installed := strings.Contains(name, "/site-packages/") || strings.Contains(name, "/dist-packages/")
	if hasDir(name, "torch") {
		return FrameFramework
	}
	if installed {
		return FrameLibrary
	}
	if stdlib(name) {
		return FrameFramework
	}
	return FrameUser
}

// hasDir reports whether path has a directory named dir ("torch/x.py",
// "/usr/lib/torch/x.py"), not merely a name containing it ("torchvision").
func hasDir(path, dir string) bool {
	return strings.HasPrefix(path, dir+"/") || strings.Contains(path, "/"+dir+"/")
}

// stdlib reports whether path is in a Python installation's standard
// library: a directory lib/pythonX.Y/ (or Lib/ on Windows) not under
// site-packages, which the caller has ruled out.
func stdlib(path string) bool {
	for rest := path; ; {
		i := strings.Index(rest, "/lib/python")
		if i < 0 {
			break
		}
		tail := rest[i+len("/lib/python"):]
		j := strings.IndexByte(tail, '/')
		if j > 0 && strings.Trim(tail[:j], "0123456789.t") == "" { // python3.13, python3.13t
			return true
		}
		rest = tail
	}
	return strings.Contains(path, "/Lib/") && strings.Contains(strings.ToLower(path), "python")
}

// SiteIndex is the index in frames (innermost first) of the frame that
// names the call site; 0 for an empty stack.
func SiteIndex(frames []snapshot.Frame) int {
	library, lined := -1, -1
	for i, f := range frames {
		switch ClassifyFrame(f) {
		case FrameUser:
			return i
		case FrameLibrary:
			if library < 0 {
				library = i
			}
		}
		if lined < 0 && f.Line > 0 {
			lined = i
		}
	}
	switch {
	case library >= 0:
		return library
	case lined >= 0:
		return lined
	}
	return 0
}

// CollapseStack is frames cut at the call site: the site frame, then its
// callers that are user or library frames, innermost first. A stack with
// no user or library frame collapses to its site frame alone.
func CollapseStack(frames []snapshot.Frame) []snapshot.Frame {
	if len(frames) == 0 {
		return nil
	}
	i := SiteIndex(frames)
	keep := func(f snapshot.Frame) bool { k := ClassifyFrame(f); return k == FrameUser || k == FrameLibrary }
	n := 1
	for _, f := range frames[i+1:] {
		if keep(f) {
			n++
		}
	}
	out := make([]snapshot.Frame, 1, n) // sized once: stacks run to 100 frames and more
	out[0] = frames[i]
	for _, f := range frames[i+1:] {
		if keep(f) {
			out = append(out, f)
		}
	}
	return out
}

// NoStack names the site of an allocation whose stack was not recorded
// (the snapshot was taken without context, or the block predates it).
const NoStack = "(no stack recorded)"

// FrameString is a frame as the reports print it: "file.py:123 function".
// The string is the file's own; printers pass it through untrusted.Printable.
func FrameString(f snapshot.Frame) string {
	return fmt.Sprintf("%s:%d %s", f.Filename, f.Line, f.Name)
}

// siteOf names an allocation's call site (SiteIndex), or NoStack.
func siteOf(frames []snapshot.Frame) string {
	if len(frames) == 0 {
		return NoStack
	}
	return FrameString(frames[SiteIndex(frames)])
}

// siteNames memoizes siteOf per stack (stackTable).
type siteNames struct{ t *stackTable[string] }

func newSiteNames() siteNames { return siteNames{newStackTable(siteOf)} }

func (n siteNames) of(frames []snapshot.Frame) string {
	if len(frames) == 0 {
		return NoStack
	}
	return n.t.get(frames)
}

// stackTable computes a value once per distinct stack. A frames list is
// found first by identity (its first element's address and length: the
// decoder hands out one []Frame for a list the pickle shares), then by
// content: PyTorch writes one frames list per captured traceback, that is
// per allocation, with its frame dicts shared, so two blocks allocated at
// one place hold equal lists that are not the same list (the shared
// kkaitlyn111 snapshot: 903 live blocks with stacks, 903 lists, 34
// distinct stacks), and a cache by identity alone computed every block's
// value anew.
type stackTable[V any] struct {
	compute func([]snapshot.Frame) V
	byList  map[stackID]V
	byHash  map[uint64][]stackRow[V]
	seed    maphash.Seed
}

type stackID struct {
	first *snapshot.Frame
	n     int
}

type stackRow[V any] struct {
	frames []snapshot.Frame
	v      V
}

func newStackTable[V any](compute func([]snapshot.Frame) V) *stackTable[V] {
	return &stackTable[V]{compute: compute, byList: map[stackID]V{}, byHash: map[uint64][]stackRow[V]{}, seed: maphash.MakeSeed()}
}

// get is compute(frames), computed once per stack; frames is not empty.
func (t *stackTable[V]) get(frames []snapshot.Frame) V {
	v, h, ok := t.find(frames)
	if !ok {
		v = t.compute(frames)
		t.put(frames, h, v)
	}
	return v
}

// find is the value stored for frames (not empty), if any, and the hash
// that put takes.
func (t *stackTable[V]) find(frames []snapshot.Frame) (v V, h uint64, ok bool) {
	id := stackID{&frames[0], len(frames)}
	if v, ok := t.byList[id]; ok {
		return v, 0, true
	}
	h = hashFrames(t.seed, frames)
	for _, r := range t.byHash[h] {
		if slices.Equal(r.frames, frames) {
			t.byList[id] = r.v
			return r.v, h, true
		}
	}
	return v, h, false
}

// put stores v for frames, which find did not find, h its hash.
func (t *stackTable[V]) put(frames []snapshot.Frame, h uint64, v V) {
	t.byHash[h] = append(t.byHash[h], stackRow[V]{frames, v})
	t.byList[stackID{&frames[0], len(frames)}] = v
}

// hashFrames hashes a stack's content (equal stacks, equal hashes).
// (maphash.Comparable per frame, combined, took 20% longer.)
func hashFrames(seed maphash.Seed, frames []snapshot.Frame) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var line [8]byte
	for _, f := range frames {
		h.WriteString(f.Filename)
		binary.LittleEndian.PutUint64(line[:], uint64(f.Line))
		h.Write(line[:])
		h.WriteString(f.Name)
		h.WriteByte(0)
	}
	return h.Sum64()
}
