package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/storage"
)

func newClusterCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "the generated cluster",
	}
	var output string
	get := &cobra.Command{
		Use:   "get",
		Short: "print the current cluster.yml",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output, "yaml", "json"); err != nil {
				return err
			}
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				v, err := st.Get(ctx, storage.KeyCluster)
				if err != nil {
					return absent(err, absentCluster)
				}
				return printCluster(cmd, v.Data, output)
			})
		},
	}
	get.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	cmd.AddCommand(get)
	return cmd
}
