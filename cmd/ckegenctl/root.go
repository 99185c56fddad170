package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/internal/etcdclient"
	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/internal/usage"
)

// newRootCmd builds ckegenctl; configFile is the configuration file read when
// --config is not given (CKE's, unless a test points it elsewhere).
func newRootCmd(configFile string) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "ckegenctl",
		Short:         "control ckegen: cluster membership generated from sabakan",
		Long:          "control ckegen: cluster membership generated from sabakan\n\n" + usage.HelpCommands,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := cmd.PersistentFlags()
	e := &env{etcd: etcdclient.Register(f, etcdclient.Options{DefaultFile: configFile, Unconfigured: "http://127.0.0.1:2379, where ckegen runs its embedded etcd by default", Aliases: true})}
	e.stderr = cmd.ErrOrStderr
	f.DurationVar(&e.timeout, "timeout", 10*time.Second, "time limit of the etcd connection and operations")
	cmd.AddCommand(newSabakanCmd(e), newConstraintsCmd(e), newClusterCmd(e), newLeaderCmd(e))
	cmd.InitDefaultCompletionCmd()
	cmd.SetHelpCommand(newHelpCmd())
	refuseUnknownSubcommands(cmd)
	// --version, flag errors and argument errors as in every binary.
	usage.Cobra(cmd, "ckegenctl")
	return cmd
}

// newHelpCmd is `ckegenctl help [COMMAND...]`; unlike cobra's, it fails on a
// command that does not exist instead of printing the usage and exiting 0.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil {
				return usage.Wrap(err)
			}
			if len(rest) > 0 && target.HasSubCommands() {
				return target.ValidateArgs(rest)
			}
			return target.Help()
		},
		// Complete command names, as cobra's help does.
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, _, err := cmd.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, c := range target.Commands() {
				if c.IsAvailableCommand() && strings.HasPrefix(c.Name(), toComplete) {
					names = append(names, cobra.CompletionWithDesc(c.Name(), c.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// refuseUnknownSubcommands makes every command that only groups others
// (the root, `sabakan`, `constraints`, `completion`, ...) fail on an
// argument that names none of them, with a usage error: cobra would print
// the help and exit 0, so that a typo in a script looks like success. The
// commands suggested are suggest.For's, as for flags. With no argument
// they print their help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	if cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			var names []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					names = append(append(names, c.Name()), c.Aliases...)
				}
			}
			if s := suggest.For(args[0], names); len(s) > 0 {
				msg += "; did you mean " + suggest.Or("", s) + "?"
			}
			return usage.Errorf("%s (see %s --help)", msg, cmd.CommandPath())
		}
		cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
	}
}
