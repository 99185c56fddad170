package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/storage"
)

func newLeaderCmd(e *env) *cobra.Command {
	var cke bool
	cmd := &cobra.Command{
		Use:   "leader",
		Short: "print the name of ckegen's leader: its leading daemon, or CKE's server with ckegen inside (--cke: CKE's leading server)",
		Long: `leader prints the name of the ckegen daemon that leads ckegen's own
election (sabakan/ckegen/leader/). When no daemon leads and CKE's leading
server runs ckegen inside (its record under sabakan/ckegen/presence/ says
so), it prints that server's name, with ckegen's version inside it.
ckegen's daemons never campaign on CKE's leader/: with --cke, leader prints
CKE's leading server instead, as CKE's own ckecli leader does.

Exit status 1 when no ckegen leads: no daemon, and CKE's server, if one
leads, keeps no record of ckegen (CKE's own binary, or a cke built from an
older ckegen: whether ckegen runs inside is then not known).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withStorage(func(ctx context.Context, st storage.Storage) error {
				if cke {
					return printCKELeader(ctx, cmd, st)
				}
				o, err := ownership(ctx, st)
				if err != nil {
					return err
				}
				who, err := liveview.ReadActor(ctx, st, o, time.Now())
				if err != nil {
					return err
				}
				line, err := ckegenLeader(who, st.Prefix)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), line)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&cke, "cke", false, "print CKE's leading server (leader/) instead of ckegen's leader")
	return cmd
}

// ckegenLeader is what leader prints of who: the leading daemon's name;
// without one, the name of CKE's leading server with ckegen inside, and
// so much; otherwise an error that says who leads and why no ckegen is
// known to.
func ckegenLeader(who liveview.Actor, prefix string) (string, error) {
	switch {
	case who.CKEGen != nil:
		return who.CKEGen.Name, nil
	case who.CKE != nil && who.CKE.Presence != nil && who.CKE.Presence.Kind == storage.PresenceInsideCKE:
		return fmt.Sprintf("%s (CKE's server, %s%s, with ckegen %s inside; no ckegen daemon leads)", who.CKE.Name, prefix, storage.KeyLeader, who.CKE.Presence.Version), nil
	case who.CKE != nil:
		return "", fmt.Errorf("no ckegen daemon leads (nothing under %s%s), and %s", prefix, storage.KeyCKEGenLeader, who.Says)
	}
	return "", fmt.Errorf("nothing leads: no ckegen daemon (nothing under %s%s) and no CKE server (nothing under %s%s); is ckegen's daemon, or CKE's server, running on this etcd and prefix?",
		prefix, storage.KeyCKEGenLeader, prefix, storage.KeyLeader)
}

// printCKELeader prints the name of CKE's leading server.
func printCKELeader(ctx context.Context, cmd *cobra.Command, st storage.Storage) error {
	name, err := st.CKELeader(ctx)
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("no CKE server leads: nothing under %s%s", st.Prefix, storage.KeyLeader)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), name)
	return err
}
