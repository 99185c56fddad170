// Package records keeps what a release of ckegen stored in etcd, so that
// the next releases are tested against it (docs/install.md, "Upgrade";
// testdata/records/): every key under the prefix but the elections,
// written as a file per key under a directory named after the release
// (the key sabakan/status is the file VERSION/sabakan/status), each value
// as etcd held it.
//
// internal/records/capture makes them from a running site; this
// package's tests read every release's with today's code.
package records

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/storage"
)

// Records are keys (relative to the prefix) and their values.
type Records map[string][]byte

// skipped reports whether a key is left out of the records: the elections'
// keys, whose names are leases and whose values are the candidates' names.
func skipped(key string) bool {
	return strings.HasPrefix(key, storage.KeyLeader) || strings.HasPrefix(key, storage.KeyCKEGenLeader)
}

// Capture reads every key under st's prefix but the elections'.
func Capture(ctx context.Context, st storage.Storage) (Records, error) {
	resp, err := st.Client.Get(ctx, st.Prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	recs := Records{}
	for _, kv := range resp.Kvs {
		key := strings.TrimPrefix(string(kv.Key), st.Prefix)
		if skipped(key) {
			continue
		}
		if err := checkKey(key); err != nil {
			return nil, err
		}
		recs[key] = kv.Value
	}
	return recs, nil
}

// checkKey refuses a key that cannot be a file's path under a directory.
func checkKey(key string) error {
	if key == "" || !fs.ValidPath(key) || strings.Contains(key, `\`) {
		return fmt.Errorf("key %q cannot be kept as a file: not a relative slash-separated path", key)
	}
	return nil
}

// Keys are recs' keys, sorted.
func (recs Records) Keys() []string {
	keys := make([]string, 0, len(recs))
	for k := range recs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Write writes recs as files under dir, which it makes anew (what was in
// it is removed).
func Write(dir string, recs Records) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for _, key := range recs.Keys() {
		if err := checkKey(key); err != nil {
			return err
		}
		file := filepath.Join(dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, recs[key], 0o644); err != nil {
			return err
		}
	}
	return nil
}
