// Package storage keeps ckegen's state in etcd with CKE's key layout, so
// that CKE's own tools read what ckegen writes.
//
// It knows keys and transactions: values are bytes with the mod revision
// they were read at, and every write that relies on what was read is
// guarded on those revisions. What a value means is the business of the
// layer above (intake's table of settings parses each one); the records
// ckegen writes for itself (the status, the history) are its own.
package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/clientv3util"
)

// NoSpace reports whether etcd refused a write because its database is
// full (alarm NOSPACE, over --quota-backend-bytes): reads still work,
// and no write will until an operator frees space.
func NoSpace(err error) bool {
	return errors.Is(err, rpctypes.ErrNoSpace) || errors.Is(err, rpctypes.ErrGRPCNoSpace)
}

// Keys, relative to the prefix. CKE's own come first; ckegen's live under
// sabakan/, where CKE keeps nothing of these names.
const (
	KeyCluster               = "cluster"
	KeyClusterRevision       = "cluster-revision"
	KeyConstraints           = "constraints"
	KeySabakanURL            = "sabakan/url"
	KeySabakanTemplate       = "sabakan/template"
	KeySabakanQueryVariables = "sabakan/query-variables"
	KeySabakanDisabled       = "sabakan/disabled"
	// KeyLeader is CKE's server's election prefix (read only).
	KeyLeader = "leader/"
	// KeyRebootsData is CKE's reboot queue (read only).
	KeyRebootsData = "reboots/data/"
	// KeyCKEStatus is CKE's server's phase and its time, written by its
	// leader (read only).
	KeyCKEStatus = "status"

	// KeySabakanStatus is the last tick's Status.
	KeySabakanStatus = "sabakan/status"
	// KeySabakanHistory holds one HistoryEntry per cluster write.
	KeySabakanHistory = "sabakan/history/"
	// KeySabakanTrigger is "planning" or "schedule" (docs/design.md 11.2).
	KeySabakanTrigger = "sabakan/trigger"
	// KeySabakanPlan is the last plan the leader computed (11.1).
	KeySabakanPlan = "sabakan/plan"
	// KeySabakanQuietTime is a Go duration (11.3).
	KeySabakanQuietTime = "sabakan/quiet-time"
	// KeySabakanMaxUnhealthy is a count or a percentage (11.4).
	KeySabakanMaxUnhealthy = "sabakan/max-unhealthy"
	// KeySabakanPolicy is the placement policy, JSON (12.1).
	KeySabakanPolicy = "sabakan/policy"
	// KeyOwner says which integration writes the cluster beside a CKE
	// server: cke (or absent) or ckegen (docs/beside-cke.md).
	KeyOwner = "sabakan/owner"
	// KeyCKEGenDisabled is ckegen's own switch while it owns the
	// integration.
	KeyCKEGenDisabled = "sabakan/ckegen/disabled"
	// KeyCKEGenLeader is ckegen's election prefix.
	KeyCKEGenLeader = "sabakan/ckegen/leader/"
	// KeyCKEGenMemory is what the leading tick carries to the next one,
	// kept for the next leader (docs/design.md 7).
	KeyCKEGenMemory = "sabakan/ckegen/memory"
)

// DefaultPrefix is CKE's default key prefix.
const DefaultPrefix = "/cke/"

// Sentinel errors; compare with errors.Is.
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNoLeader: the write was refused because this process no longer
	// holds leadership.
	ErrNoLeader = errors.New("lost leadership")
	// ErrConflict: a key a guarded write relies on changed since it was
	// read (*ChangedError says which).
	ErrConflict = errors.New("changed since it was read")
	// ErrInvalid: a stored value does not parse or validate. Storage
	// itself parses nothing: the layers that read values wrap it, so
	// that an invalid value is told from an etcd error.
	ErrInvalid = errors.New("invalid stored value")
)

// ChangedError is the error of a guarded write that lost: Key changed
// since it was read. It wraps ErrConflict.
type ChangedError struct{ Key string }

func (e *ChangedError) Error() string { return e.Key + ": " + ErrConflict.Error() }
func (e *ChangedError) Unwrap() error { return ErrConflict }

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

// Value is a key's value and the mod revision it was read at; a Value of
// mod revision 0 is a key that does not exist.
type Value struct {
	Data        []byte
	ModRevision int64
}

// Exists reports whether the key existed.
func (v Value) Exists() bool { return v.ModRevision != 0 }

// Get returns k's value, or ErrNotFound.
func (s Storage) Get(ctx context.Context, k string) (Value, error) {
	resp, err := s.Client.Get(ctx, s.Key(k))
	if err != nil {
		return Value{}, err
	}
	if len(resp.Kvs) == 0 {
		return Value{}, fmt.Errorf("%s: %w", k, ErrNotFound)
	}
	return Value{Data: resp.Kvs[0].Value, ModRevision: resp.Kvs[0].ModRevision}, nil
}

// Put stores data under k, whatever was there.
func (s Storage) Put(ctx context.Context, k string, data []byte) error {
	_, err := s.Client.Put(ctx, s.Key(k), string(data))
	return err
}

// Guard is a key a write relies on: its mod revision must still be
// ModRevision (0: the key must not exist).
type Guard struct {
	Key         string
	ModRevision int64
}

// GuardOf is the guard of v as read under k.
func GuardOf(k string, v Value) Guard { return Guard{Key: k, ModRevision: v.ModRevision} }

// Write is one key a guarded write sets; Delete removes it instead.
type Write struct {
	Key    string
	Data   []byte
	Delete bool
}

// Swap makes writes in one transaction that succeeds only if every
// guard still holds; otherwise it writes nothing and returns a
// *ChangedError naming the first guarded key that changed. Every
// read-modify-write of a setting goes through it.
func (s Storage) Swap(ctx context.Context, guards []Guard, writes ...Write) error {
	ops := make([]clientv3.Op, len(writes))
	for i, c := range writes {
		if c.Delete {
			ops[i] = clientv3.OpDelete(s.Key(c.Key))
		} else {
			ops[i] = clientv3.OpPut(s.Key(c.Key), string(c.Data))
		}
	}
	resp, err := s.Client.Txn(ctx).If(s.compare(guards)...).Then(ops...).Else(s.revisions(guards)...).Commit()
	if err != nil {
		return err
	}
	if resp.Succeeded {
		return nil
	}
	return s.changed(guards, resp.Responses)
}

func (s Storage) compare(guards []Guard) []clientv3.Cmp {
	cmps := make([]clientv3.Cmp, len(guards))
	for i, g := range guards {
		cmps[i] = clientv3.Compare(clientv3.ModRevision(s.Key(g.Key)), "=", g.ModRevision)
	}
	return cmps
}

// revisions reads the guarded keys (without their values) when a guarded
// write loses, to say which one changed.
func (s Storage) revisions(guards []Guard) []clientv3.Op {
	ops := make([]clientv3.Op, len(guards))
	for i, g := range guards {
		ops[i] = clientv3.OpGet(s.Key(g.Key), clientv3.WithKeysOnly())
	}
	return ops
}

// changed is the error of a guarded write that lost, from the answers of
// revisions.
func (s Storage) changed(guards []Guard, rs []*pb.ResponseOp) error {
	for i, g := range guards {
		rev := int64(0)
		if kvs := rs[i].GetResponseRange().Kvs; len(kvs) > 0 {
			rev = kvs[0].ModRevision
		}
		if rev != g.ModRevision {
			return &ChangedError{Key: g.Key}
		}
	}
	// Changed and changed back between the compare and the read.
	return &ChangedError{Key: guards[0].Key}
}

// requestFraming bounds what etcd counts in a request besides its keys and
// values: the transaction's framing and the request header (about 100
// bytes measured with etcd 3.6).
const requestFraming = 256

// ClusterWriteOverhead is what PutCluster's etcd request holds besides
// the cluster: the leader key (compared, and read when refused), the
// cluster key (compared, put, and read when refused), cluster-revision
// and its value, the owner and both switches (compared with their
// revisions, and read when refused), and the framing. etcd refuses a
// request over its --max-request-bytes as a whole, so a cluster only this
// much below the limit would fail in etcd.
func (s Storage) ClusterWriteOverhead(leaderKey string) int {
	guard := 2*(len(s.Key(KeyOwner))+len(s.Key(KeySabakanDisabled))+len(s.Key(KeyCKEGenDisabled))) + 3*12
	return 2*len(leaderKey) + 3*len(s.Key(KeyCluster)) + len(s.Key(KeyClusterRevision)) + 20 + guard + requestFraming
}

// PutCluster writes the cluster and the template revision it was built
// from in one transaction that succeeds only while leaderKey exists, the
// cluster key's mod revision is still clusterRev (0: the key must not
// exist) and every other guard holds. It returns the etcd revision of the
// write; ErrNoLeader, or a *ChangedError when refused.
func (s Storage) PutCluster(ctx context.Context, leaderKey string, data []byte, clusterRev, templateRev int64, guards ...Guard) (int64, error) {
	guards = append([]Guard{{Key: KeyCluster, ModRevision: clusterRev}}, guards...)
	cmps := append([]clientv3.Cmp{clientv3util.KeyExists(leaderKey)}, s.compare(guards)...)
	resp, err := s.Client.Txn(ctx).
		If(cmps...).
		Then(
			clientv3.OpPut(s.Key(KeyCluster), string(data)),
			clientv3.OpPut(s.Key(KeyClusterRevision), strconv.FormatInt(templateRev, 10)),
		).
		Else(append([]clientv3.Op{clientv3.OpGet(leaderKey, clientv3.WithCountOnly())}, s.revisions(guards)...)...).
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
	return 0, s.changed(guards, resp.Responses[1:])
}

// PutLeading makes writes while leaderKey exists, in one transaction;
// ErrNoLeader otherwise.
func (s Storage) PutLeading(ctx context.Context, leaderKey string, writes ...Write) error {
	ops := make([]clientv3.Op, len(writes))
	for i, c := range writes {
		ops[i] = clientv3.OpPut(s.Key(c.Key), string(c.Data))
	}
	resp, err := s.Client.Txn(ctx).If(clientv3util.KeyExists(leaderKey)).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return ErrNoLeader
	}
	return nil
}

// Holds reports whether the election key leaderKey still exists.
func (s Storage) Holds(ctx context.Context, leaderKey string) (bool, error) {
	resp, err := s.Client.Get(ctx, leaderKey, clientv3.WithCountOnly())
	if err != nil {
		return false, err
	}
	return resp.Count > 0, nil
}

// CKEGenLeader returns the name of ckegen's leading daemon, or ErrNotFound.
func (s Storage) CKEGenLeader(ctx context.Context) (string, error) {
	return s.leaderOf(ctx, KeyCKEGenLeader)
}

// CKELeader returns the name of CKE's leading server, or ErrNotFound.
func (s Storage) CKELeader(ctx context.Context) (string, error) {
	return s.leaderOf(ctx, KeyLeader)
}

func (s Storage) leaderOf(ctx context.Context, prefix string) (string, error) {
	resp, err := s.Client.Get(ctx, s.Key(prefix), clientv3.WithFirstCreate()...)
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("%s: %w", prefix, ErrNotFound)
	}
	return string(resp.Kvs[0].Value), nil
}
