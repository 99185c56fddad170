package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/storage"
)

func newLeaderCmd(e *env) *cobra.Command {
	var cke bool
	cmd := &cobra.Command{
		Use:   "leader",
		Short: "print the name of ckegen's leading daemon (--cke: CKE's leading server)",
		Long: `leader prints the name of the ckegen daemon that leads ckegen's own
election (sabakan/ckegen/leader/). ckegen's daemons never campaign on CKE's
leader/: with --cke, leader prints CKE's leading server instead, as CKE's own
ckegenctl leader does. Exit status 1 when no one leads.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				get, prefix, who := st.CKEGenLeader, storage.KeyCKEGenLeader, "no ckegen daemon leads: nothing under %s%s (is ckegen's daemon running on this etcd and prefix?)"
				if cke {
					get, prefix, who = st.CKELeader, storage.KeyLeader, "no CKE server leads: nothing under %s%s"
				}
				name, err := get(ctx)
				if errors.Is(err, storage.ErrNotFound) {
					return fmt.Errorf(who, st.Prefix, prefix)
				}
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), name)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&cke, "cke", false, "print CKE's leading server (leader/) instead of ckegen's daemon")
	return cmd
}
