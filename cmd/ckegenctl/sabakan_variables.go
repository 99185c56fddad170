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
	cmd := settingCmd("sabakan set-variables")
	cmd.Args = exactArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		data, err := readInput(cmd, args[0])
		if err != nil {
			return err
		}
		if _, err := sabakan.ParseVariables(data); err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		return dry.store(e, cmd, intake.WhatIf{Variables: data}, storage.KeySabakanQueryVariables, data)
	}
	dry = addDryRun(cmd)
	return cmd
}

func newSabakanGetVariablesCmd(e *env) *cobra.Command {
	cmd := settingCmd("sabakan get-variables")
	cmd.Args = exactArgs(0)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			v, err := st.Get(ctx, storage.KeySabakanQueryVariables)
			if err != nil {
				return absent(err, absentVariables)
			}
			_, err = cmd.OutOrStdout().Write(v.Data)
			return err
		})
	}
	return cmd
}
