package snapshot_test

import "github.com/gpufrag/gpufrag/internal/snaptest"

// Short names for the test pickle writer (package snaptest): od is an
// ordered dict, tup a tuple; values are od, []any, tup, *snaptest.Shared,
// string, int, int64, uint64, float64, bool and nil.
type (
	kv  = snaptest.KV
	od  = snaptest.Dict
	tup = snaptest.Tuple
)

func encode(v any) []byte { return snaptest.Encode(v) }
