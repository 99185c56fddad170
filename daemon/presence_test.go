package daemon

import (
	"context"
	"encoding/json"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/storage"
)

// TestPresence: every daemon, leader or follower, records its name and
// build under its session's lease, which names its election key too, and
// the record goes when the daemon stops.
func TestPresence(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	for _, name := range []string{"d1", "d2"} {
		d := f.daemon(name, nil)
		go func() { _ = d.Run(ctx); done <- struct{}{} }()
	}
	records := func() map[string]storage.Presence {
		resp, err := f.st.Client.Get(context.Background(), f.st.Key(storage.KeyPresence), clientv3.WithPrefix())
		must(t, err)
		m := map[string]storage.Presence{}
		for _, kv := range resp.Kvs {
			var p storage.Presence
			must(t, json.Unmarshal(kv.Value, &p))
			if got, want := string(kv.Key), f.st.Key(storage.PresenceKey(clientv3.LeaseID(kv.Lease))); got != want {
				t.Errorf("record %s is not named after its lease: want %s", got, want)
			}
			m[p.Name] = p
		}
		return m
	}
	waitFor(t, "both daemons' records", func() bool { return len(records()) == 2 })
	v := version.Current()
	for name, p := range records() {
		if p.Kind != storage.PresenceDaemon || p.Version != v.Version || p.Commit != v.Commit || p.CKEVersion != v.CKEVersion || !p.Since.Equal(testNow.UTC()) {
			t.Errorf("%s's record: %+v, want a daemon of %+v since %s", name, p, v, testNow)
		}
	}
	// The leader's record is the one under its election key's lease.
	l, err := f.st.ReadLeaders(context.Background())
	must(t, err)
	if l.CKEGen == nil || l.Presences[l.CKEGen.Lease].Name != l.CKEGen.Name {
		t.Errorf("the leader %+v has no record of its own: %+v", l.CKEGen, l.Presences)
	}
	cancel()
	<-done
	<-done
	waitFor(t, "the records to go with the daemons", func() bool { return len(records()) == 0 })
}
