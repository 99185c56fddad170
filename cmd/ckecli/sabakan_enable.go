package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/storage"
)

func newSabakanEnableCmd(e *env, enable bool) *cobra.Command {
	use, short := "enable", "enable the sabakan integration"
	if !enable {
		use, short = "disable", "disable the sabakan integration (the cluster stays as it is)"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				return st.SetDisabled(ctx, !enable)
			})
		},
	}
}

func newSabakanIsEnabledCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "is-enabled",
		Short: "print true if the sabakan integration is enabled",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				disabled, err := st.IsDisabled(ctx)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), !disabled)
				return err
			})
		},
	}
}
