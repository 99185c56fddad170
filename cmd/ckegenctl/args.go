package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/internal/words"
)

// exactArgs is cobra.ExactArgs(n) with errors that say what is missing or
// extra by the names of the command's usage line ("set-template FILE"):
// `ckegenctl sabakan set-template` alone says that it needs a FILE, not that
// it "accepts 1 arg(s), received 0".
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return checkArgCount(cmd, n, args)
	}
}

// maxArgs is cobra.MaximumNArgs(n) with the error of exactArgs: "sabakan
// trigger takes at most 1 argument, got 2: planning schedule (usage: ...)".
func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return usage.Errorf("%s takes at most %s, got %d: %s (usage: %s)", subcommand(cmd),
				words.Count(n, "argument", "arguments"), len(args), strings.Join(args, " "), usageLine(cmd))
		}
		return nil
	}
}

// checkArgCount is exactArgs' check of args against the n arguments cmd
// takes.
func checkArgCount(cmd *cobra.Command, n int, args []string) error {
	names := strings.Fields(cmd.Use)[1:]
	name := func(i int) string {
		if i < len(names) {
			return names[i]
		}
		return fmt.Sprintf("argument %d", i+1)
	}
	switch {
	case len(args) < n:
		var missing []string
		for i := len(args); i < n; i++ {
			missing = append(missing, name(i))
		}
		return usage.Errorf("%s needs %s (usage: %s; see --help)", subcommand(cmd), strings.Join(missing, " and "), usageLine(cmd))
	case len(args) > n:
		takes := words.Count(n, "argument", "arguments")
		if n == 0 {
			takes = "no arguments"
		}
		return usage.Errorf("%s takes %s, got %d: %s (usage: %s)", subcommand(cmd),
			takes, len(args), strings.Join(args, " "), usageLine(cmd))
	}
	return nil
}

// subcommand is the command's path without the root ("sabakan
// set-template"), as errors follow "ckegenctl: ".
func subcommand(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// usageLine is the command's usage line without cobra's "[flags]".
func usageLine(cmd *cobra.Command) string {
	return strings.TrimSuffix(cmd.UseLine(), " [flags]")
}

// flagError is the usage error of a flag error of a command whose flags
// are parsed in RunE, as usage.Cobra makes the others: an unknown flag
// gets a "did you mean" from the command's own and inherited flags, the
// hidden older spellings of the etcd flags included (--endpoint:
// --endpoints).
func flagError(cmd *cobra.Command, err error) error {
	return usage.Wrap(suggest.FlagError(cmd.Flags(), err))
}

// oneDashFlag refuses a long flag written with one dash (-output, as Go's
// flag package takes them), which the parser would read as shorthands
// (-o utput) and fail on, or worse, accept: it names the flag to write.
// Arguments after "--" are values.
func oneDashFlag(root *cobra.Command, args []string) error {
	long := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, a := range args {
		if a == "--" {
			return nil
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		if name, _, _ := strings.Cut(a[1:], "="); long[name] {
			return usage.Errorf("%s: flags take two dashes: did you mean --%s?", a, name)
		}
	}
	return nil
}

// requireFlags refuses, as a usage error, a command line of cmd without
// each of the flags names.
func requireFlags(cmd *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return usage.Errorf("%s needs %s (see --help)", subcommand(cmd), strings.Join(missing, " and "))
	}
	return nil
}
