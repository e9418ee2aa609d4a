package lint

import (
	"strconv"
	"strings"
)

// modulePath is the module's import path (go.mod).
const modulePath = "github.com/gpufrag/gpufrag"

// allocClients are the packages that use allocators without knowing which:
// they build one with alloc/registry and use it through alloc.Allocator and the
// optional capabilities of package alloc (Relocator, Stamper, TripRecorder,
// Grower, ...). Their subpackages and their tests are held to the same rule,
// so that someone editing an allocator sees every dependency on it in
// package alloc: a test of these packages compares through the same
// interfaces, and a test of an allocator's internals belongs with the
// allocator.
var allocClients = []string{"sim", "kv/strategy", "advise", "experiments"}

// allocAllowed are the alloc packages an allocClient may import.
var allocAllowed = map[string]bool{modulePath + "/alloc": true, modulePath + "/alloc/registry": true}

// allocImplRule: allocClients import no allocator implementation.
var allocImplRule = rule{
	name:    "layering/alloc-impl",
	applies: func(path string, test bool) bool { return under(path, allocClients) },
	check:   checkAllocImports,
	cases: []snippet{
		{"sim/engine.go", `package sim
import (
	"github.com/gpufrag/gpufrag/alloc"
	"github.com/gpufrag/gpufrag/alloc/caching" // want
	ca "github.com/gpufrag/gpufrag/alloc/caching" // want
	"github.com/gpufrag/gpufrag/alloc/internal/slot" // want
	"github.com/gpufrag/gpufrag/alloc/registry"
	"github.com/gpufrag/gpufrag/allocx"
)
`},
		{"kv/strategy/vmm_test.go", `package strategy
import _ "github.com/gpufrag/gpufrag/alloc/vmm" // want
`},
		{"sim/scenario/build.go", `package scenario
import "github.com/gpufrag/gpufrag/alloc/arena" // want
`},
		{"advise/space.go", `package advise
import "github.com/gpufrag/gpufrag/alloc/async" // want
`},
		{"experiments/run.go", `package experiments
import (
	"github.com/gpufrag/gpufrag/alloc/sizeclass" // want
	"github.com/gpufrag/gpufrag/alloc/direct" // want
)
`},
		// The registry, other layers and look-alike paths may.
		{"alloc/registry/spec.go", `package registry
import "github.com/gpufrag/gpufrag/alloc/caching"
`},
		{"defrag/apply.go", `package defrag
import "github.com/gpufrag/gpufrag/alloc/caching"
`},
		{"simulator/x.go", `package simulator
import "github.com/gpufrag/gpufrag/alloc/vmm"
`},
		{"kv/blockpool/pool.go", `package blockpool
import "github.com/gpufrag/gpufrag/alloc"
`},
	},
}

func checkAllocImports(f *file) []finding {
	var out []finding
	for _, s := range f.ast.Imports {
		p, err := strconv.Unquote(s.Path.Value)
		if err != nil || !strings.HasPrefix(p, modulePath+"/alloc/") || allocAllowed[p] {
			continue
		}
		out = append(out, finding{f.fset.Position(s.Pos()),
			"import of " + strings.TrimPrefix(p, modulePath+"/") + ": " + strings.Join(allocClients, ", ") +
				" use allocators through package alloc (its optional interfaces: Stamper, TripRecorder, Grower, ...) and alloc/registry only"})
	}
	return out
}
