// Package spec turns allocator specs such as "caching",
// "caching:expandable_segments:True,max_split_size_mb:128",
// "sizeclass:8MiB/64MiB/512MiB" or "vmm:2MiB" into allocators. A spec is
// NAME[:ARGS]; ARGS belong to the named allocator package (each has
// ParseConfig and New). It is the only package that knows every allocator.
package spec

import (
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/arena"
	"github.com/gpufrag/gpufrag/alloc/async"
	"github.com/gpufrag/gpufrag/alloc/caching"
	"github.com/gpufrag/gpufrag/alloc/direct"
	"github.com/gpufrag/gpufrag/alloc/sizeclass"
	"github.com/gpufrag/gpufrag/alloc/vmm"
	"github.com/gpufrag/gpufrag/mem"
)

// Kind describes one allocator for help texts.
type Kind struct {
	Name    string
	Summary string
	Example string // a spec with arguments
	New     func(dev *mem.Device, args string) (alloc.Allocator, error)
}

// Kinds lists every allocator in a fixed order.
var Kinds = []Kind{
	{"caching", "PyTorch's CUDA caching allocator; args in PYTORCH_CUDA_ALLOC_CONF syntax",
		"caching:expandable_segments:True,max_split_size_mb:128", caching.FromSpec},
	{"sizeclass", "pools per size class, larger requests served directly",
		"sizeclass:8MiB/64MiB/512MiB", sizeclass.FromSpec},
	{"arena", "one pre-reserved pool (fraction of free memory or a size), best fit with coalescing",
		"arena:0.9", arena.FromSpec},
	{"async", "stream-ordered pool in the manner of cudaMallocAsync, with a release threshold",
		"async:release_threshold:1GiB", async.FromSpec},
	{"direct", "one raw device allocation per request (the baseline)",
		"direct", direct.FromSpec},
	{"vmm", "virtually contiguous ranges backed by physical pages mapped on demand",
		"vmm:2MiB", vmm.FromSpec},
}

// Names returns the allocator names in order.
func Names() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = k.Name
	}
	return out
}

func lookup(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// New builds the allocator named by s on dev.
func New(s string, dev *mem.Device) (alloc.Allocator, error) {
	s = strings.TrimSpace(s)
	name, args, _ := strings.Cut(s, ":")
	k, ok := lookup(strings.ToLower(strings.TrimSpace(name)))
	if !ok {
		return nil, fmt.Errorf("%w: unknown allocator %q (known: %s)", alloc.ErrBadSpec, name, strings.Join(Names(), ", "))
	}
	a, err := k.New(dev, args)
	if err != nil {
		return nil, fmt.Errorf("allocator %q: %w", s, err)
	}
	return a, nil
}

// SplitList splits a comma-separated list of specs. Because the caching
// allocator's own arguments are comma-separated, a piece that does not start
// with an allocator name continues the previous spec:
//
//	"caching:expandable_segments:True,max_split_size_mb:128,vmm:2MiB"
//	→ ["caching:expandable_segments:True,max_split_size_mb:128", "vmm:2MiB"]
//
// "all" expands to every allocator with default settings.
func SplitList(list string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		name, _, _ := strings.Cut(p, ":")
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "all" {
			out = append(out, Names()...)
			continue
		}
		// A piece continues the previous spec only if it looks like a
		// caching option (key:value) and does not name an allocator; a bare
		// unknown word starts a spec of its own, so the error names it.
		if _, ok := lookup(name); ok || len(out) == 0 || !strings.Contains(p, ":") {
			out = append(out, p)
			continue
		}
		out[len(out)-1] += "," + p
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty allocator list", alloc.ErrBadSpec)
	}
	return out, nil
}
