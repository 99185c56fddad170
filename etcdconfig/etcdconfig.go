// Package etcdconfig reads CKE's etcd configuration file and connects to
// etcd with it.
package etcdconfig

import (
	"fmt"
	"io"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/internal/tlsfiles"
)

// Config is CKE's etcd configuration (YAML).
type Config struct {
	Endpoints   []string `json:"endpoints"`
	Prefix      string   `json:"prefix"`
	Timeout     string   `json:"timeout"`
	Username    string   `json:"username"`
	Password    string   `json:"password"`
	TLSCAFile   string   `json:"tls-ca-file"`
	TLSCertFile string   `json:"tls-cert-file"`
	TLSKeyFile  string   `json:"tls-key-file"`
}

// DefaultTimeout is the dial timeout when the file sets none.
const DefaultTimeout = 2 * time.Second

// Load reads a configuration file; unknown fields are errors.
func Load(path string) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Client connects to etcd. lg receives the client library's own log
// (retries, endpoint switches); nil discards it. Failed requests are
// returned as errors either way.
func (c Config) Client(lg *zap.Logger) (*clientv3.Client, error) {
	if len(c.Endpoints) == 0 {
		return nil, fmt.Errorf("etcd: no endpoints")
	}
	timeout := DefaultTimeout
	if c.Timeout != "" {
		d, err := time.ParseDuration(c.Timeout)
		if err != nil {
			return nil, fmt.Errorf("etcd timeout: %w", err)
		}
		timeout = d
	}
	cfg := clientv3.Config{
		Endpoints:   c.Endpoints,
		DialTimeout: timeout,
		Username:    c.Username,
		Password:    c.Password,
		Logger:      lg,
	}
	if lg == nil {
		cfg.Logger = zap.NewNop()
	}
	tc, err := tlsfiles.Config(c.TLSCAFile, c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("etcd %w", err)
	}
	cfg.TLS = tc
	return clientv3.New(cfg)
}

// ErrorLogger is a logger for the etcd libraries that passes on their
// errors only, as JSON lines to w: their warnings repeat, once per retry,
// what the caller reports anyway.
func ErrorLogger(w io.Writer) *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(w), zapcore.ErrorLevel))
}
