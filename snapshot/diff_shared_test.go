package snapshot_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/gpufrag/gpufrag/snapshot"
	"github.com/gpufrag/gpufrag/snapshot/analysis"
)

// TestAttributionShared: on every real snapshot the attribution adds up to
// the memory classes exactly, and the pprof profile parses back with the
// same totals.
func TestAttributionShared(t *testing.T) {
	for file := range sharedSnapshots(t) {
		t.Run(file, func(t *testing.T) {
			s := readShared(t, file)
			r, err := analysis.Analyze(s, analysis.Options{NoReplay: true})
			if err != nil {
				t.Fatal(err)
			}
			var want [4]int64
			for _, d := range r.Devices {
				a, c := d.Attribution, d.Classes
				if a.Total.Allocated != c.Active || a.Total.Stranded != c.Stranded || a.Total.Rounding != c.InternalWaste {
					t.Errorf("device %d: attribution %+v, classes %+v", d.Device, a.Total, c)
				}
				want[0] += int64(a.Total.Blocks)
				want[1] += c.Active
				want[2] += c.Stranded
				want[3] += c.InternalWaste
			}
			var buf bytes.Buffer
			if err := r.WriteProfile(&buf); err != nil {
				t.Fatal(err)
			}
			p, err := profile.Parse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			var got [4]int64
			for _, smp := range p.Sample {
				for i, v := range smp.Value {
					got[i] += v
				}
			}
			if got != want {
				t.Errorf("profile totals %v, want %v", got, want)
			}
		})
	}
}

// TestDiffShared: every real snapshot against itself differs in nothing;
// against itself plus one segment at a free address whose live block
// carries the stack of one of the file's own blocks (and 2 MiB free
// beside it), the diff reports exactly that segment and that one site,
// with the block's bytes allocated and the 2 MiB stranded; against the
// same file as another rank's (another device number), every segment is
// kept.
func TestDiffShared(t *testing.T) {
	for file := range sharedSnapshots(t) {
		t.Run(file, func(t *testing.T) {
			a := readShared(t, file)
			ra := analyzeNoReplay(t, a)
			if len(ra.Devices) == 0 {
				t.Skip("no device")
			}
			self := analysis.DiffReports(ra, ra, analysis.DiffOptions{})
			for _, dd := range self.Devices {
				if dd.AppearedCount+dd.VanishedCount+dd.SitesChanged+len(dd.Sizes) != 0 || dd.Kept != dd.A.Segments {
					t.Errorf("self diff of device %d: %+v", dd.A.Device, dd)
				}
			}

			// B: A plus one segment, on A's first device, above every segment.
			var model *snapshot.Block
			var top uint64
			dev := ra.Devices[0].Device
			for i, seg := range a.Segments {
				top = max(top, seg.End())
				for j, blk := range seg.Blocks {
					if model == nil && seg.Device == dev && blk.State == snapshot.StateAllocated {
						model = &a.Segments[i].Blocks[j]
					}
				}
			}
			if model == nil {
				t.Skip("no allocated block")
			}
			const free = 2 << 20
			addr := (top + 4<<20) &^ (2<<20 - 1)
			live := snapshot.Block{Address: addr, Size: model.Size, RequestedSize: model.RequestedSize,
				State: snapshot.StateAllocated, Frames: model.Frames}
			b := *a
			b.Segments = append(append([]snapshot.Segment(nil), a.Segments...), snapshot.Segment{Device: dev, Address: addr,
				TotalSize: model.Size + free, AllocatedSize: model.Size, ActiveSize: model.Size, RequestedSize: model.RequestedSize,
				SegmentType: "large", Blocks: []snapshot.Block{live,
					{Address: addr + uint64(model.Size), Size: free, State: snapshot.StateInactive}}})
			rb := analyzeNoReplay(t, &b)
			dd := analysis.DiffReports(ra, rb, analysis.DiffOptions{}).Devices[0]
			if dd.Kept != ra.Devices[0].Segments || dd.AppearedCount != 1 || dd.VanishedCount != 0 ||
				dd.Appeared[0].Address != addr || dd.Appeared[0].Live != model.Size {
				t.Errorf("segments: kept %d of %d, appeared %+v, vanished %d", dd.Kept, ra.Devices[0].Segments, dd.Appeared, dd.VanishedCount)
			}
			if dd.SitesChanged != 1 {
				t.Fatalf("%d sites moved, want 1: %+v", dd.SitesChanged, dd.Sites)
			}
			s := dd.Sites[0]
			if s.B.Allocated-s.A.Allocated != model.Size || s.B.Stranded-s.A.Stranded != free || s.B.Blocks-s.A.Blocks != 1 {
				t.Errorf("site %q moved by %d allocated, %d stranded, %d blocks; want %d, %d, 1", s.Site,
					s.B.Allocated-s.A.Allocated, s.B.Stranded-s.A.Stranded, s.B.Blocks-s.A.Blocks, model.Size, free)
			}

			// Another rank: the same segments on another device.
			if len(ra.Devices) == 1 {
				c := *a
				c.Segments = append([]snapshot.Segment(nil), a.Segments...)
				for i := range c.Segments {
					c.Segments[i].Device = 7
				}
				c.DeviceTraces = nil
				rc := analyzeNoReplay(t, &c)
				dd := analysis.DiffReports(ra, rc, analysis.DiffOptions{}).Devices
				if len(dd) != 1 || dd[0].B.Device != 7 || dd[0].Kept != ra.Devices[0].Segments || dd[0].SitesChanged != 0 {
					t.Errorf("as another rank: %+v", dd)
				}
			}
		})
	}
}

func readShared(t *testing.T, file string) *snapshot.Snapshot {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sharedDir, file))
	if err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.ReadBytes(data, file)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func analyzeNoReplay(t *testing.T, s *snapshot.Snapshot) *analysis.Report {
	t.Helper()
	r, err := analysis.Analyze(s, analysis.Options{NoReplay: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
