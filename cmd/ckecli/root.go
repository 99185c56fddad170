package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ckegen/ckegen/etcdconfig"
	"github.com/ckegen/ckegen/storage"
)

// env is how commands reach etcd: from --config, overridden by --endpoints
// and --prefix. Commands that need no etcd never connect.
type env struct {
	config    string
	endpoints string
	prefix    string
	timeout   time.Duration
	// endpointsSet: --endpoints was given, so it overrides the file.
	endpointsSet bool
}

// storage connects to etcd; close releases the connection.
func (e *env) storage() (st storage.Storage, endpoints []string, closeFn func(), err error) {
	cfg := etcdconfig.Config{}
	if e.config != "" {
		if cfg, err = etcdconfig.Load(e.config); err != nil {
			return st, nil, nil, err
		}
	}
	if e.endpointsSet || len(cfg.Endpoints) == 0 {
		cfg.Endpoints = strings.Split(e.endpoints, ",")
	}
	if e.prefix != "" {
		cfg.Prefix = e.prefix
	}
	// The client's retry warnings would mix with the command's output;
	// the error that ends a request is returned and printed.
	cli, err := cfg.Client(nil)
	if err != nil {
		return st, nil, nil, err
	}
	return storage.New(cli, cfg.Prefix), cfg.Endpoints, func() { cli.Close() }, nil
}

// withStorage runs f with a connected storage and a timeout. When the
// timeout ends the command, the error says which etcd did not answer, not
// only "context deadline exceeded".
func (e *env) withStorage(f func(ctx context.Context, st storage.Storage) error) error {
	st, endpoints, closeFn, err := e.storage()
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	err = f(ctx, st)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("etcd at %s: no answer within %s (--timeout): %w", strings.Join(endpoints, ","), e.timeout, err)
	}
	return err
}

func newRootCmd() *cobra.Command {
	e := &env{}
	cmd := &cobra.Command{
		Use:           "ckecli",
		Short:         "control ckegen: cluster membership generated from sabakan",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&e.config, "config", "", "CKE's etcd configuration file (YAML)")
	f.StringVar(&e.endpoints, "endpoints", "http://127.0.0.1:2379", "etcd endpoints, comma separated (overrides --config)")
	f.StringVar(&e.prefix, "prefix", "", "etcd key prefix (default "+storage.DefaultPrefix+")")
	f.DurationVar(&e.timeout, "timeout", 10*time.Second, "timeout of the etcd operations")
	cmd.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		e.endpointsSet = cmd.Flags().Changed("endpoints")
	}
	cmd.AddCommand(newSabakanCmd(e), newConstraintsCmd(e), newClusterCmd(e), newLeaderCmd(e))
	return cmd
}
