package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/suggest"
	"github.com/ckegen/ckegen/storage"
)

// settingCmd is the command of the verb path ("sabakan set-url") of a
// row of intake.Table, with the usage line, the help and the choices the
// row gives it: a setting's commands are said where the setting is.
func settingCmd(path string) *cobra.Command {
	v, _ := intake.VerbOf(path)
	return &cobra.Command{Use: v.Use(), Short: v.Short, Long: v.Long, ValidArgs: v.Choices}
}

// newScalarCmds builds the commands of every setting that one value on the
// command line sets, from its row: its verbs name the commands and give
// their help, Set checks and stores the value, Show shows it.
func newScalarCmds(e *env) []*cobra.Command {
	var cmds []*cobra.Command
	for _, row := range intake.Table {
		if row.Set != nil {
			cmds = append(cmds, newScalarCmd(e, row)...)
		}
	}
	return cmds
}

// newScalarCmd builds the commands of row, a setting one value sets.
func newScalarCmd(e *env, row intake.Row) []*cobra.Command {
	setVerb := row.Verbs[0]
	set := settingCmd(setVerb.Path)
	store := func(cmd *cobra.Command, value string) error {
		data, err := row.Set(value)
		if err != nil {
			if s, ok := suggest.Closest(value, setVerb.Choices); ok {
				return fmt.Errorf("%w; did you mean %s?", err, s)
			}
			return err
		}
		w := storage.Write{Key: row.Key, Data: data, Delete: data == nil}
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			return st.Swap(ctx, nil, w)
		})
	}
	show := func(cmd *cobra.Command) error {
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			s, refused, _, err := intake.Load(ctx, st, row.Setting)
			if err != nil {
				return err
			}
			if ref := refused[row.Setting]; ref != nil {
				return intake.Explained(ref, false)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), row.Show(s))
			return err
		})
	}
	if len(row.Verbs) == 1 {
		// One command: a value sets, none prints.
		set.Args = maxArgs(1)
		set.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return store(cmd, args[0])
			}
			return show(cmd)
		}
		return []*cobra.Command{set}
	}
	if setVerb.Signed {
		valueArgCommand(set, store)
	} else {
		set.Args = exactArgs(1)
		set.RunE = func(cmd *cobra.Command, args []string) error { return store(cmd, args[0]) }
	}
	get := settingCmd(row.Verbs[1].Path)
	get.Args = exactArgs(0)
	get.RunE = func(cmd *cobra.Command, _ []string) error { return show(cmd) }
	return []*cobra.Command{set, get}
}
