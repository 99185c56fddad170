package intake

import (
	"context"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/storage"
)

// watcher runs watch until the test ends and returns its wake channel.
func watcher(t *testing.T, run func(ctx context.Context, wake chan<- struct{}) error) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wake := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, wake) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the watch ended with %v when its context did", err)
		}
	})
	return wake
}

// wakes puts key until the watch wakes (a watch is set up a moment
// after it is asked for), and fails after 10 s.
func wakes(t *testing.T, st storage.Storage, wake <-chan struct{}, key string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := st.Client.Put(context.Background(), st.Key(key), time.Now().String()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-wake:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Errorf("a change of %s did not wake the leader", key)
}

// stillAfter puts each key and fails if the watch wakes within a while.
func stillAfter(t *testing.T, st storage.Storage, wake <-chan struct{}, keys ...string) {
	t.Helper()
	for _, key := range keys {
		if _, err := st.Client.Put(context.Background(), st.Key(key), "x"); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-wake:
		t.Errorf("a change of one of %v woke the leader", keys)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestWatch: a change of the key of every row that wakes the
// leader wakes it; a change of a row that does not (the cluster, the
// reboot queue), of what the tick writes itself (the status, the
// memory, the plan, the history), or of a key beside a watched one does
// not.
func TestWatch(t *testing.T) {
	st := storage.New(etcdtest.Client(t), "")
	wake := watcher(t, func(ctx context.Context, wake chan<- struct{}) error { return Watch(ctx, st, wake) })
	quiet := []string{storage.KeySabakanStatus, storage.KeyCKEGenMemory, storage.KeySabakanPlan, storage.KeySabakanHistory + "1",
		storage.KeyCKEStatus, storage.KeyLeader + "x", storage.KeySabakanURL + "/x", "sabakan/unknown"}
	waking := 0
	for _, row := range Table {
		switch {
		case row.Wakes && row.Key != "":
			wakes(t, st, wake, row.Key)
			waking++
		case row.Wakes:
			wakes(t, st, wake, row.Prefix+"x")
			waking++
		case row.Key != "":
			quiet = append(quiet, row.Key)
		default:
			quiet = append(quiet, row.Prefix+"x")
		}
	}
	if waking < 10 {
		t.Errorf("only %d rows wake the leader", waking)
	}
	// Every watch is set up now: what no row watches is still.
	stillAfter(t, st, wake, quiet...)
}

// TestWatchPrefix: a change of any key under a watched prefix wakes the
// leader, a key beside it does not; a removal is a change too.
func TestWatchPrefix(t *testing.T) {
	st := storage.New(etcdtest.Client(t), "")
	wake := watcher(t, func(ctx context.Context, wake chan<- struct{}) error {
		return watch(ctx, st, []string{"one"}, []string{"under/"}, wake)
	})
	wakes(t, st, wake, "under/a")
	wakes(t, st, wake, "under/b/c")
	wakes(t, st, wake, "one")
	stillAfter(t, st, wake, "under", "one/x", "other/a")
	if _, err := st.Client.Delete(context.Background(), st.Key("under/a")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Error("removing a key under a watched prefix did not wake the leader")
	}
}
