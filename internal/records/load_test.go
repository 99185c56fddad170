package records

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/storage"
)

// What the compatibility tests need of the records a release wrote: read
// them, load them into an etcd, compare them. No binary does.

// Read reads the records Write wrote under dir.
func Read(dir string) (Records, error) {
	recs := Records{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		recs[filepath.ToSlash(rel)] = data
		return err
	})
	if err == nil && len(recs) == 0 {
		err = fmt.Errorf("%s: no records", dir)
	}
	return recs, err
}

// Load puts recs into etcd under st's prefix, where no key may be yet.
func Load(ctx context.Context, st storage.Storage, recs Records) error {
	resp, err := st.Client.Get(ctx, st.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	if resp.Count > 0 {
		return errors.New("records load into an empty prefix: " + st.Prefix + " has keys")
	}
	for _, key := range recs.Keys() {
		if err := st.Put(ctx, key, recs[key]); err != nil {
			return err
		}
	}
	return nil
}

// Equal reports whether a and b hold the same keys and values.
func Equal(a, b Records) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a.Keys(), func(k string) bool {
		v, ok := b[k]
		return !ok || !bytes.Equal(a[k], v)
	})
}
