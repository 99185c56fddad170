package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/cybozu-go/etcdutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap/zapcore"

	"github.com/ckegen/ckegen/internal/logbridge"
)

// requestMargin is what an etcd request holds besides the cluster: the
// cluster-revision and the transaction's comparisons.
const requestMargin = 64 * 1024

// connect returns a client of the etcd cfg names, as etcdutil.NewClient
// makes it (the same settings, TLS from the files or from the PEM written
// in the file), except that it sends requests of up to maxRequestBytes:
// etcdutil's client keeps etcd's default of 2 MiB, under which a cluster
// of about 3,500 nodes is the largest that can be written whatever
// --max-cluster-bytes says. The prefix is the storage's business: the
// client is not namespaced. The client logs its errors through lg.
func connect(cfg *etcdutil.Config, maxRequestBytes int, lg *slog.Logger) (*clientv3.Client, error) {
	timeout, err := time.ParseDuration(cfg.Timeout)
	if err != nil {
		return nil, fmt.Errorf("etcd timeout: %w", err)
	}
	tc, err := tlsConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd TLS: %w", err)
	}
	return clientv3.New(clientv3.Config{
		Endpoints:            cfg.Endpoints,
		DialTimeout:          timeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 2 * timeout,
		PermitWithoutStream:  true,
		Username:             cfg.Username,
		Password:             cfg.Password,
		TLS:                  tc,
		MaxCallSendMsgSize:   maxRequestBytes,
		// The client's warnings repeat, once per retry, what the daemon
		// reports anyway: errors only.
		Logger: logbridge.NewZap(lg.Handler(), zapcore.ErrorLevel),
	})
}

// tlsConfig is the TLS of cfg, nil when it has none: the CA from
// tls-ca-file or else tls-ca, the client certificate from tls-cert-file
// and tls-key-file or else tls-cert and tls-key, as etcdutil reads them.
func tlsConfig(cfg *etcdutil.Config) (*tls.Config, error) {
	read := func(file, inline, name string) ([]byte, error) {
		if file == "" {
			return []byte(inline), nil
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s-file: %w", name, err)
		}
		return data, nil
	}
	ca, err := read(cfg.TLSCAFile, cfg.TLSCA, "tls-ca")
	if err != nil {
		return nil, err
	}
	cert, err := read(cfg.TLSCertFile, cfg.TLSCert, "tls-cert")
	if err != nil {
		return nil, err
	}
	key, err := read(cfg.TLSKeyFile, cfg.TLSKey, "tls-key")
	if err != nil {
		return nil, err
	}
	if len(ca) == 0 && len(cert) == 0 && len(key) == 0 {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(ca) > 0 {
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(ca) {
			return nil, errors.New("tls-ca: no PEM certificate found")
		}
	}
	if len(cert) > 0 || len(key) > 0 {
		if len(cert) == 0 || len(key) == 0 {
			return nil, errors.New("needs both tls-cert and tls-key (or their -file forms) for a client certificate")
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("tls-cert and tls-key: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}
