package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Running beside a real CKE server (docs/beside-cke.md): who writes `cluster`, ckegen's
// own switch and election, and the CKE server's phase.
const (
	// KeyOwner says which integration writes `cluster`: OwnerCKE (or
	// absent) or OwnerCKEGen.
	KeyOwner = "sabakan/owner"
	// KeyCKEGenDisabled is ckegen's own switch while it owns the
	// integration (CKE's sabakan/disabled is then true).
	KeyCKEGenDisabled = "sabakan/ckegen/disabled"
	// KeyCKEGenLeader is ckegen's election prefix; CKE's server elects on
	// KeyLeader, which ckegen only reads.
	KeyCKEGenLeader = "sabakan/ckegen/leader/"
	// KeyCKEStatus is the CKE server's phase and its time, written by its
	// leader (read only).
	KeyCKEStatus = "status"
)

// Modes of ckegen's daemon (Status.Mode): standalone when no CKE server
// holds leader/, else beside CKE's server.
const (
	ModeStandalone = "standalone"
	ModeBesideCKE  = "beside-cke"
)

// Owners.
const (
	OwnerCKE    = "cke"
	OwnerCKEGen = "ckegen"
)

// ErrOwnershipChanged: the owner or a switch changed between the read and
// the guarded write.
var ErrOwnershipChanged = errors.New("the integration's owner or switch changed since it was read")

// CKEStatus is the CKE server's status key: its phase and when it was
// written.
type CKEStatus struct {
	Phase     string    `json:"phase"`
	Timestamp time.Time `json:"timestamp"`
}

// Ownership is the state of the keys that decide whether ckegen may write
// `cluster`, with the mod revisions a guarded write compares (0: absent).
type Ownership struct {
	// Owner is OwnerCKE when the key is absent.
	Owner    string
	OwnerRev int64
	// CKEDisabled is CKE's sabakan/disabled (false when absent).
	CKEDisabled    bool
	CKEDisabledRev int64
	// CKEGenDisabled is ckegen's own switch (false when absent).
	CKEGenDisabled    bool
	CKEGenDisabledRev int64
	// CKEServer: a key exists under CKE's leader/ (a CKE server runs).
	CKEServer bool
	// CKEStatus is CKE's status key, nil when absent.
	CKEStatus *CKEStatus
}

// OwnedByCKEGen reports whether ckegen owns the integration.
func (o Ownership) OwnedByCKEGen() bool { return o.Owner == OwnerCKEGen }

// HandedBack reports whether sabakan/owner says cke explicitly (a
// handback wrote it): CKE owns the integration even while no CKE server
// runs, since its server may only be restarting.
func (o Ownership) HandedBack() bool { return o.Owner == OwnerCKE && o.OwnerRev != 0 }

// ownershipOps reads what Ownership holds; parseOwnership reads their
// answers back.
func (s Storage) ownershipOps() []clientv3.Op {
	return []clientv3.Op{
		clientv3.OpGet(s.Key(KeyOwner)),
		clientv3.OpGet(s.Key(KeySabakanDisabled)),
		clientv3.OpGet(s.Key(KeyCKEGenDisabled)),
		clientv3.OpGet(s.Key(KeyLeader), clientv3.WithPrefix(), clientv3.WithCountOnly()),
		clientv3.OpGet(s.Key(KeyCKEStatus)),
	}
}

func first(r *clientv3.GetResponse) *mvccpb.KeyValue {
	if len(r.Kvs) == 0 {
		return nil
	}
	return r.Kvs[0]
}

func parseOwnership(rs []*clientv3.GetResponse) (Ownership, error) {
	o := Ownership{Owner: OwnerCKE}
	if kv := first(rs[0]); kv != nil {
		switch v := string(kv.Value); v {
		case OwnerCKE, OwnerCKEGen:
			o.Owner = v
		default:
			return o, fmt.Errorf("stored %s: %w: want %q or %q, got %q", KeyOwner, ErrInvalid, OwnerCKE, OwnerCKEGen, v)
		}
		o.OwnerRev = kv.ModRevision
	}
	var err error
	if kv := first(rs[1]); kv != nil {
		if o.CKEDisabled, err = parseDisabled(kv.Value); err != nil {
			return o, err
		}
		o.CKEDisabledRev = kv.ModRevision
	}
	if kv := first(rs[2]); kv != nil {
		v, perr := strconv.ParseBool(string(kv.Value))
		if perr != nil || (string(kv.Value) != "true" && string(kv.Value) != "false") {
			return o, fmt.Errorf("stored %s: %w: want true or false, got %q", KeyCKEGenDisabled, ErrInvalid, kv.Value)
		}
		o.CKEGenDisabled, o.CKEGenDisabledRev = v, kv.ModRevision
	}
	o.CKEServer = rs[3].Count > 0
	if kv := first(rs[4]); kv != nil {
		var st CKEStatus
		// CKE's own value; a value that does not parse is a status of no
		// phase, which never allows a write.
		if json.Unmarshal(kv.Value, &st) != nil {
			st = CKEStatus{}
		}
		o.CKEStatus = &st
	}
	return o, nil
}

// Ownership reads the owner, both switches, whether a CKE server runs and
// its status, in one transaction.
func (s Storage) Ownership(ctx context.Context) (Ownership, error) {
	resp, err := s.Client.Txn(ctx).Then(s.ownershipOps()...).Commit()
	if err != nil {
		return Ownership{}, err
	}
	rs := make([]*clientv3.GetResponse, len(resp.Responses))
	for i, r := range resp.Responses {
		rs[i] = (*clientv3.GetResponse)(r.GetResponseRange())
	}
	return parseOwnership(rs)
}

// ownershipGuard compares what a write that relies on o must find
// unchanged: the owner and both switches.
func (s Storage) ownershipGuard(o Ownership) []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(s.Key(KeyOwner)), "=", o.OwnerRev),
		clientv3.Compare(clientv3.ModRevision(s.Key(KeySabakanDisabled)), "=", o.CKEDisabledRev),
		clientv3.Compare(clientv3.ModRevision(s.Key(KeyCKEGenDisabled)), "=", o.CKEGenDisabledRev),
	}
}

// Takeover makes ckegen the owner: sabakan/owner ckegen and CKE's
// sabakan/disabled true (which stops CKE's own integration), in one
// transaction that succeeds only if neither changed since o was read.
func (s Storage) Takeover(ctx context.Context, o Ownership) error {
	return s.setOwner(ctx, o, OwnerCKEGen, true)
}

// Handback gives the integration back to CKE: sabakan/owner cke and CKE's
// sabakan/disabled false, in one transaction guarded like Takeover's.
func (s Storage) Handback(ctx context.Context, o Ownership) error {
	return s.setOwner(ctx, o, OwnerCKE, false)
}

func (s Storage) setOwner(ctx context.Context, o Ownership, owner string, ckeDisabled bool) error {
	resp, err := s.Client.Txn(ctx).
		If(s.ownershipGuard(o)...).
		Then(
			clientv3.OpPut(s.Key(KeyOwner), owner),
			clientv3.OpPut(s.Key(KeySabakanDisabled), strconv.FormatBool(ckeDisabled)),
		).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return ErrOwnershipChanged
	}
	return nil
}

// SetCKEGenDisabled sets ckegen's own switch.
func (s Storage) SetCKEGenDisabled(ctx context.Context, disabled bool) error {
	return s.put(ctx, KeyCKEGenDisabled, []byte(strconv.FormatBool(disabled)))
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
