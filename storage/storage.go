// Package storage keeps ckegen's state in etcd with CKE's key layout, so
// that CKE's own tools read what ckegen writes.
package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/clientv3util"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/clip"
)

// Keys, relative to the prefix (CKE's layout; the last three are ckegen's
// own, under sabakan/ where CKE keeps nothing of that name).
const (
	KeyCluster               = "cluster"
	KeyClusterRevision       = "cluster-revision"
	KeyConstraints           = "constraints"
	KeySabakanURL            = "sabakan/url"
	KeySabakanTemplate       = "sabakan/template"
	KeySabakanQueryVariables = "sabakan/query-variables"
	KeySabakanDisabled       = "sabakan/disabled"
	KeyLeader                = "leader/"
	KeyRebootsData           = "reboots/data/"
	KeySabakanStatus         = "sabakan/status"
	KeySabakanHistory        = "sabakan/history/"
)

// DefaultPrefix is CKE's default key prefix.
const DefaultPrefix = "/cke/"

// HistoryLimit is how many applied changes are kept.
const HistoryLimit = 100

// Sentinel errors; compare with errors.Is.
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNoLeader: the write was refused because this process no longer
	// holds leadership.
	ErrNoLeader = errors.New("lost leadership")
	// ErrConflict: the cluster changed since it was read.
	ErrConflict = errors.New("cluster changed since it was read")
	// ErrInvalid: a stored value does not parse or validate (as opposed
	// to an etcd error, which is returned as it is).
	ErrInvalid = errors.New("invalid stored value")
)

// Storage reads and writes the keys under one prefix.
type Storage struct {
	Client *clientv3.Client
	Prefix string
}

// New returns a Storage; prefix "" means DefaultPrefix. The prefix always
// ends with "/".
func New(cli *clientv3.Client, prefix string) Storage {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return Storage{Client: cli, Prefix: prefix}
}

// Key returns the full etcd key of k.
func (s Storage) Key(k string) string { return s.Prefix + k }

// get returns a key's value and mod revision, or ErrNotFound.
func (s Storage) get(ctx context.Context, k string) ([]byte, int64, error) {
	resp, err := s.Client.Get(ctx, s.Key(k))
	if err != nil {
		return nil, 0, err
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, fmt.Errorf("%s: %w", k, ErrNotFound)
	}
	return resp.Kvs[0].Value, resp.Kvs[0].ModRevision, nil
}

func (s Storage) put(ctx context.Context, k string, v []byte) error {
	_, err := s.Client.Put(ctx, s.Key(k), string(v))
	return err
}

// GetCluster returns the current cluster and the mod revision of its key
// (for the guarded write), or ErrNotFound, or ErrInvalid when it does not
// parse.
func (s Storage) GetCluster(ctx context.Context) (*cluster.Cluster, int64, error) {
	data, rev, err := s.get(ctx, KeyCluster)
	if err != nil {
		return nil, 0, err
	}
	c, err := parseCluster(data)
	return c, rev, err
}

func parseCluster(data []byte) (*cluster.Cluster, error) {
	c, err := cluster.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("stored %s: %w: %w", KeyCluster, ErrInvalid, err)
	}
	return c, nil
}

// GetClusterRaw returns the stored cluster as stored (JSON).
func (s Storage) GetClusterRaw(ctx context.Context) ([]byte, error) {
	data, _, err := s.get(ctx, KeyCluster)
	return data, err
}

// GetClusterRevision returns the template revision the cluster was built
// from; 0 when unset; ErrInvalid when it is not a decimal number.
func (s Storage) GetClusterRevision(ctx context.Context) (int64, error) {
	data, _, err := s.get(ctx, KeyClusterRevision)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return parseClusterRevision(data)
}

func parseClusterRevision(data []byte) (int64, error) {
	rev, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stored %s: %w: not a decimal revision: %q", KeyClusterRevision, ErrInvalid, data)
	}
	return rev, nil
}

// PutCluster writes the cluster and the template revision it was built
// from in one transaction that succeeds only while leaderKey exists and the
// cluster key's mod revision is still clusterRev (0: the key must not
// exist). It returns the etcd revision of the write, or ErrNoLeader or
// ErrConflict when refused.
func (s Storage) PutCluster(ctx context.Context, leaderKey string, data []byte, clusterRev, templateRev int64) (int64, error) {
	return s.putCluster(ctx, leaderKey, data, clusterRev, templateRev, nil)
}

// PutClusterOwned is PutCluster that also needs the owner and both
// switches unchanged since own was read (docs/beside-cke.md): a write racing a
// takeover, a handback or a switch flip loses with ErrOwnershipChanged,
// so that two integrations never both write the cluster.
func (s Storage) PutClusterOwned(ctx context.Context, leaderKey string, data []byte, clusterRev, templateRev int64, own Ownership) (int64, error) {
	return s.putCluster(ctx, leaderKey, data, clusterRev, templateRev, s.ownershipGuard(own))
}

func (s Storage) putCluster(ctx context.Context, leaderKey string, data []byte, clusterRev, templateRev int64, guard []clientv3.Cmp) (int64, error) {
	cmps := append([]clientv3.Cmp{
		clientv3util.KeyExists(leaderKey),
		clientv3.Compare(clientv3.ModRevision(s.Key(KeyCluster)), "=", clusterRev),
	}, guard...)
	resp, err := s.Client.Txn(ctx).
		If(cmps...).
		Then(
			clientv3.OpPut(s.Key(KeyCluster), string(data)),
			clientv3.OpPut(s.Key(KeyClusterRevision), strconv.FormatInt(templateRev, 10)),
		).
		Else(clientv3.OpGet(leaderKey, clientv3.WithCountOnly()), clientv3.OpGet(s.Key(KeyCluster), clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		return 0, err
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	if resp.Responses[0].GetResponseRange().Count == 0 {
		return 0, ErrNoLeader
	}
	rev := int64(0)
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		rev = kvs[0].ModRevision
	}
	if rev == clusterRev && guard != nil {
		return 0, ErrOwnershipChanged
	}
	return 0, ErrConflict
}

// GetTemplate returns the stored template (JSON) and its mod revision.
func (s Storage) GetTemplate(ctx context.Context) ([]byte, int64, error) {
	return s.get(ctx, KeySabakanTemplate)
}

// SetTemplate stores a template (JSON, validated by the caller).
func (s Storage) SetTemplate(ctx context.Context, data []byte) error {
	return s.put(ctx, KeySabakanTemplate, data)
}

// GetURL returns sabakan's GraphQL URL.
func (s Storage) GetURL(ctx context.Context) (string, error) {
	data, _, err := s.get(ctx, KeySabakanURL)
	return string(data), err
}

// SetURL stores sabakan's GraphQL URL.
func (s Storage) SetURL(ctx context.Context, url string) error {
	return s.put(ctx, KeySabakanURL, []byte(url))
}

// GetQueryVariables returns the user's variables as given.
func (s Storage) GetQueryVariables(ctx context.Context) ([]byte, error) {
	data, _, err := s.get(ctx, KeySabakanQueryVariables)
	return data, err
}

// SetQueryVariables stores the user's variables as given.
func (s Storage) SetQueryVariables(ctx context.Context, data []byte) error {
	return s.put(ctx, KeySabakanQueryVariables, data)
}

// GetConstraints returns the constraints; defaults when unset; ErrInvalid
// when they do not parse.
func (s Storage) GetConstraints(ctx context.Context) (constraints.Constraints, error) {
	data, _, err := s.get(ctx, KeyConstraints)
	if errors.Is(err, ErrNotFound) {
		return constraints.Default(), nil
	}
	if err != nil {
		return constraints.Constraints{}, err
	}
	return parseConstraints(data)
}

func parseConstraints(data []byte) (constraints.Constraints, error) {
	c, err := constraints.Parse(data)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return c, nil
}

// SetConstraints stores constraints (validated by the caller).
func (s Storage) SetConstraints(ctx context.Context, c constraints.Constraints) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.put(ctx, KeyConstraints, data)
}

// IsDisabled reports whether the integration is disabled (false when
// unset; ErrInvalid when neither true nor false).
func (s Storage) IsDisabled(ctx context.Context) (bool, error) {
	data, _, err := s.get(ctx, KeySabakanDisabled)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return parseDisabled(data)
}

func parseDisabled(data []byte) (bool, error) {
	switch string(data) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("stored %s: %w: want true or false, got %q", KeySabakanDisabled, ErrInvalid, data)
}

// SetDisabled stores the disabled flag.
func (s Storage) SetDisabled(ctx context.Context, disabled bool) error {
	return s.put(ctx, KeySabakanDisabled, []byte(strconv.FormatBool(disabled)))
}

// RebootEntry is the part of a CKE reboot queue entry ckegen reads.
type RebootEntry struct {
	Index  int64  `json:"index"`
	Node   string `json:"node"`
	Status string `json:"status"`
}

// RebootingNodes returns the addresses of nodes that CKE's reboot queue
// marks as draining or rebooting. Entries that do not parse are skipped:
// the queue is CKE's, and a bad entry must not stop ckegen.
func (s Storage) RebootingNodes(ctx context.Context) (map[string]bool, error) {
	resp, err := s.Client.Get(ctx, s.Key(KeyRebootsData), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	return rebootingNodes(resp.Kvs), nil
}

func rebootingNodes(kvs []*mvccpb.KeyValue) map[string]bool {
	out := map[string]bool{}
	for _, kv := range kvs {
		var e RebootEntry
		if json.Unmarshal(kv.Value, &e) != nil {
			continue
		}
		if e.Status == "draining" || e.Status == "rebooting" {
			out[e.Node] = true
		}
	}
	return out
}

// Status is the result of the last tick (sabakan/status).
type Status struct {
	Result              string    `json:"result"` // ok, failing or disabled
	Reason              string    `json:"reason,omitempty"`
	Message             string    `json:"message,omitempty"`
	Since               time.Time `json:"since"`
	Time                time.Time `json:"time"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	LastSuccess         time.Time `json:"lastSuccess,omitzero"`
	LastOp              string    `json:"lastOp,omitempty"`
	// LastChanges holds at most MaxChanges of the LastChangeCount changes.
	LastChanges     []Change `json:"lastChanges,omitempty"`
	LastChangeCount int      `json:"lastChangeCount,omitempty"`
	Leader          string   `json:"leader,omitempty"`
	// Warnings are what the operator should fix although the tick went
	// on (at most MaxWarnings).
	Warnings []string `json:"warnings,omitempty"`
	// Kubernetes is what the tick read from the Kubernetes API; nil when
	// the daemon has no Kubernetes access (no --kubeconfig).
	Kubernetes *KubernetesStatus `json:"kubernetes,omitempty"`
	// Placements are the placement policy's placements as the last tick
	// that read the policy left the cluster (docs/design.md 12.4); nil without a
	// policy.
	Placements []PlacementStatus `json:"placements,omitempty"`
	// Model is the constraints model in force at the tick
	// (constraints.CountModel or constraints.RateModel, docs/models.md); "" when
	// the tick did not get to read valid constraints.
	Model string `json:"model,omitempty"`
	// ConstraintsSource says where the constraints came from:
	// ConstraintsStored (the constraints key) or ConstraintsDefault (no
	// key stored: the count model's defaults); "" with Model.
	ConstraintsSource string `json:"constraintsSource,omitempty"`
	// WorkerRate is, in the rate model, the worker rate of the cluster as
	// the last tick that queried sabakan left it, against the
	// minimum-workers-rate in force; nil in the count model, or before
	// sabakan answered.
	WorkerRate *WorkerRate `json:"workerRate,omitempty"`
	// Mode is how the daemon runs (docs/beside-cke.md): "standalone" (no CKE server
	// holds leader/) or "beside-cke"; Owner is the integration's owner
	// (OwnerCKE or OwnerCKEGen). Both "" when the tick did not read them.
	Mode  string `json:"mode,omitempty"`
	Owner string `json:"owner,omitempty"`
	ChangeStatus
}

// Where a tick's constraints came from (Status.ConstraintsSource).
const (
	ConstraintsStored  = "stored"
	ConstraintsDefault = "default"
)

// PlacementStatus is one placement of the policy: the group of its last
// pick and its nodes by group.
type PlacementStatus struct {
	// Placement is the placement's key: "control-plane" or a worker
	// template's role.
	Placement string `json:"placement"`
	// ObservedGroup is the group the last machine added for the placement
	// was picked from (Karmada's observed affinity name); "" until a pick
	// from a group was seen, or when the placement has no groups.
	ObservedGroup string `json:"observedGroup,omitempty"`
	// Groups count the placement's current nodes by group, in the
	// policy's order; the last entry, group "", counts the nodes in none
	// (all of them for a placement without groups).
	Groups []GroupNodes `json:"groups"`
}

// GroupNodes counts a placement's nodes in one of its groups; Group ""
// counts those in none.
type GroupNodes struct {
	Group string `json:"group"`
	Nodes int    `json:"nodes"`
}

// WorkerRate is the rate model's figure as the status keeps it: the
// workers, the machines counted, the percentage and the minimum in force.
type WorkerRate struct {
	Workers  int     `json:"workers"`
	Machines int     `json:"machines"`
	Percent  float64 `json:"percent"`
	Minimum  int     `json:"minimumWorkersRate"`
}

// KubernetesStatus is what a tick learnt from the Kubernetes Nodes.
type KubernetesStatus struct {
	// Read: the tick listed the Nodes.
	Read bool `json:"read"`
	// Nodes is how many Nodes it listed, Intolerable how many of them
	// carried a taint a control plane does not tolerate (docs/design.md 6.4).
	Nodes       int `json:"nodes"`
	Intolerable int `json:"intolerable"`
}

// MaxWarnings is how many warnings a status keeps.
const MaxWarnings = 100

// MaxChanges is how many changes a status or history entry keeps: a first
// cluster of thousands of nodes would not fit in one etcd value.
const MaxChanges = 100

// Change is a change of the cluster as status and history keep it: the
// score is its value (an integer without a policy's metric points), and
// the placement and group are those of a machine added under a policy's
// ordered groups.
type Change struct {
	Action    string   `json:"action"`
	Address   string   `json:"address"`
	Serial    string   `json:"serial,omitempty"`
	Score     *float64 `json:"score"`
	Reason    string   `json:"reason"`
	Placement string   `json:"placement,omitempty"`
	Group     string   `json:"group,omitempty"`
}

// GetStatus returns the last tick's status, or ErrNotFound.
func (s Storage) GetStatus(ctx context.Context) (Status, error) {
	var st Status
	data, _, err := s.get(ctx, KeySabakanStatus)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%s: %w", KeySabakanStatus, err)
	}
	return st, nil
}

// MaxStatusBytes bounds the stored status: a status always fits, however
// many and however long the warnings of a bad inventory are.
const MaxStatusBytes = 256 << 10

// PutStatus stores the status while leaderKey exists, cut to
// MaxStatusBytes (FitStatus).
func (s Storage) PutStatus(ctx context.Context, leaderKey string, st Status) error {
	data, err := FitStatus(st)
	if err != nil {
		return err
	}
	return s.leaderPut(ctx, leaderKey, KeySabakanStatus, data)
}

// FitStatus is st as JSON in at most MaxStatusBytes: when it is larger,
// the warnings are halved (the last line says how many more there were),
// then the list of the last changes is left out (their count stays),
// then the message is cut.
func FitStatus(st Status) ([]byte, error) {
	warnings, dropped := st.Warnings, 0
	for {
		data, err := json.Marshal(st)
		if err != nil || len(data) <= MaxStatusBytes {
			return data, err
		}
		switch {
		case len(warnings) > 1:
			keep := len(warnings) / 2
			dropped += len(warnings) - keep
			warnings = warnings[:keep:keep]
			st.Warnings = append(warnings, fmt.Sprintf("and %d more (the status is limited to %d KiB)", dropped, MaxStatusBytes>>10))
		case len(st.LastChanges) > 0:
			st.LastChanges = nil
		case len(st.Message) > 1024:
			st.Message = clip.Text(st.Message, 1024)
		default:
			return nil, fmt.Errorf("status of %d bytes: over the limit of %d", len(data), MaxStatusBytes)
		}
	}
}

func (s Storage) leaderPut(ctx context.Context, leaderKey, k string, data []byte) error {
	resp, err := s.Client.Txn(ctx).
		If(clientv3util.KeyExists(leaderKey)).
		Then(clientv3.OpPut(s.Key(k), string(data))).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return ErrNoLeader
	}
	return nil
}

// HistoryEntry is one applied change of the cluster (sabakan/history/<id>).
type HistoryEntry struct {
	ID               string    `json:"id"`
	Time             time.Time `json:"time"`
	Op               string    `json:"op"`
	Changes          []Change  `json:"changes"` // at most MaxChanges
	ChangeCount      int       `json:"changeCount"`
	TemplateRevision int64     `json:"templateRevision"`
	ClusterRevision  int64     `json:"clusterRevision"`
	// ReleasedBy says what released the plan this change belongs to: the
	// trigger set to schedule, or the end of the quiet time.
	ReleasedBy string `json:"releasedBy,omitempty"`
}

// AddHistory appends an entry, named after the etcd revision of the
// cluster write so that keys sort by time, and drops the oldest beyond
// HistoryLimit: both in one transaction that needs leaderKey.
func (s Storage) AddHistory(ctx context.Context, leaderKey string, e HistoryEntry) error {
	e.ID = fmt.Sprintf("%016x", e.ClusterRevision)
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key := s.Key(KeySabakanHistory + e.ID)
	resp, err := s.Client.Get(ctx, s.Key(KeySabakanHistory), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return err
	}
	ops := []clientv3.Op{clientv3.OpPut(key, string(data))}
	others := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if string(kv.Key) != key {
			others = append(others, string(kv.Key))
		}
	}
	if excess := len(others) + 1 - HistoryLimit; excess > 0 {
		// One range from the oldest up to the first kept entry (and never
		// over the new one, which a transaction may not both put and
		// delete).
		end := min(others[excess], key)
		ops = append(ops, clientv3.OpDelete(others[0], clientv3.WithRange(end)))
	}
	tresp, err := s.Client.Txn(ctx).If(clientv3util.KeyExists(leaderKey)).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if !tresp.Succeeded {
		return ErrNoLeader
	}
	return nil
}

// History returns the kept entries, oldest first.
func (s Storage) History(ctx context.Context) ([]HistoryEntry, error) {
	resp, err := s.Client.Get(ctx, s.Key(KeySabakanHistory), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, err
	}
	out := make([]HistoryEntry, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var e HistoryEntry
		if err := json.Unmarshal(kv.Value, &e); err != nil {
			return nil, fmt.Errorf("%s: %w", kv.Key, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Holds reports whether the election key leaderKey still exists.
func (s Storage) Holds(ctx context.Context, leaderKey string) (bool, error) {
	resp, err := s.Client.Get(ctx, leaderKey, clientv3.WithCountOnly())
	if err != nil {
		return false, err
	}
	return resp.Count > 0, nil
}

// Leader returns the value of the current leader's election key (the
// leader's name), or ErrNotFound.
func (s Storage) Leader(ctx context.Context) (string, error) {
	resp, err := s.Client.Get(ctx, s.Key(KeyLeader), clientv3.WithFirstCreate()...)
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("leader: %w", ErrNotFound)
	}
	return string(resp.Kvs[0].Value), nil
}

// Snapshot is what one tick reads, all of it in one transaction, so at one
// etcd revision: the settings, the cluster with the template revision it
// was built from, and CKE's reboot queue. Its methods parse the values and
// return ErrNotFound or ErrInvalid; reading it is the only etcd request.
type Snapshot struct {
	// Leading is whether the election key given to Snapshot existed.
	Leading bool
	values  map[string]*mvccpb.KeyValue
	reboots []*mvccpb.KeyValue
	// owner holds the answers of ownershipOps.
	owner []*clientv3.GetResponse
	// clusterNotRead: the cluster's key was read without its value
	// (SnapshotKnowing).
	clusterNotRead bool
}

// snapshotKeys are the single keys a Snapshot holds.
var snapshotKeys = []string{
	KeySabakanDisabled, KeySabakanTemplate, KeySabakanURL, KeySabakanQueryVariables,
	KeyConstraints, KeyCluster, KeyClusterRevision,
	KeySabakanTrigger, KeySabakanQuietTime, KeySabakanMaxUnhealthy,
	KeySabakanPolicy,
}

// Snapshot reads what a tick needs, and whether leaderKey exists, in one
// transaction. A reader that leads nothing (ckecli, the page) gives ""
// and the snapshot is not Leading.
func (s Storage) Snapshot(ctx context.Context, leaderKey string) (*Snapshot, error) {
	return s.SnapshotKnowing(ctx, leaderKey, 0)
}

// SnapshotKnowing is Snapshot for a reader that holds the cluster as
// stored at mod revision clusterRev (0: none): while the cluster's key
// still has that mod revision, its value (megabytes at 10,000 nodes) is
// not read again, and Cluster fails with ErrNotRead; otherwise the
// snapshot reads it, in the same transaction.
func (s Storage) SnapshotKnowing(ctx context.Context, leaderKey string, clusterRev int64) (*Snapshot, error) {
	txn := s.Client.Txn(ctx)
	known := clusterRev > 0
	if known {
		txn = txn.If(clientv3.Compare(clientv3.ModRevision(s.Key(KeyCluster)), "=", clusterRev)).
			Then(s.snapshotOps(leaderKey, true)...).Else(s.snapshotOps(leaderKey, false)...)
	} else {
		txn = txn.Then(s.snapshotOps(leaderKey, false)...)
	}
	resp, err := txn.Commit()
	if err != nil {
		return nil, err
	}
	r := resp.Responses
	o := len(snapshotKeys) + 1 // the first ownership answer
	owners := len(s.ownershipOps())
	snap := &Snapshot{
		Leading:        leaderKey != "" && r[len(r)-1].GetResponseRange().Count > 0,
		values:         make(map[string]*mvccpb.KeyValue, len(snapshotKeys)),
		reboots:        r[o-1].GetResponseRange().Kvs,
		clusterNotRead: known && resp.Succeeded,
	}
	for _, rr := range r[o : o+owners] {
		snap.owner = append(snap.owner, (*clientv3.GetResponse)(rr.GetResponseRange()))
	}
	for i, k := range snapshotKeys {
		if kvs := r[i].GetResponseRange().Kvs; len(kvs) > 0 {
			snap.values[k] = kvs[0]
		}
	}
	return snap, nil
}

// snapshotOps are the reads of a snapshot: the single keys (the cluster's
// without its value when clusterKnown), the reboot queue, the ownership
// keys and, last, leaderKey's existence.
func (s Storage) snapshotOps(leaderKey string, clusterKnown bool) []clientv3.Op {
	ops := make([]clientv3.Op, 0, len(snapshotKeys)+8)
	for _, k := range snapshotKeys {
		if k == KeyCluster && clusterKnown {
			ops = append(ops, clientv3.OpGet(s.Key(k), clientv3.WithKeysOnly()))
			continue
		}
		ops = append(ops, clientv3.OpGet(s.Key(k)))
	}
	ops = append(ops, clientv3.OpGet(s.Key(KeyRebootsData), clientv3.WithPrefix()))
	ops = append(ops, s.ownershipOps()...)
	if leaderKey != "" {
		ops = append(ops, clientv3.OpGet(leaderKey, clientv3.WithCountOnly()))
	}
	return ops
}

// ErrNotRead is the error of a value the snapshot did not read because
// its reader holds it (SnapshotKnowing).
var ErrNotRead = errors.New("not read: the reader holds it")

func (s *Snapshot) get(k string) ([]byte, int64, error) {
	kv, ok := s.values[k]
	if !ok {
		return nil, 0, fmt.Errorf("%s: %w", k, ErrNotFound)
	}
	return kv.Value, kv.ModRevision, nil
}

// Ownership is who writes the cluster and the switches (docs/beside-cke.md), as
// Storage.Ownership reads them, at the snapshot's revision.
func (s *Snapshot) Ownership() (Ownership, error) { return parseOwnership(s.owner) }

// Disabled is the integration's switch (false when unset).
func (s *Snapshot) Disabled() (bool, error) {
	data, _, err := s.get(KeySabakanDisabled)
	if err != nil {
		return false, nil
	}
	return parseDisabled(data)
}

// Template is the stored template (JSON) and its mod revision.
func (s *Snapshot) Template() ([]byte, int64, error) { return s.get(KeySabakanTemplate) }

// URL is sabakan's GraphQL URL.
func (s *Snapshot) URL() (string, error) {
	data, _, err := s.get(KeySabakanURL)
	return string(data), err
}

// QueryVariables are the user's variables as given.
func (s *Snapshot) QueryVariables() ([]byte, error) {
	data, _, err := s.get(KeySabakanQueryVariables)
	return data, err
}

// Constraints are the stored constraints (defaults when unset).
func (s *Snapshot) Constraints() (constraints.Constraints, error) {
	data, _, err := s.get(KeyConstraints)
	if err != nil {
		return constraints.Default(), nil
	}
	return parseConstraints(data)
}

// ConstraintsStored reports whether a constraints key is stored (else
// Constraints returns the defaults).
func (s *Snapshot) ConstraintsStored() bool {
	_, ok := s.values[KeyConstraints]
	return ok
}

// Cluster is the current cluster and the mod revision of its key.
func (s *Snapshot) Cluster() (*cluster.Cluster, int64, error) {
	if s.clusterNotRead {
		return nil, 0, fmt.Errorf("%s: %w", KeyCluster, ErrNotRead)
	}
	data, rev, err := s.get(KeyCluster)
	if err != nil {
		return nil, 0, err
	}
	c, err := parseCluster(data)
	return c, rev, err
}

// ClusterModRevision is the stored cluster's mod revision, 0 when none is
// stored: a caller that parsed the cluster at this revision may keep it.
func (s *Snapshot) ClusterModRevision() int64 {
	_, rev, _ := s.get(KeyCluster)
	return rev
}

// ClusterRevision is the template revision the cluster was built from (0
// when unset).
func (s *Snapshot) ClusterRevision() (int64, error) {
	data, _, err := s.get(KeyClusterRevision)
	if err != nil {
		return 0, nil
	}
	return parseClusterRevision(data)
}

// RebootingNodes are the addresses CKE's reboot queue marks as draining or
// rebooting.
func (s *Snapshot) RebootingNodes() map[string]bool { return rebootingNodes(s.reboots) }
