package main

import (
	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "ckecli",
		Short:         "control ckegen: cluster membership generated from sabakan",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.AddCommand(newSabakanCmd())
	return cmd
}
