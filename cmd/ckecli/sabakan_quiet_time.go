package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/storage"
)

func newSabakanSetQuietTimeCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set-quiet-time DURATION",
		Short: "write a cluster only after the inventory was still for DURATION (0 turns it off)",
		Long: `set-quiet-time sets how long the inventory must have been still before
the daemon writes a cluster: every machine's state unchanged for DURATION
(sabakan's status.duration), and no machine added to or removed from the
query's result for DURATION. Until then the daemon plans, as with the
trigger planning. DURATION is a Go duration such as 10m or 1h30m; 0 turns
quiet time off.`,
	}
	valueArgCommand(cmd, func(cmd *cobra.Command, value string) error {
		d, err := storage.ParseQuietTime(value)
		if err != nil {
			return err
		}
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			return st.SetQuietTime(ctx, d)
		})
	})
	return cmd
}

func newSabakanGetQuietTimeCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "get-quiet-time",
		Short: "print the quiet time (0s: off)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				d, err := st.GetQuietTime(ctx)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), d)
				return err
			})
		},
	}
}
