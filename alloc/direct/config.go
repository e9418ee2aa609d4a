// Direct allocator configuration.
// See package alloc for the overview.

package direct

import (
	"fmt"
	"strings"

	"github.com/gpufrag/gpufrag/alloc"
)

// Name is the allocator's name in specs ("direct").
const Name = "direct"

// Pool is the pool name of every segment: there is only one kind of memory.
const Pool = "direct"

// Config is the direct allocator's configuration. It has no settings: a raw
// device allocation per request leaves nothing to tune. The type exists so
// every allocator package has the same shape (ParseConfig, New, FromSpec).
type Config struct{}

// ParseConfig parses the spec arguments after "direct:". Only the empty
// string is accepted.
func ParseConfig(args string) (Config, error) {
	if s := strings.TrimSpace(args); s != "" {
		return Config{}, fmt.Errorf("%w: direct takes no arguments, got %q (want the bare spec \"direct\")", alloc.ErrBadSpec, s)
	}
	return Config{}, nil
}

// String returns the canonical arguments: always empty.
func (Config) String() string { return "" }
