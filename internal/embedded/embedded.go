// Package embedded starts a single-member etcd inside the process: the
// daemon's default when no etcd endpoints are given, and the real etcd that
// unit tests run against.
package embedded

import (
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Options of the embedded etcd.
type Options struct {
	Dir       string // data directory
	ClientURL string // e.g. http://127.0.0.1:2379
	PeerURL   string // e.g. http://127.0.0.1:2380
	// MaxRequestBytes is etcd's request size limit; 0 keeps etcd's
	// default (1.5 MiB).
	MaxRequestBytes uint
	// Logger receives etcd's log; nil discards it.
	Logger *zap.Logger
}

// Start starts etcd and waits until it serves clients.
func Start(o Options) (*embed.Etcd, error) {
	cu, err := url.Parse(o.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("client URL: %w", err)
	}
	pu, err := url.Parse(o.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("peer URL: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Dir = o.Dir
	cfg.Name = "ckegen"
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.LogLevel = "error"
	lg := o.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	if o.MaxRequestBytes > 0 {
		cfg.MaxRequestBytes = o.MaxRequestBytes
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd did not start within 60s")
	}
}
