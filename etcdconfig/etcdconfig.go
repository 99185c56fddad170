// Package etcdconfig reads CKE's etcd configuration file and connects to
// etcd with it.
package etcdconfig

import (
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
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

// Client connects to etcd.
func (c Config) Client() (*clientv3.Client, error) {
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
	}
	tc, err := tlsfiles.Config(c.TLSCAFile, c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("etcd %w", err)
	}
	cfg.TLS = tc
	return clientv3.New(cfg)
}
