package scenario

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/internal/human"
	"github.com/gpufrag/gpufrag/kv/strategy"
)

// RunsFromFlags crosses the values of simulate's --kv and --alloc flags
// (defaults paged:16 and caching) by PairRuns: a strategy runs on every listed
// allocator it can run on. A vmm:P strategy runs on vmm:P when --alloc is
// not given; when it is and lists no allocator the strategy can run on, the
// pair is impossible and an error names both flags (running it on vmm:P
// anyway would be a silent swap). --alloc values are split as
// registry.SplitList does, so that the caching allocator's comma-separated
// settings stay one spec. Every spec is parsed here, so that an unknown one
// is a usage error with the near names.
func RunsFromFlags(kvFlags, allocFlags []string) ([]Run, error) {
	kvTexts, err := splitSpecs(kvFlags, "paged:16")
	if err != nil {
		return nil, fmt.Errorf("--kv: %w", err)
	}
	kvs := make([]strategy.Spec, len(kvTexts))
	for i, kv := range kvTexts {
		if kvs[i], err = strategy.ParseSpec(kv); err != nil {
			return nil, fmt.Errorf("--kv %s: %w%s", kv, err, human.DidYouMean(human.SpecKind(kv), human.SpecKinds(strategy.Names())))
		}
	}
	allocTexts := []string{"caching"}
	if len(allocFlags) > 0 {
		allocTexts = nil
		for _, v := range allocFlags {
			as, err := registry.SplitList(v)
			if err != nil {
				return nil, fmt.Errorf("--alloc %q: %w", v, err)
			}
			allocTexts = append(allocTexts, as...)
		}
	}
	allocs := make([]registry.Spec, len(allocTexts))
	for i, a := range allocTexts {
		if allocs[i], err = registry.Parse(a); err != nil {
			return nil, fmt.Errorf("--alloc %s: %w%s", a, err, human.DidYouMean(human.SpecKind(a), registry.Names()))
		}
	}
	runs, err := PairRuns(kvs, allocs, len(allocFlags) > 0)
	var pe *PairError
	var many *TooManyRunsError
	switch {
	case errors.As(err, &pe) && pe.Explicit:
		return nil, fmt.Errorf("--kv %s and --alloc %s cannot run together: %w; add --alloc %s",
			kvTexts[pe.Index], strings.Join(allocTexts, ","), pe.Err, pe.KV.DefaultAlloc())
	case errors.As(err, &pe):
		return nil, fmt.Errorf("--kv %s: %w", kvTexts[pe.Index], pe.Err)
	case errors.As(err, &many):
		return nil, fmt.Errorf("--kv and --alloc give %w", err)
	case err != nil:
		return nil, err
	}
	return runs, nil
}

// splitSpecs splits flag values at commas into specs, def when none is
// given; an empty spec is an error.
func splitSpecs(values []string, def string) ([]string, error) {
	if len(values) == 0 {
		return []string{def}, nil
	}
	var out []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				return nil, fmt.Errorf("empty spec in %q", v)
			}
			out = append(out, s)
		}
	}
	return out, nil
}
