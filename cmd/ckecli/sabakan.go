package main

import "github.com/spf13/cobra"

func newSabakanCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sabakan",
		Short: "sabakan integration: template, URL, query variables, and the offline generator",
	}
	cmd.AddCommand(newSabakanGenerateCmd())
	return cmd
}
