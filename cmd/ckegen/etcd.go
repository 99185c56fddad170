package main

import (
	"context"
	"log/slog"

	"go.uber.org/zap/zapcore"

	"github.com/ckegen/ckegen/internal/etcdclient"
	"github.com/ckegen/ckegen/internal/logbridge"
)

// requestMargin is what an etcd request holds besides the cluster: the
// cluster-revision and the transaction's comparisons.
const requestMargin = 64 * 1024

// connect returns the daemon's client of the etcd cfg names. It sends
// requests of up to --max-cluster-bytes and the margin: the etcd client's
// default of 2 MiB would cap a cluster at about 3,500 nodes whatever
// --max-cluster-bytes says. It logs its errors through lg; its warnings
// repeat, once per retry, what the daemon reports anyway.
//
// An etcd that refuses or does not answer at start is logged, with why,
// and the daemon goes on: it campaigns until etcd answers, as it does
// when etcd goes away later.
func (o *options) connect(cfg *etcdclient.Config, lg *slog.Logger) (*etcdclient.Client, error) {
	cli, err := etcdclient.Connect(cfg,
		etcdclient.MaxRequestBytes(o.maxClusterBytes+requestMargin),
		etcdclient.Logger(logbridge.NewZap(lg.Handler(), zapcore.ErrorLevel)))
	if err != nil {
		return nil, err
	}
	if err := cli.WaitReady(context.Background()); err != nil {
		lg.Warn("etcd does not answer yet; campaigning until it does", "error", err)
	}
	return cli, nil
}
