package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/storage"
)

func newLeaderCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "leader",
		Short: "print the name of the daemon that leads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				name, err := st.Leader(ctx)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), name)
				return err
			})
		},
	}
}
