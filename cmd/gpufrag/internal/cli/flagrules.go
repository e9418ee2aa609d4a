package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Flag rules say when a flag has no effect, so that a command line that
// sets it there is refused as a usage error (exit 2) instead of run
// without it: `simulate --print-scenario --trace t.csv` printed the
// default scenario and never read the trace. Each command declares its
// rules once, beside its flags, with needsFlag, ignoredWith and aloneFlag;
// the root's PersistentPreRunE checks them (checkFlagRules) for every
// command before it runs. They are kept as annotations of the flags, as
// cobra keeps its own flag groups.
const (
	ruleNeeds   = "gpufrag_needs"    // on a flag: the flags it needs, one at least
	ruleIgnored = "gpufrag_ignored"  // on a flag: the modes that ignore it
	ruleAlone   = "gpufrag_alone"    // on a mode flag: why it ignores the others
	ruleExcept  = "gpufrag_alone_ok" // on a mode flag: the flags it does use
	ruleWhy     = "gpufrag_why_"     // + mode or needed flag: why, for the message
)

// annotate adds values to a flag's annotation key (ruleWhy keys hold one
// value: the last given).
func annotate(fl *pflag.FlagSet, name, key string, values ...string) {
	f := mustFlag(fl, name)
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	if strings.HasPrefix(key, ruleWhy) {
		f.Annotations[key] = values
		return
	}
	f.Annotations[key] = append(f.Annotations[key], values...)
}

// mustFlag looks a flag up; a rule that names a flag the command does not
// have is a programming error, which every command's first test run finds.
func mustFlag(fl *pflag.FlagSet, name string) *pflag.Flag {
	f := fl.Lookup(name)
	if f == nil {
		panic(fmt.Sprintf("flag rule names --%s, which the command does not have", name))
	}
	return f
}

// needsFlag declares that each of flags has an effect only with --needed
// set: "--format has no effect without --trace (why)".
func needsFlag(cmd *cobra.Command, needed, why string, flags ...string) {
	fl := cmd.Flags()
	for _, f := range flags {
		annotate(fl, f, ruleNeeds, needed)
		annotate(fl, f, ruleWhy+needed, why)
	}
}

// ignoredWith declares that each of flags has no effect with --mode set:
// "--whatif has no effect with --no-replay, which (why)".
func ignoredWith(cmd *cobra.Command, mode, why string, flags ...string) {
	fl := cmd.Flags()
	for _, f := range flags {
		annotate(fl, f, ruleIgnored, mode)
	}
	annotate(fl, mode, ruleWhy+mode, why)
}

// aloneFlag declares that --mode ignores every flag of the command but
// those in uses (and --help): a mode that prints something and exits.
func aloneFlag(cmd *cobra.Command, mode, why string, uses ...string) {
	fl := cmd.Flags()
	for _, u := range uses {
		mustFlag(fl, u)
	}
	annotate(fl, mode, ruleAlone, "")
	annotate(fl, mode, ruleExcept, uses...)
	annotate(fl, mode, ruleWhy+mode, why)
}

// checkFlagRules refuses the first flag set where its rules say it has no
// effect, in the flags' order.
func checkFlagRules(cmd *cobra.Command) error {
	fl := cmd.Flags()
	var set []*pflag.Flag
	fl.Visit(func(f *pflag.Flag) { set = append(set, f) })
	why := func(mode *pflag.Flag) string {
		if w := mode.Annotations[ruleWhy+mode.Name]; len(w) > 0 && w[0] != "" {
			return ", which " + w[0]
		}
		return ""
	}
	for _, f := range set {
		if needs := f.Annotations[ruleNeeds]; len(needs) > 0 && !slices.ContainsFunc(needs, fl.Changed) {
			return usageErrorf(cmd, "--%s has no effect without --%s%s", f.Name, strings.Join(needs, " or --"), needsWhy(f, needs))
		}
		for _, mode := range f.Annotations[ruleIgnored] {
			if fl.Changed(mode) {
				return usageErrorf(cmd, "--%s has no effect with --%s%s", f.Name, mode, why(fl.Lookup(mode)))
			}
		}
	}
	for _, mode := range set {
		if _, ok := mode.Annotations[ruleAlone]; !ok {
			continue
		}
		for _, f := range set {
			if f != mode && f.Name != "help" && !isProfileFlag(f.Name) && !slices.Contains(mode.Annotations[ruleExcept], f.Name) {
				return usageErrorf(cmd, "--%s has no effect with --%s%s", f.Name, mode.Name, why(mode))
			}
		}
	}
	return nil
}

// needsWhy is the reason a flag gave for needing one of needs: " (why)".
func needsWhy(f *pflag.Flag, needs []string) string {
	var ws []string
	for _, n := range needs {
		ws = append(ws, f.Annotations[ruleWhy+n]...)
	}
	if len(ws) == 0 || ws[0] == "" {
		return ""
	}
	return " (" + ws[0] + ")"
}
