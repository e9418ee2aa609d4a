package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Whole-process profiles, as Go's own tools offer them (go test
// -cpuprofile): --cpuprofile and --memprofile are persistent flags of the
// root, so every command takes them, the long ones (simulate, analyze,
// advise, calibrate, experiments, cluster simulate, replay) and any that
// becomes long later, with one place that starts and stops them. The CPU
// profile runs from the moment the flags are parsed (the root's
// PersistentPreRunE) to the command's return; the heap profile is written
// when the command returns, after a garbage collection, so its inuse
// values are what the command still held and its alloc values everything
// it allocated. Main writes both, whether the command succeeded or not.
const (
	flagCPUProfile = "cpuprofile"
	flagMemProfile = "memprofile"
)

func addProfileFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	pf.String(flagCPUProfile, "", "write a CPU profile of the whole command to `FILE` (go tool pprof FILE)")
	pf.String(flagMemProfile, "", "write a heap profile to `FILE` when the command ends, after a garbage collection")
}

// isProfileFlag: no command's flag rules count these (flagrules.go), as
// they profile whatever the command does.
func isProfileFlag(name string) bool { return name == flagCPUProfile || name == flagMemProfile }

// profiling is the profiles a command line asked for, between start and
// stop.
type profiling struct {
	cpu     *os.File // nil: no CPU profile running
	memPath string
}

// startProfiles checks the profile files as every output is checked
// (checkOutputs: not over an input, not over each other, in a directory
// that exists) and starts the CPU profile. The inputs are every argument and
// every other flag's value that the command line set: the profiles are
// written by the root for any command, so they are compared with all it
// names rather than with each command's own list of inputs, before either
// file is created.
func startProfiles(cmd *cobra.Command, args []string) (*profiling, error) {
	fl := cmd.Flags()
	cpuPath, _ := fl.GetString(flagCPUProfile)
	memPath, _ := fl.GetString(flagMemProfile)
	if cpuPath == "" && memPath == "" {
		return nil, nil
	}
	var inputs []fileFlag
	for _, a := range args {
		inputs = append(inputs, fileFlag{"the arguments", a})
	}
	fl.Visit(func(f *pflag.Flag) {
		if isProfileFlag(f.Name) {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				inputs = append(inputs, fileFlag{"--" + f.Name, v})
			}
			return
		}
		inputs = append(inputs, fileFlag{"--" + f.Name, f.Value.String()})
	})
	outputs := []fileFlag{{"--" + flagCPUProfile, cpuPath}, {"--" + flagMemProfile, memPath}}
	if err := checkOutputs(cmd, outputs, inputs); err != nil {
		return nil, err
	}
	p := &profiling{memPath: memPath}
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flagCPUProfile, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("--%s %s: %w", flagCPUProfile, cpuPath, err)
		}
		p.cpu = f
	}
	return p, nil
}

// stop ends the CPU profile and writes the heap profile; nil (no profile
// asked for) does nothing.
func (p *profiling) stop() error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flagCPUProfile, err))
		}
	}
	if p.memPath != "" {
		runtime.GC() // the heap as it is, not as of the last collection
		f, err := os.Create(p.memPath)
		if err == nil {
			err = pprof.Lookup("heap").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flagMemProfile, err))
		}
	}
	return errors.Join(errs...)
}
