package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

func newSabakanSetVariablesCmd(e *env) *cobra.Command {
	var dry *dryRun
	cmd := &cobra.Command{
		Use:   "set-variables FILE",
		Short: `set the query variables: {"having": MachineParams|null, "notHaving": MachineParams|null} (- for stdin)`,
		Long: `set-variables validates the variables of sabakan's searchMachines query
and stores them as given. A key left out keeps the query's default (notHaving
skips boot servers and RETIRED machines); null means no condition. With
--dry-run nothing is stored: the plan the daemon would follow with these
variables is printed instead (ckegenctl sabakan plan --variables FILE).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(cmd, args[0])
			if err != nil {
				return err
			}
			if _, err := sabakan.ParseVariables(data); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return dry.store(e, cmd, intake.WhatIf{Variables: data}, storage.KeySabakanQueryVariables, data)
		},
	}
	dry = addDryRun(cmd)
	return cmd
}

func newSabakanGetVariablesCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "get-variables",
		Short: "print the stored query variables",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				v, err := st.Get(ctx, storage.KeySabakanQueryVariables)
				if err != nil {
					return absent(err, absentVariables)
				}
				_, err = cmd.OutOrStdout().Write(v.Data)
				return err
			})
		},
	}
}
