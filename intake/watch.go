package intake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	"github.com/ckegen/ckegen/storage"
)

// Watch sends on wake, without blocking, each time a setting
// whose row in Table wakes the leader changes (its key, or a key
// under its prefix); it returns when ctx ends, or with an error when the
// watch fails. Every host of the step runs it while it leads.
func Watch(ctx context.Context, st storage.Storage, wake chan<- struct{}) error {
	return watch(ctx, st, Watched(), WatchedPrefixes(), wake)
}

// watch sends on wake, without blocking, each time one of keys, or a key
// under one of prefixes, changes: one etcd watch each, so that nothing
// else (the status and the memory every tick writes) reaches the leader.
func watch(ctx context.Context, st storage.Storage, keys, prefixes []string, wake chan<- struct{}) error {
	g, gctx := errgroup.WithContext(ctx)
	wctx := clientv3.WithRequireLeader(gctx)
	forward := func(what string, ch clientv3.WatchChan) func() error {
		return func() error {
			for resp := range ch {
				if err := resp.Err(); err != nil {
					return fmt.Errorf("settings watch of %s: %w", what, err)
				}
				if len(resp.Events) == 0 {
					continue
				}
				select {
				case wake <- struct{}{}:
				default:
				}
			}
			if gctx.Err() != nil {
				return nil // ctx ended, or another watch failed
			}
			return fmt.Errorf("settings watch of %s: %w", what, errWatchClosed)
		}
	}
	for _, k := range keys {
		g.Go(forward(k, st.Client.Watch(wctx, st.Key(k))))
	}
	for _, p := range prefixes {
		g.Go(forward(p, st.Client.Watch(wctx, st.Key(p), clientv3.WithPrefix())))
	}
	return g.Wait()
}

// errWatchClosed: etcd closed a watch while it was wanted.
var errWatchClosed = errors.New("closed")

// SettingsID identifies the watched settings of a snapshot by their
// keys' mod revisions.
func SettingsID(snap *storage.Snapshot) string {
	h := sha256.New()
	for _, row := range Table {
		if !row.Wakes {
			continue
		}
		h.Write([]byte(row.Key))
		h.Write([]byte{'='})
		h.Write(strconv.AppendInt(nil, snap.Get(row.Key).ModRevision, 10))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
