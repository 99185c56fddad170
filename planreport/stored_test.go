package planreport

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/storage"
)

// campaign makes the test the leader; it returns the election key.
func campaign(t *testing.T, s storage.Storage) (string, *concurrency.Session) {
	t.Helper()
	sess, err := concurrency.NewSession(s.Client, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	e := concurrency.NewElection(sess, s.Key(storage.KeyCKEGenLeader))
	if err := e.Campaign(context.Background(), "test-leader"); err != nil {
		t.Fatal(err)
	}
	return e.Key(), sess
}

// TestStoredInvalid: a stored plan that does not parse is
// storage.ErrInvalid, naming the key, and where in the value, in JSON's
// words (not Go's).
func TestStoredInvalid(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := storage.New(cli, "")
	if _, err := ReadStored(ctx, s); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("no plan: %v, want ErrNotFound", err)
	}
	if _, err := cli.Put(ctx, s.Key(storage.KeySabakanPlan), "{"); err != nil {
		t.Fatal(err)
	}
	_, err := ReadStored(ctx, s)
	if want := "stored sabakan/plan: invalid stored value: line 1, column 2: unexpected end of input: the JSON value is not complete"; !errors.Is(err, storage.ErrInvalid) || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	// A value of the wrong kind: encoding/json named the Go struct field
	// and its type.
	if _, err := cli.Put(ctx, s.Key(storage.KeySabakanPlan), "{\"result\": \"settled\",\n \"steps\": [{\"op\": \"x\", \"changes\": [{\"score\": \"high\"}]}]}"); err != nil {
		t.Fatal(err)
	}
	_, err = ReadStored(ctx, s)
	if want := `stored sabakan/plan: invalid stored value: line 2, column 46: steps[0].changes[0].score: want a number, got the string "high"`; !errors.Is(err, storage.ErrInvalid) || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestPlanStored: the plan is written only by the leader and reads back as
// it was written; one over the size limit loses its final cluster first,
// then the changes beyond storage.MaxChanges of each step.
func TestPlanStored(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := storage.New(cli, "")
	leader, sess := campaign(t, s)

	changes := make([]Change, storage.MaxChanges+5)
	for i := range changes {
		changes[i] = Change{Action: "add-worker", Address: "10.0.0.1", Serial: "s", Reason: strings.Repeat("r", 50)}
	}
	nodes := make([]*cluster.Node, 50)
	for i := range nodes {
		nodes[i] = &cluster.Node{Address: "10.0.0.1", User: "u"}
	}
	p := Stored{
		Document: Document{
			Result:   "settled",
			Steps:    []Step{{Op: "increase worker", Changes: changes, Warnings: []string{}}},
			Warnings: []string{},
			Cluster:  &cluster.Cluster{Name: "t", Nodes: nodes},
		},
		ComputedAt:       time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		TemplateRevision: 7,
		ClusterRevision:  9,
		Trigger:          intake.TriggerPlanning,
	}
	data, err := MarshalStored(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutPlan(ctx, leader, data); err != nil {
		t.Fatal(err)
	}
	got, err := ReadStored(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&p, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	var keys map[string]json.RawMessage
	stored, err := s.GetPlan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(stored, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"result", "steps", "summary", "cluster", "computed-at", "template-revision", "cluster-revision", "trigger"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("stored plan has no %q key", k)
		}
	}

	withoutCluster := len(data) - 50*30
	small, err := MarshalStored(p, withoutCluster)
	if err != nil {
		t.Fatal(err)
	}
	var back Stored
	if err := json.Unmarshal(small, &back); err != nil {
		t.Fatal(err)
	}
	if back.Cluster != nil || len(back.Steps[0].Changes) != storage.MaxChanges+5 || !strings.HasPrefix(back.Omitted, "the final cluster,") {
		t.Errorf("over the limit by the cluster: cluster %v, %d changes, omitted %q", back.Cluster, len(back.Steps[0].Changes), back.Omitted)
	}
	smaller, err := MarshalStored(p, len(small)-100)
	if err != nil {
		t.Fatal(err)
	}
	back = Stored{}
	if err := json.Unmarshal(smaller, &back); err != nil {
		t.Fatal(err)
	}
	if back.Cluster != nil || len(back.Steps[0].Changes) != storage.MaxChanges || len(p.Steps[0].Changes) != storage.MaxChanges+5 {
		t.Errorf("over the limit by the changes: cluster %v, %d changes (the caller's plan: %d)", back.Cluster, len(back.Steps[0].Changes), len(p.Steps[0].Changes))
	}
	if _, err := MarshalStored(p, 100); err == nil || !strings.Contains(err.Error(), "over etcd's request size limit of 100 bytes") {
		t.Errorf("a plan that cannot fit: %v", err)
	}

	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPlan(ctx, leader, []byte(`{}`)); !errors.Is(err, storage.ErrNoLeader) {
		t.Errorf("leaderless plan write: %v, want ErrNoLeader", err)
	}
	if got, _ := ReadStored(ctx, s); got.ComputedAt != p.ComputedAt {
		t.Errorf("a leaderless write changed the plan")
	}
}
