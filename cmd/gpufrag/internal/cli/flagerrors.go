package cli

import (
	"errors"
	"fmt"
	"github.com/gpufrag/gpufrag/internal/human"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpufrag/gpufrag/internal/untrusted"
)

// flagError is the root's FlagErrorFunc, so every command reports a flag
// that does not parse alike, as a usage error (exit 2):
//
//   - an unknown flag gets the command's near flag names, as an unknown
//     value gets near values (didYouMean): "unknown flag: --gpus; did you
//     mean --gpu?"; a long name given with one dash ("-gpu", which pflag
//     reads as shorthands) gets its two-dash form;
//   - a value that does not parse names the flag and the value first, as
//     the commands' own checks do ("--rate "x": want a number"), without
//     pflag's "invalid argument ... for ... flag" nor strconv's or time's
//     package prefix.
func flagError(cmd *cobra.Command, err error) error {
	var notExist *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	switch {
	case errors.As(err, &notExist):
		if hint := flagHint(cmd, notExist); hint != "" {
			err = fmt.Errorf("%w%s", err, hint)
		}
	case errors.As(err, &invalid):
		err = invalidFlagValue(invalid)
	}
	return &usageError{cmd, err}
}

// flagHint is "; did you mean --gpu?" for an unknown flag near one of cmd's
// (its own, inherited and --help), or "" when none is near.
func flagHint(cmd *cobra.Command, e *pflag.NotExistError) string {
	names := []string{"help"}
	seen := map[string]bool{"help": true}
	add := func(f *pflag.Flag) {
		if !seen[f.Name] && !f.Hidden {
			seen[f.Name] = true
			names = append(names, f.Name)
		}
	}
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	name := e.GetSpecifiedName()
	if short := e.GetSpecifiedShortnames(); short != "" {
		// "-gpu h100": pflag read the shorthands g, p, u. A long name
		// given with one dash is a common slip; nothing else is hinted.
		long, _, _ := strings.Cut(short, "=")
		for _, n := range names {
			if n == long {
				return "; did you mean --" + n + "?"
			}
		}
		return ""
	}
	near := human.NearNames(name, names)
	if len(near) == 0 {
		return ""
	}
	for i, n := range near {
		near[i] = "--" + n
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}

// invalidFlagValue rewrites pflag's error for a value that does not parse
// into the commands' form: the flag, the value, what is wanted.
func invalidFlagValue(e *pflag.InvalidValueError) error {
	f, value := e.GetFlag(), e.GetValue()
	cause := e.Unwrap()
	var num *strconv.NumError
	switch {
	case errors.As(cause, &num) && errors.Is(num.Err, strconv.ErrRange):
		cause = fmt.Errorf("out of range for %s", wantOfType(f.Value.Type()))
	case errors.As(cause, &num) || f.Value.Type() == "duration":
		cause = fmt.Errorf("want %s", wantOfType(f.Value.Type()))
	}
	return fmt.Errorf("--%s %s: %w", f.Name, untrusted.Quote(value), cause)
}

// wantOfType says what a flag of pflag type typ takes.
func wantOfType(typ string) string {
	switch typ {
	case "bool":
		return "true or false"
	case "duration":
		return "a duration such as 90s, 30m or 2h"
	case "float64", "float32", "float64Slice", "float32Slice":
		return "a number such as 4 or 0.5"
	case "uint", "uint8", "uint16", "uint32", "uint64", "uintSlice":
		return "a whole number, 0 or more"
	case "int", "int8", "int16", "int32", "int64", "intSlice", "int32Slice", "int64Slice", "count":
		return "a whole number"
	}
	return "a value of type " + typ
}
