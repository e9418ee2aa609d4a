package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpufrag/gpufrag/calib"
	"github.com/gpufrag/gpufrag/sim/scenario"
)

// calibrateSetup builds the scenario whose engine configuration calibrate
// replays the runs with: the setup flags, checked as simulate checks them,
// and what the files state (calib.StatedSetup) of the settings no flag
// gave; a flag that was given overrides the files, with a warning for
// each run that states otherwise. It returns the settings taken from the
// files and the warnings.
func calibrateSetup(cmd *cobra.Command, f *calibrateFlags, files ...[]*calib.File) (*scenario.Scenario, []calib.Stated, []string, error) {
	stated, warns, err := calib.StatedSetup(files...)
	if err != nil {
		return nil, nil, nil, err
	}
	fl := cmd.Flags()
	given := map[string]string{}
	for _, x := range engineFlagFields {
		if fl.Changed(x.flag) {
			// Checked by applyEngineFlags already: it parses.
			if v, ok, err := calib.CanonicalSetting(x.flag, fl.Lookup(x.flag).Value.String()); err == nil && ok {
				given[x.flag] = v
			}
		}
	}
	apply, over, err := calib.ResolveStated(stated, func(flag string) (string, bool) {
		v, ok := given[flag]
		return v, ok
	})
	if err != nil {
		return nil, nil, nil, err
	}
	warns = append(warns, over...)
	for _, st := range apply {
		if err := fl.Set(st.Flag, st.Value); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", st, err)
		}
	}
	s := &scenario.Scenario{Model: f.model, GPU: f.gpu}
	if err := applyEngineFlags(cmd, &f.engineFlags, s); err != nil {
		if len(apply) == 0 {
			return nil, nil, nil, err
		}
		// A value the files state that does not fit the flags' setup
		// (a tensor-parallel degree the model cannot take): the files'
		// error (exit 1), not a usage error.
		var said []string
		for _, st := range apply {
			said = append(said, st.String())
		}
		var ue *usageError
		if errors.As(err, &ue) {
			err = ue.err
		}
		return nil, nil, nil, fmt.Errorf("with the setup the files state (%s): %w", strings.Join(said, "; "), err)
	}
	return s, apply, warns, nil
}
