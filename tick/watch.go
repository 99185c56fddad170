package tick

import (
	"context"
	"errors"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/storage"
)

// WatchSettings sends on wake, without blocking, each time a setting
// whose row in intake.Table wakes the leader changes; it returns when ctx
// ends, or with an error when the watch fails. Every host of the step
// runs it while it leads.
func WatchSettings(ctx context.Context, st storage.Storage, wake chan<- struct{}) error {
	watched := map[string]bool{}
	for _, k := range intake.Watched() {
		watched[k] = true
	}
	wctx := clientv3.WithRequireLeader(ctx)
	sabakanCh := st.Client.Watch(wctx, st.Key("sabakan/"), clientv3.WithPrefix())
	consCh := st.Client.Watch(wctx, st.Key(storage.KeyConstraints))
	for {
		var resp clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case resp, ok = <-sabakanCh:
		case resp, ok = <-consCh:
		}
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return errors.New("settings watch closed")
		}
		if err := resp.Err(); err != nil {
			return fmt.Errorf("settings watch: %w", err)
		}
		if slices.ContainsFunc(resp.Events, func(ev *clientv3.Event) bool { return watched[string(ev.Kv.Key[len(st.Prefix):])] }) {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}
