package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/ckegen/ckegen/internal/etcdclient"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/storage"
)

// defaultConfigFile is where CKE keeps its etcd configuration; ckegenctl reads
// it when --config is not given and the file exists.
const defaultConfigFile = etcdclient.DefaultFile

// env is how commands reach etcd: the etcd flags ckegenctl shares with ckegen
// (internal/etcdclient) and --timeout, ckegenctl's own. Commands that need no
// etcd never read the configuration file nor connect.
type env struct {
	etcd    *etcdclient.Flags
	timeout time.Duration
	// stderr is where warnSkew warns; skewChecked: it did, once a run.
	stderr      func() io.Writer
	skewChecked bool
}

// withStorage connects to etcd and runs f within --timeout. When etcd does
// not answer, the error says which endpoints, which timeout, and why when
// it can, not only "context deadline exceeded"; when nothing listens
// there, it says so at once.
func (e *env) withStorage(f func(ctx context.Context, st storage.Storage) error) error {
	cfg, err := e.etcd.Load()
	if err != nil {
		return err
	}
	if e.timeout <= 0 {
		return usage.Errorf("--timeout: must be > 0, got %s", e.timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	// The connection (and the login) must be made within --timeout, or
	// within the file's timeout when that is shorter.
	cli, err := etcdclient.Connect(cfg, etcdclient.Within(e.timeout, "--timeout"))
	if err != nil {
		return err
	}
	defer cli.Close()
	if err := cli.WaitReady(ctx); err != nil {
		return err
	}
	st := storage.New(cli.Client, cfg.Prefix)
	if e.stderr != nil {
		e.warnSkew(ctx, st, e.stderr())
	}
	err = f(ctx, st)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return cli.NoAnswer(e.timeout, "--timeout", err)
	}
	return err
}
