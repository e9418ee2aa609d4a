package scenario

import (
	"strings"
	"testing"
)

// TestRunsFromFlags: --kv × --alloc by strategy.AllocsFor: vmm:P only on the
// allocators that grow by P (vmm:P itself when none is listed), every
// other strategy on every allocator, in flag order.
func TestRunsFromFlags(t *testing.T) {
	for _, tc := range []struct {
		kvs, allocs []string
		want        string
	}{
		{nil, nil, "paged:16 on caching"},
		{[]string{"contiguous-grow"}, nil, "contiguous-grow on caching"},
		// Without --alloc a vmm:P strategy runs on its own allocator.
		{[]string{"paged:16,vmm:2MiB"}, nil, "paged:16 on caching|vmm:2MiB on vmm:2MiB"},
		{[]string{"vmm:2MiB", "vmm:64KiB"}, []string{"caching,vmm:2MiB", "vmm", "vmm:64KiB"}, "vmm:2MiB on vmm:2MiB|vmm:2MiB on vmm|vmm:64KiB on vmm:64KiB"},
		// --alloc splits as registry.SplitList does: the caching allocator's
		// settings stay one spec (they were split into an allocator
		// "max_split_size_mb" before), and "all" is every allocator.
		{nil, []string{"caching:expandable_segments:True,max_split_size_mb:128,vmm:2MiB"},
			"paged:16 on caching:expandable_segments:True,max_split_size_mb:128|paged:16 on vmm:2MiB"},
		{[]string{"vmm:2MiB"}, []string{"all"}, "vmm:2MiB on vmm"},
		{[]string{"paged:16,vmm:2MiB,contiguous-max:pow2"}, []string{"caching,vmm:2MiB,sizeclass,arena,async"},
			"paged:16 on caching|paged:16 on vmm:2MiB|paged:16 on sizeclass|paged:16 on arena|paged:16 on async|" +
				"vmm:2MiB on vmm:2MiB|" +
				"contiguous-max:pow2 on caching|contiguous-max:pow2 on vmm:2MiB|contiguous-max:pow2 on sizeclass|contiguous-max:pow2 on arena|contiguous-max:pow2 on async"},
	} {
		runs, err := RunsFromFlags(tc.kvs, tc.allocs)
		if err != nil {
			t.Errorf("RunsFromFlags(%q, %q): %v", tc.kvs, tc.allocs, err)
			continue
		}
		var got []string
		for _, r := range runs {
			got = append(got, r.KV.String()+" on "+r.Alloc.String())
		}
		if strings.Join(got, "|") != tc.want {
			t.Errorf("RunsFromFlags(%q, %q) = %q, want %q", tc.kvs, tc.allocs, strings.Join(got, "|"), tc.want)
		}
	}
	if _, err := RunsFromFlags([]string{"paged:16,"}, nil); err == nil || !strings.Contains(err.Error(), "--kv: empty spec") {
		t.Errorf("empty kv spec: %v", err)
	}
	// An impossible pair is an error naming both flags, not a silent swap
	// to the strategy's own allocator (issue 18).
	for _, tc := range [][2][]string{
		{{"vmm:2MiB"}, {"caching"}},
		{{"paged:16,vmm:2MiB"}, {"caching"}},
		{{"vmm:64KiB"}, {"caching,vmm:2MiB"}},
	} {
		_, err := RunsFromFlags(tc[0], tc[1])
		if err == nil || !strings.Contains(err.Error(), "--kv vmm:") || !strings.Contains(err.Error(), "--alloc "+tc[1][0]) ||
			!strings.Contains(err.Error(), "add --alloc vmm:") {
			t.Errorf("RunsFromFlags(%q, %q): %v, want an error naming both flags", tc[0], tc[1], err)
		}
	}
	// Unknown specs are errors with the near names.
	if _, err := RunsFromFlags([]string{"pagd:16"}, nil); err == nil || !strings.Contains(err.Error(), `did you mean "paged"?`) {
		t.Errorf("pagd:16: %v", err)
	}
	if _, err := RunsFromFlags(nil, []string{"cachin"}); err == nil || !strings.Contains(err.Error(), `did you mean "caching"?`) {
		t.Errorf("cachin: %v", err)
	}
	if _, err := RunsFromFlags(nil, []string{" , "}); err == nil || !strings.Contains(err.Error(), `--alloc " , ": bad allocator spec: empty allocator list`) {
		t.Errorf("empty allocator list: %v", err)
	}
	// A page no allocator maps: refused here, naming --kv (it panicked
	// once the default allocator was parsed in the plan).
	if _, err := RunsFromFlags([]string{"vmm:1000"}, nil); err == nil || !strings.Contains(err.Error(), `--kv vmm:1000: no allocator can run kv vmm:1000B: allocator "vmm:1000B"`) {
		t.Errorf("vmm:1000: %v", err)
	}
}
