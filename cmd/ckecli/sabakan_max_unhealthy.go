package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/storage"
)

// maxUnhealthyOff is the value that removes the limit.
const maxUnhealthyOff = "off"

func newSabakanSetMaxUnhealthyCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set-max-unhealthy VALUE",
		Short: "stop membership changes while more nodes than VALUE (5, or 40% of the nodes) are unhealthy",
		Long: `set-max-unhealthy sets how many of the cluster's nodes may be unhealthy
(machine gone from sabakan, or neither HEALTHY, UPDATING nor UNINITIALIZED;
rebooting nodes not counted) before the daemon stops changing membership:
above it, nodes are neither added, removed, promoted nor demoted, and only
state taints follow the machines. So many failures at once usually mean a
switch, a power feed or sabakan itself, which replacing machines would make
worse.

VALUE is a count (5) or a percentage of the cluster's nodes (40%, rounded
down), or off to remove the limit.`,
	}
	valueArgCommand(cmd, func(cmd *cobra.Command, value string) error {
		if value == maxUnhealthyOff {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				return st.DeleteMaxUnhealthy(ctx)
			})
		}
		m, err := storage.ParseMaxUnhealthy(value)
		if err != nil {
			return fmt.Errorf("%w (off removes the limit)", err)
		}
		return e.withStorage(func(ctx context.Context, st storage.Storage) error {
			return st.SetMaxUnhealthy(ctx, m)
		})
	})
	return cmd
}

func newSabakanGetMaxUnhealthyCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "get-max-unhealthy",
		Short: "print the limit of unhealthy nodes (off: none)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				m, err := st.GetMaxUnhealthy(ctx)
				if err != nil {
					return err
				}
				v := maxUnhealthyOff
				if m != nil {
					v = m.String()
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), v)
				return err
			})
		},
	}
}
