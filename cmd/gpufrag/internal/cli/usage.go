package cli

import (
	"errors"
	"fmt"
	"github.com/gpufrag/gpufrag/internal/human"
	"math"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/internal/untrusted"
	"github.com/gpufrag/gpufrag/mem"
	"github.com/gpufrag/gpufrag/model"
	"github.com/gpufrag/gpufrag/sim"
)

// checkInputs opens every named input file once, so that one that cannot be
// read fails before any work with the flag that names it ("--trace
// sharegpt.csv: open sharegpt.csv: no such file or directory", "--trace
// examples: is a directory, not a file"). A missing or unreadable file is a
// failed run (status 1), not a usage error: the command line is well
// formed. "" (not given) and "-" (standard input) are skipped.
func checkInputs(inputs ...fileFlag) error {
	for _, in := range inputs {
		if in.path == "" || in.path == "-" {
			continue
		}
		fh, err := os.Open(in.path)
		if err != nil {
			return fmt.Errorf("%s %s: %w", in.flag, in.path, err)
		}
		st, err := fh.Stat()
		fh.Close()
		if err == nil && st.IsDir() {
			return fmt.Errorf("%s %s: is a directory, not a file", in.flag, in.path)
		}
	}
	return nil
}

// checkNotDir refuses a file argument that is a directory, naming what
// kind of file was wanted ("examples: is a directory, not an op trace
// file"), as analyze's snapshot reader and checkInputs do, rather than the
// read error it would meet ("read examples: is a directory"). "-" (standard
// input) and a path that cannot be stat'ed pass: opening it says why.
func checkNotDir(path, what string) error {
	if path == "-" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s: is a directory, not %s", path, what)
	}
	return nil
}

// inFlagFile names the flag of an error about the file at path that flag
// gave, whose message starts with the file's name (a reader's
// file:line:field error): "--trace bad.csv: line 1: ...". Any other error
// is returned as it is. errors.Is and As still see err.
func inFlagFile(flag, path string, err error) error {
	if err == nil || path == "" || path == "-" || !strings.HasPrefix(err.Error(), untrusted.Printable(path)+":") {
		return err
	}
	return fmt.Errorf("%s %w", flag, err)
}

// maxRate bounds an arrival rate flag, in requests per second: at 10^6
// requests arrive a microsecond apart, which no engine step (milliseconds)
// tells from all at once, so a larger rate changes nothing but is most
// likely a slip (1e9 for 1e1), and past 10^9 the gaps round to zero
// nanoseconds. The lower bound depends on the workload (the arrivals a
// rate draws must fit the simulated clock, workload.MinRate): Build
// refuses a rate below it, naming the field that --rate sets, which
// simulate then says of the flag (flagFieldError).
const maxRate = 1e6

// checkRate checks a rate flag: positive, finite and at most maxRate, as
// a usage error that says why.
func checkRate(cmd *cobra.Command, flag string, rate float64) error {
	switch {
	case !(rate > 0) || math.IsInf(rate, 0):
		return usageErrorf(cmd, "%s %v: want a positive number of requests per second", flag, rate)
	case rate > maxRate:
		return usageErrorf(cmd, "%s %v: above %v requests per second, whose arrivals are already a microsecond apart: "+
			"no engine step (milliseconds) tells them from all at once; for every request at once, give %v", flag, rate, maxRate, maxRate)
	}
	return nil
}

// looksLikePath reports whether a --model value names a file rather than a
// preset: it has a path separator or a .json suffix.
func looksLikePath(ref string) bool {
	return strings.ContainsAny(ref, `/\`) || strings.HasSuffix(strings.ToLower(ref), ".json")
}

// checkModelFlag checks a --model value (flag names it in messages): a
// preset, or a readable config.json. A name that is neither and does not
// look like a path is a usage error with the near presets; a path that
// cannot be read or parsed fails the run (status 1) naming the flag.
func checkModelFlag(cmd *cobra.Command, flag, ref string) (model.Model, error) {
	m, err := model.Load(ref)
	if err == nil {
		return m, nil
	}
	if !errors.Is(err, model.ErrUnknownModel) {
		return m, fmt.Errorf("%s %s: %w", flag, ref, err)
	}
	if _, statErr := os.Stat(ref); looksLikePath(ref) || statErr == nil {
		if ferr := checkInputs(fileFlag{flag, ref}); ferr != nil {
			return m, ferr
		}
		return m, fmt.Errorf("%s: %w", flag, err)
	}
	return m, usageErrorf(cmd, "%s %q: neither a model preset (%s) nor a file%s", flag, ref,
		strings.Join(model.PresetNames(), ", "), human.DidYouMean(ref, model.PresetNames()))
}

// checkGPUFlag looks a --gpu value up, as a usage error with the near
// names when it is unknown.
func checkGPUFlag(cmd *cobra.Command, flag, name string) (model.GPU, error) {
	g, err := model.LookupGPU(name)
	if err != nil {
		return g, usageErrorf(cmd, "%s: %v%s", flag, err, human.DidYouMean(name, model.GPUNames()))
	}
	return g, nil
}

// checkEngineVersion checks --engine-version against the engine named (""
// for the one the command defaults to: a release either vLLM or SGLang
// knows is accepted then) and returns it in sim's canonical form, or a
// usage error that names the known releases and the nearest one.
func checkEngineVersion(cmd *cobra.Command, engine, version string) (string, error) {
	kinds := []sim.EngineKind{sim.EngineVLLMV1, sim.EngineVLLMV0, sim.EngineSGLang}
	if engine != "" {
		k, err := sim.ParseEngine(engine)
		if err != nil {
			return "", usageErrorf(cmd, "--engine %q: want one of %s%s", engine, strings.Join(sim.EngineNames(), ", "), human.DidYouMean(engine, sim.EngineNames()))
		}
		kinds = []sim.EngineKind{k}
	}
	var first error
	for _, k := range kinds {
		v, err := sim.ParseEngineVersion(k, version)
		if err == nil {
			return v.String(), nil
		}
		if first == nil {
			first = err
		}
	}
	return "", usageErrorf(cmd, "--engine-version: %s", strings.TrimPrefix(first.Error(), sim.ErrBadConfig.Error()+": "))
}

// checkCapacity checks a --capacity (analyze, diff, exporter): not given
// (0), or a device size that mem accepts. A --capacity 0 given is refused:
// it read as not given, silently.
func checkCapacity(cmd *cobra.Command, c mem.Bytes) error {
	if c < 0 {
		return usageErrorf(cmd, "--capacity %s: must not be negative", c)
	}
	if c == 0 && cmd.Flags().Changed("capacity") {
		return usageErrorf(cmd, "--capacity 0: a device of 0 bytes holds nothing; give its memory, such as 80GiB, or leave --capacity out")
	}
	if c == 0 {
		return nil
	}
	if _, err := mem.NewDevice(int64(c), 0); err != nil {
		return usageErrorf(cmd, "--capacity %s: %v", c, err)
	}
	return nil
}
