package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Presence: every process that runs ckegen (its daemon, or CKE's server
// with ckegen inside) records itself under KeyPresence, in a key tied to
// the lease of the etcd session it campaigns with. The key is named after
// that lease, as the election key is (etcd's election names its key
// after the session's lease), so the record of whoever leads an election
// is found from the election key alone, and it is gone when the process
// (its session) is. A server under leader/ whose lease has no record runs
// no ckegen that records itself: CKE's own binary, or a cke built from an
// older ckegen; etcd cannot tell those two apart.
const (
	// KeyPresence holds one Presence per running process of ckegen,
	// named after its session's lease in hexadecimal.
	KeyPresence = "sabakan/ckegen/presence/"
)

// Kinds of a Presence.
const (
	// PresenceDaemon is ckegen's daemon; its election is
	// KeyCKEGenLeader.
	PresenceDaemon = "daemon"
	// PresenceInsideCKE is CKE's server with ckegen inside; its election
	// is CKE's KeyLeader.
	PresenceInsideCKE = "inside-cke"
)

// Presence is the record a process running ckegen keeps while it runs:
// who it is and which build, so that a view names who acts and a later
// release can tell which version leads.
type Presence struct {
	// Name is the name the process campaigns with (CKE's server: its
	// host name).
	Name string `json:"name"`
	// Kind is PresenceDaemon or PresenceInsideCKE.
	Kind string `json:"kind"`
	// Version and Commit are ckegen's; CKEVersion is the CKE release the
	// build is made for.
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	CKEVersion string `json:"ckeVersion"`
	// Since is when the process wrote the record (its session began).
	Since time.Time `json:"since"`
	// Unreadable, read from a record that does not parse, says so and
	// why; the other fields are then empty.
	Unreadable string `json:"unreadable,omitempty"`
}

// PresenceKey is the key of the record tied to lease.
func PresenceKey(lease clientv3.LeaseID) string {
	return KeyPresence + strconv.FormatInt(int64(lease), 16)
}

// PutPresence records p under lease: the key goes when the lease does.
func (s Storage) PutPresence(ctx context.Context, lease clientv3.LeaseID, p Presence) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = s.Client.Put(ctx, s.Key(PresenceKey(lease)), string(data), clientv3.WithLease(lease))
	return err
}

// Elected is the key that leads an election: the first created under
// its prefix.
type Elected struct {
	// Name is the key's value, the name its holder campaigned with.
	Name string
	// Key is the full etcd key; Lease its lease.
	Key   string
	Lease clientv3.LeaseID
}

// Leaders is what the views read of who acts, in one transaction: the
// leader of each election (nil: nobody holds a key), the records of
// presence by lease, and the lease of CKE's status key (0: no key).
type Leaders struct {
	CKE, CKEGen    *Elected
	Presences      map[clientv3.LeaseID]Presence
	CKEStatusLease clientv3.LeaseID
	// Revision is the etcd revision the transaction read at.
	Revision int64
}

// ReadLeaders reads both elections, every record of presence and the
// lease of CKE's status key in one transaction. A record that does not
// parse is kept as its Unreadable: a process of ckegen keeps it, but
// which one is not known.
func (s Storage) ReadLeaders(ctx context.Context) (Leaders, error) {
	resp, err := s.Client.Txn(ctx).Then(
		clientv3.OpGet(s.Key(KeyLeader), clientv3.WithFirstCreate()...),
		clientv3.OpGet(s.Key(KeyCKEGenLeader), clientv3.WithFirstCreate()...),
		clientv3.OpGet(s.Key(KeyPresence), clientv3.WithPrefix()),
		// Not keys only: etcd 3.7 answers those without their lease.
		clientv3.OpGet(s.Key(KeyCKEStatus)),
	).Commit()
	if err != nil {
		return Leaders{}, err
	}
	l := Leaders{Presences: map[clientv3.LeaseID]Presence{}, Revision: resp.Header.Revision}
	elected := func(i int) *Elected {
		kvs := resp.Responses[i].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return nil
		}
		return &Elected{Name: string(kvs[0].Value), Key: string(kvs[0].Key), Lease: clientv3.LeaseID(kvs[0].Lease)}
	}
	l.CKE, l.CKEGen = elected(0), elected(1)
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		var p Presence
		if err := json.Unmarshal(kv.Value, &p); err != nil {
			p = Presence{Unreadable: fmt.Sprintf("%s does not parse: %v", strings.TrimPrefix(string(kv.Key), s.Prefix), err)}
		}
		if kv.Lease != 0 {
			l.Presences[clientv3.LeaseID(kv.Lease)] = p
		}
	}
	if kvs := resp.Responses[3].GetResponseRange().Kvs; len(kvs) > 0 {
		l.CKEStatusLease = clientv3.LeaseID(kvs[0].Lease)
	}
	return l, nil
}

// LeaseLeft is how long lease has left before it expires, and the TTL
// it was granted; 0, 0 when it is gone.
func (s Storage) LeaseLeft(ctx context.Context, lease clientv3.LeaseID) (left, granted time.Duration, err error) {
	resp, err := s.Client.TimeToLive(ctx, lease)
	if err != nil {
		return 0, 0, fmt.Errorf("lease %x: %w", int64(lease), err)
	}
	if resp.TTL <= 0 {
		return 0, 0, nil
	}
	return time.Duration(resp.TTL) * time.Second, time.Duration(resp.GrantedTTL) * time.Second, nil
}
