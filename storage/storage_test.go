package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

func raw(t *testing.T, cli *clientv3.Client, key string) string {
	t.Helper()
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "<none>"
	}
	return string(resp.Kvs[0].Value)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// campaign makes this test the leader and returns the election key.
func campaign(t *testing.T, s Storage) (string, *concurrency.Session) {
	t.Helper()
	sess, err := concurrency.NewSession(s.Client, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	e := concurrency.NewElection(sess, s.Key(KeyLeader))
	if err := e.Campaign(context.Background(), "test-leader"); err != nil {
		t.Fatal(err)
	}
	return e.Key(), sess
}

// TestGetPut: keys live under the prefix (one "/" added when missing);
// a value is read with the mod revision it has; a missing key is
// ErrNotFound; the leader helpers name the first campaigner.
func TestGetPut(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "/p")
	if s.Prefix != "/p/" {
		t.Fatalf("prefix %q", s.Prefix)
	}
	if _, err := s.Get(ctx, KeySabakanURL); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), KeySabakanURL) {
		t.Errorf("missing key: %v, want ErrNotFound naming the key", err)
	}
	must(t, s.Put(ctx, KeySabakanURL, []byte("http://sabakan:10080/graphql")))
	if got := raw(t, cli, "/p/sabakan/url"); got != "http://sabakan:10080/graphql" {
		t.Errorf("stored %q", got)
	}
	v, err := s.Get(ctx, KeySabakanURL)
	resp, _ := cli.Get(ctx, "/p/sabakan/url")
	if err != nil || string(v.Data) != "http://sabakan:10080/graphql" || v.ModRevision != resp.Kvs[0].ModRevision || !v.Exists() {
		t.Errorf("Get = %+v, %v", v, err)
	}
	if _, err := s.CKELeader(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("no leader: %v", err)
	}
	campaign(t, s)
	if name, err := s.CKELeader(ctx); name != "test-leader" || err != nil {
		t.Errorf("CKELeader = %q, %v", name, err)
	}
}

// TestRead: one transaction reads the single keys, the prefixes, the
// counts and the leader key; a held key is not read again while its mod
// revision is the held one, and is read when it changed or is gone.
func TestRead(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "/k/")
	leader, _ := campaign(t, s)
	must(t, s.Put(ctx, KeySabakanTemplate, []byte(`{"name":"t"}`)))
	must(t, s.Put(ctx, KeyCluster, []byte(`{"name":"a"}`)))
	for i, v := range []string{"x", "y"} {
		must(t, s.Put(ctx, fmt.Sprintf("%s%016x", KeyRebootsData, i), []byte(v)))
	}
	cluster, err := s.Get(ctx, KeyCluster)
	must(t, err)
	req := Request{LeaderKey: leader, Keys: []string{KeySabakanTemplate, KeyCluster, KeySabakanURL},
		Prefixes: []string{KeyRebootsData}, Counts: []string{KeyLeader}}

	snap, err := s.Read(ctx, req)
	must(t, err)
	if string(snap.Get(KeySabakanTemplate).Data) != `{"name":"t"}` || string(snap.Get(KeyCluster).Data) != `{"name":"a"}` ||
		snap.Get(KeySabakanURL).Exists() || !snap.Leading || snap.Count(KeyLeader) != 1 || snap.Revision == 0 {
		t.Errorf("snapshot: %+v", snap)
	}
	if under := snap.Under(KeyRebootsData); len(under) != 2 || under[0].Key != KeyRebootsData+"0000000000000000" || string(under[1].Data) != "y" {
		t.Errorf("under %s: %+v", KeyRebootsData, under)
	}

	req.Held, req.HeldRevision = KeyCluster, cluster.ModRevision
	snap, err = s.Read(ctx, req)
	must(t, err)
	if got := snap.Get(KeyCluster); got.Data != nil || got.ModRevision != cluster.ModRevision || !snap.NotRead(KeyCluster) {
		t.Errorf("the held cluster was read again: %+v", got)
	}
	if string(snap.Get(KeySabakanTemplate).Data) != `{"name":"t"}` {
		t.Errorf("the other keys: %+v", snap)
	}

	must(t, s.Put(ctx, KeyCluster, []byte(`{"name":"b"}`)))
	snap, err = s.Read(ctx, req)
	must(t, err)
	if string(snap.Get(KeyCluster).Data) != `{"name":"b"}` || snap.NotRead(KeyCluster) {
		t.Errorf("a changed held key: %+v", snap.Get(KeyCluster))
	}
	_, err = cli.Delete(ctx, s.Key(KeyCluster))
	must(t, err)
	snap, err = s.Read(ctx, req)
	must(t, err)
	if snap.Get(KeyCluster).Exists() || snap.NotRead(KeyCluster) {
		t.Errorf("a deleted held key: %+v", snap.Get(KeyCluster))
	}
	req.LeaderKey = ""
	if snap, err := s.Read(ctx, req); err != nil || snap.Leading {
		t.Errorf("without a leader key: leading %v (%v)", snap.Leading, err)
	}
}

// TestSwap: a guarded write succeeds while every guard holds, and loses
// otherwise, writing nothing and naming the key that changed.
func TestSwap(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "")
	must(t, s.Put(ctx, KeyConstraints, []byte(`{"a":1}`)))
	read, err := s.Get(ctx, KeyConstraints)
	must(t, err)
	guards := []Guard{GuardOf(KeyConstraints, read), {Key: KeySabakanPolicy}}

	// Someone else writes between the read and the write.
	must(t, s.Put(ctx, KeyConstraints, []byte(`{"a":2}`)))
	err = s.Swap(ctx, guards, Write{Key: KeyConstraints, Data: []byte(`{"a":3}`)}, Write{Key: KeySabakanTrigger, Data: []byte("x")})
	var changed *ChangedError
	if !errors.As(err, &changed) || changed.Key != KeyConstraints || !errors.Is(err, ErrConflict) {
		t.Fatalf("stale write: %v, want a ChangedError naming %s", err, KeyConstraints)
	}
	if got, trig := raw(t, cli, s.Key(KeyConstraints)), raw(t, cli, s.Key(KeySabakanTrigger)); got != `{"a":2}` || trig != "<none>" {
		t.Errorf("a lost write wrote: constraints %s, trigger %s", got, trig)
	}
	// A key that must not exist and does.
	read, _ = s.Get(ctx, KeyConstraints)
	must(t, s.Put(ctx, KeySabakanPolicy, []byte("p")))
	err = s.Swap(ctx, []Guard{GuardOf(KeyConstraints, read), {Key: KeySabakanPolicy}}, Write{Key: KeyConstraints, Data: []byte(`{"a":3}`)})
	if !errors.As(err, &changed) || changed.Key != KeySabakanPolicy {
		t.Errorf("a guard on an absent key that appeared: %v", err)
	}
	// Fresh guards: the writes and a delete land together.
	err = s.Swap(ctx, []Guard{GuardOf(KeyConstraints, read)}, Write{Key: KeyConstraints, Data: []byte(`{"a":3}`)}, Write{Key: KeySabakanPolicy, Delete: true})
	must(t, err)
	if got, pol := raw(t, cli, s.Key(KeyConstraints)), raw(t, cli, s.Key(KeySabakanPolicy)); got != `{"a":3}` || pol != "<none>" {
		t.Errorf("after the swap: constraints %s, policy %s", got, pol)
	}
}

// TestPutCluster: the cluster write needs leadership, an unchanged
// cluster and every other guard; a refused write changes nothing and says
// which key changed.
func TestPutCluster(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "")
	leader, sess := campaign(t, s)

	wrote, err := s.PutCluster(ctx, leader, []byte(`{"v":1}`), 0, 1)
	must(t, err)
	c, _ := s.Get(ctx, KeyCluster)
	if wrote != c.ModRevision || raw(t, cli, s.Key(KeyClusterRevision)) != "1" {
		t.Errorf("PutCluster returned revision %d, the key has %d; cluster-revision %s", wrote, c.ModRevision, raw(t, cli, s.Key(KeyClusterRevision)))
	}

	var changed *ChangedError
	// Stale: someone else wrote since we read.
	must(t, s.Put(ctx, KeyCluster, []byte(`{"v":"by hand"}`)))
	if _, err := s.PutCluster(ctx, leader, []byte(`{"v":2}`), c.ModRevision, 2); !errors.As(err, &changed) || changed.Key != KeyCluster {
		t.Errorf("stale write: %v, want a ChangedError naming %s", err, KeyCluster)
	}
	// Expecting no cluster when there is one.
	if _, err := s.PutCluster(ctx, leader, []byte(`{"v":2}`), 0, 2); !errors.As(err, &changed) || changed.Key != KeyCluster {
		t.Errorf("create over an existing cluster: %v", err)
	}
	// An ownership guard that changed: the cluster is as read, the owner
	// is not.
	c, _ = s.Get(ctx, KeyCluster)
	must(t, s.Put(ctx, KeyOwner, []byte("ckegen")))
	if _, err := s.PutCluster(ctx, leader, []byte(`{"v":2}`), c.ModRevision, 2, Guard{Key: KeyOwner}, Guard{Key: KeySabakanDisabled}); !errors.As(err, &changed) || changed.Key != KeyOwner {
		t.Errorf("a write racing a takeover: %v, want a ChangedError naming %s", err, KeyOwner)
	}
	if got := raw(t, cli, s.Key(KeyCluster)); got != `{"v":"by hand"}` || raw(t, cli, s.Key(KeyClusterRevision)) != "1" {
		t.Errorf("cluster = %s after refused writes", got)
	}

	// Leaderless: the session ended.
	must(t, sess.Close())
	if _, err := s.PutCluster(ctx, leader, []byte(`{"v":3}`), c.ModRevision, 3); !errors.Is(err, ErrNoLeader) {
		t.Errorf("leaderless write: %v, want ErrNoLeader", err)
	}
	if got := raw(t, cli, s.Key(KeyCluster)); got != `{"v":"by hand"}` {
		t.Errorf("cluster = %s after a leaderless write", got)
	}
}

// TestPutStatus: the status and the memory are written together by the
// leader, and not at all without leadership.
func TestPutStatus(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "")
	leader, sess := campaign(t, s)
	must(t, s.PutStatus(ctx, leader, Status{Result: "ok", Reason: "R"}, []byte(`{"m":1}`)))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := cli.Watch(wctx, s.Key("sabakan/"), clientv3.WithPrefix())
	must(t, s.PutStatus(ctx, leader, Status{Result: "failing"}, []byte(`{"m":2}`)))
	select {
	case wr := <-events:
		if len(wr.Events) != 2 {
			t.Errorf("the status and the memory in %d events of one revision, want 2", len(wr.Events))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no write seen")
	}
	st, err := s.GetStatus(ctx)
	if err != nil || st.Result != "failing" || raw(t, cli, s.Key(KeyCKEGenMemory)) != `{"m":2}` {
		t.Errorf("status %+v (%v), memory %s", st, err, raw(t, cli, s.Key(KeyCKEGenMemory)))
	}
	must(t, s.PutStatus(ctx, leader, Status{Result: "ok"}, nil))
	if raw(t, cli, s.Key(KeyCKEGenMemory)) != `{"m":2}` {
		t.Error("a status without memory changed the memory")
	}
	must(t, sess.Close())
	if err := s.PutStatus(ctx, leader, Status{Result: "disabled"}, []byte(`{"m":3}`)); !errors.Is(err, ErrNoLeader) {
		t.Errorf("leaderless status: %v, want ErrNoLeader", err)
	}
	if st, _ := s.GetStatus(ctx); st.Result != "ok" || raw(t, cli, s.Key(KeyCKEGenMemory)) != `{"m":2}` {
		t.Errorf("a leaderless status was written: %+v", st)
	}
	var js map[string]any
	data, _ := FitStatus(Status{Result: "ok"})
	if err := json.Unmarshal(data, &js); err != nil || js["result"] != "ok" {
		t.Errorf("status JSON %s", data)
	}
}

func TestHistoryBounded(t *testing.T) {
	ctx := context.Background()
	s := New(etcdtest.Client(t), "")
	leader, _ := campaign(t, s)
	for i := 1; i <= HistoryLimit+5; i++ {
		err := s.AddHistory(ctx, leader, HistoryEntry{Time: time.Unix(int64(i), 0).UTC(), Op: fmt.Sprintf("op%d", i), ClusterRevision: int64(i * 1000)})
		if err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != HistoryLimit || h[0].Op != "op6" || h[len(h)-1].Op != fmt.Sprintf("op%d", HistoryLimit+5) {
		t.Errorf("history has %d entries from %s to %s; want %d from op6", len(h), h[0].Op, h[len(h)-1].Op, HistoryLimit)
	}
	if h[0].ID != fmt.Sprintf("%016x", 6000) {
		t.Errorf("id %q", h[0].ID)
	}
}

// TestHistoryOneGuardedTransaction: adding an entry and pruning the
// oldest happen in one transaction (one etcd revision), and neither
// happens without leadership.
func TestHistoryOneGuardedTransaction(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "")
	leader, sess := campaign(t, s)
	// More entries than the limit, as an older version or a hand may
	// have left.
	for i := 1; i <= HistoryLimit+3; i++ {
		if _, err := cli.Put(ctx, s.Key(KeySabakanHistory)+fmt.Sprintf("%016x", i), fmt.Sprintf(`{"id":"%016x","op":"old"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := cli.Watch(wctx, s.Key(KeySabakanHistory), clientv3.WithPrefix())
	if err := s.AddHistory(ctx, leader, HistoryEntry{Op: "new", ClusterRevision: 1000}); err != nil {
		t.Fatal(err)
	}
	var puts, deletes int
	revs := map[int64]bool{}
	for puts+deletes < 5 {
		select {
		case wr := <-events:
			revs[wr.Header.Revision] = true
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypePut {
					puts++
				} else {
					deletes++
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("saw %d puts and %d deletes, want 1 and 4", puts, deletes)
		}
	}
	if puts != 1 || deletes != 4 || len(revs) != 1 {
		t.Errorf("%d puts and %d deletes at %d revisions; want 1 put and 4 deletes at one revision", puts, deletes, len(revs))
	}
	if h, _ := s.History(ctx); len(h) != HistoryLimit || h[0].ID != fmt.Sprintf("%016x", 5) || h[len(h)-1].Op != "new" {
		t.Errorf("history after pruning: %d entries from %s", len(h), h[0].ID)
	}

	// Without leadership: nothing added, nothing pruned.
	for i := 1; i <= 3; i++ {
		if _, err := cli.Put(ctx, s.Key(KeySabakanHistory)+fmt.Sprintf("%016x", i), fmt.Sprintf(`{"id":"%016x","op":"old"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.AddHistory(ctx, leader, HistoryEntry{Op: "late", ClusterRevision: 2000}); !errors.Is(err, ErrNoLeader) {
		t.Errorf("leaderless AddHistory: %v, want ErrNoLeader", err)
	}
	if h, _ := s.History(ctx); len(h) != HistoryLimit+3 || h[len(h)-1].Op != "new" {
		t.Errorf("a leaderless AddHistory changed the history: %d entries, last %q", len(h), h[len(h)-1].Op)
	}
}

func TestFitStatus(t *testing.T) {
	small := Status{Result: "ok", Warnings: []string{"w1", "w2"}, Message: "m"}
	data, err := FitStatus(small)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(small); string(data) != string(want) {
		t.Errorf("a small status changed: %s", data)
	}

	long := strings.Repeat("x", 2048)
	big := Status{Result: "failing", Message: strings.Repeat("m", 4096), LastChangeCount: 100}
	for i := range 101 {
		big.Warnings = append(big.Warnings, fmt.Sprintf("%d %s", i, long))
	}
	for range 50 {
		big.LastChanges = append(big.LastChanges, Change{Action: "add", Address: "10.0.0.1", Serial: long})
	}
	data, err = FitStatus(big)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > MaxStatusBytes {
		t.Fatalf("status of %d bytes, over %d", len(data), MaxStatusBytes)
	}
	var got Status
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	last := got.Warnings[len(got.Warnings)-1]
	kept := len(got.Warnings) - 1
	if want := fmt.Sprintf("and %d more (the status is limited to 256 KiB)", 101-kept); last != want || kept < 50 {
		t.Errorf("kept %d warnings, last %q, want %q", kept, last, want)
	}
	if got.LastChangeCount != 100 || got.Message != big.Message {
		t.Errorf("count %d, message of %d bytes: only warnings had to go", got.LastChangeCount, len(got.Message))
	}
}

// TestRecordsInvalid: a status or a history entry that does not parse
// (written by hand, or by something else) is ErrInvalid, naming the key
// and where in the value, in JSON's words: encoding/json named the Go
// struct field and its type.
func TestRecordsInvalid(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "")
	if _, err := cli.Put(ctx, s.Key(KeySabakanStatus), "{\"result\": \"ok\",\n \"consecutiveFailures\": \"3\"}"); err != nil {
		t.Fatal(err)
	}
	_, err := s.GetStatus(ctx)
	if want := `stored sabakan/status: invalid stored value: line 2, column 25: consecutiveFailures: want an integer, got the string "3"`; !errors.Is(err, ErrInvalid) || err == nil || err.Error() != want {
		t.Errorf("status: %v, want %q", err, want)
	}
	key := KeySabakanHistory + fmt.Sprintf("%016x", 1)
	if _, err := cli.Put(ctx, s.Key(key), `{"op": "new", "changeCount": [1]}`); err != nil {
		t.Fatal(err)
	}
	_, err = s.History(ctx)
	if want := "stored " + key + ": invalid stored value: line 1, column 30: changeCount: want an integer, got an array"; !errors.Is(err, ErrInvalid) || err == nil || err.Error() != want {
		t.Errorf("history: %v, want %q", err, want)
	}
}
