package analysis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/snapshot"
)

// ProfileValues are the sample types of Profile, in this order, and the
// values WriteFolded accepts: blocks counts live blocks, the others are
// bytes (SiteStat's Allocated, Stranded and Rounding).
var ProfileValues = []string{"blocks", "allocated", "stranded", "rounding"}

// DefaultProfileValue is the sample type viewers show first.
const DefaultProfileValue = "allocated"

// ErrProfileValue: WriteFolded was asked for a value not in ProfileValues.
var ErrProfileValue = errors.New("analysis: unknown profile value")

func stackValues(s SiteStat) []int64 {
	return []int64{int64(s.Blocks), s.Allocated, s.Stranded, s.Rounding}
}

// profileFrames is a stack as a profile draws it, innermost first: the
// stack's frames (NoStack a frame of its own), and, when the report has
// several devices, a root frame naming the device, so that a flame graph
// keeps the devices apart.
func profileFrames(s SiteStat, device int, devices int) []snapshot.Frame {
	frames := s.Stack
	if len(frames) == 0 {
		frames = []snapshot.Frame{{Name: NoStack}}
	}
	if devices > 1 {
		frames = append(append([]snapshot.Frame(nil), frames...), snapshot.Frame{Name: fmt.Sprintf("cuda:%d", device)})
	}
	return frames
}

// Profile is the attribution of every device of r as a pprof profile
// (profile.proto, github.com/google/pprof/profile): one sample per stack
// and device, with the values of ProfileValues and a label "device" (cuda:N; a numeric label of 0 would not
// survive the encoding), so
// that `go tool pprof -http=: FILE` draws a flame graph of the memory by
// stack (pick the value with -sample_index=stranded), and `go tool pprof
// -diff_base=A B` compares two snapshots' profiles. Names from the file go
// through untrusted.Printable, as in every other output a terminal may show.
func (r *Report) Profile() *profile.Profile {
	p := &profile.Profile{DefaultSampleType: DefaultProfileValue,
		Comments: []string{"gpufrag analyze: live GPU memory by allocation stack"}}
	for _, v := range ProfileValues {
		unit := "bytes"
		if v == "blocks" {
			unit = "count"
		}
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: v, Unit: unit})
	}
	funcs := map[[2]string]*profile.Function{}
	locs := map[snapshot.Frame]*profile.Location{}
	location := func(f snapshot.Frame) *profile.Location {
		if l := locs[f]; l != nil {
			return l
		}
		name, file := pprofName(f.Name), untrusted.Printable(f.Filename)
		fn := funcs[[2]string{name, file}]
		if fn == nil {
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: file}
			funcs[[2]string{name, file}] = fn
			p.Function = append(p.Function, fn)
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn, Line: f.Line}}}
		locs[f] = l
		p.Location = append(p.Location, l)
		return l
	}
	for _, d := range r.Devices {
		if d.Attribution == nil {
			continue
		}
		for _, s := range d.Attribution.Stacks {
			smp := &profile.Sample{Value: stackValues(s), Label: map[string][]string{"device": {fmt.Sprintf("cuda:%d", d.Device)}}}
			for _, f := range profileFrames(s, d.Device, len(r.Devices)) {
				smp.Location = append(smp.Location, location(f))
			}
			p.Sample = append(p.Sample, smp)
		}
	}
	return p
}

// pprofName is a function name as the profile stores it: through
// untrusted.Printable, and with a name that is all in angle brackets (Python's
// "<module>", "<lambda>", "<listcomp>") written in square ones, because
// pprof's display drops what it takes for C++ template arguments and would
// show "<unknown>".
func pprofName(name string) string {
	name = untrusted.Printable(name)
	if len(name) > 2 && name[0] == '<' && name[len(name)-1] == '>' {
		name = "[" + name[1:len(name)-1] + "]"
	}
	return name
}

// WriteProfile writes r.Profile(), gzipped as pprof writes its own.
func (r *Report) WriteProfile(w io.Writer) error {
	p := r.Profile()
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("analysis: profile: %w", err)
	}
	return p.Write(w)
}

// WriteFolded writes the attribution as folded stacks, the input of
// flamegraph.pl and speedscope: one line per stack and device, its frames
// from the outermost to the call site separated by ";", a space and the
// value (one of ProfileValues); stacks whose value is 0 are left out. A
// frame prints as "function (file:line)", through untrusted.Printable, with ";"
// written as ":" so that it cannot split a frame.
func (r *Report) WriteFolded(w io.Writer, value string) error {
	k := -1
	for i, v := range ProfileValues {
		if v == value {
			k = i
		}
	}
	if k < 0 {
		return fmt.Errorf("%w %s (want one of %s)", ErrProfileValue, untrusted.Quote(value), strings.Join(ProfileValues, ", "))
	}
	bw := bufio.NewWriter(w)
	for _, d := range r.Devices {
		if d.Attribution == nil {
			continue
		}
		for _, s := range d.Attribution.Stacks {
			n := stackValues(s)[k]
			if n == 0 {
				continue
			}
			frames := profileFrames(s, d.Device, len(r.Devices))
			for i := len(frames) - 1; i >= 0; i-- {
				bw.WriteString(foldedFrame(frames[i]))
				if i > 0 {
					bw.WriteByte(';')
				}
			}
			fmt.Fprintf(bw, " %d\n", n)
		}
	}
	return bw.Flush()
}

func foldedFrame(f snapshot.Frame) string {
	s := untrusted.Printable(f.Name)
	if f.Filename != "" {
		s += fmt.Sprintf(" (%s:%d)", untrusted.Printable(f.Filename), f.Line)
	}
	return strings.ReplaceAll(s, ";", ":")
}
