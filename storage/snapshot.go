package storage

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Request says what a Snapshot reads, all of it in one transaction.
type Request struct {
	// LeaderKey is an election key whose existence is read (Snapshot.
	// Leading); "" for a reader that leads nothing.
	LeaderKey string
	// Keys are single keys, read with their values.
	Keys []string
	// Prefixes are read whole: every key under each, with its value.
	Prefixes []string
	// Counts are prefixes of which only the number of keys is read.
	Counts []string
	// Held is a key of Keys whose value the reader holds as it was at
	// HeldRevision: while its mod revision is still that one its value
	// (megabytes for a 10,000-node cluster) is not read again.
	Held         string
	HeldRevision int64
}

// KeyValue is a key under a prefix, relative to the storage's prefix,
// with its value.
type KeyValue struct {
	Key string
	Value
}

// Snapshot is what one Request read, at one etcd revision.
type Snapshot struct {
	// Leading is whether the request's LeaderKey existed.
	Leading bool
	// Revision is the etcd revision the snapshot was read at.
	Revision int64
	values   map[string]Value
	prefixes map[string][]KeyValue
	counts   map[string]int64
	// notRead is the held key when its value was not read.
	notRead string
}

// Get is the value of a key of the request (a Value of mod revision 0
// when it does not exist). When the key is the held one and unchanged,
// the Value has its mod revision and no data: the reader has it.
func (s *Snapshot) Get(k string) Value { return s.values[k] }

// NotRead reports whether k's value was left out because the reader holds
// it at its current mod revision.
func (s *Snapshot) NotRead(k string) bool { return s.notRead != "" && s.notRead == k }

// Under lists the keys under a prefix of the request, in key order.
func (s *Snapshot) Under(prefix string) []KeyValue { return s.prefixes[prefix] }

// Count is the number of keys under a prefix of the request's Counts.
func (s *Snapshot) Count(prefix string) int64 { return s.counts[prefix] }

// Read reads what r asks for in one transaction.
func (s Storage) Read(ctx context.Context, r Request) (*Snapshot, error) {
	txn := s.Client.Txn(ctx)
	held := r.Held != "" && r.HeldRevision > 0
	if held {
		txn = txn.If(clientv3.Compare(clientv3.ModRevision(s.Key(r.Held)), "=", r.HeldRevision)).
			Then(s.readOps(r, true)...).Else(s.readOps(r, false)...)
	} else {
		txn = txn.Then(s.readOps(r, false)...)
	}
	resp, err := txn.Commit()
	if err != nil {
		return nil, err
	}
	rs := resp.Responses
	want := len(r.Keys) + len(r.Prefixes) + len(r.Counts)
	if r.LeaderKey != "" {
		want++
	}
	if len(rs) != want {
		return nil, fmt.Errorf("snapshot: %d answers to %d reads", len(rs), want)
	}
	snap := &Snapshot{
		Revision: resp.Header.Revision,
		values:   make(map[string]Value, len(r.Keys)),
		prefixes: make(map[string][]KeyValue, len(r.Prefixes)),
		counts:   make(map[string]int64, len(r.Counts)),
	}
	if held && resp.Succeeded {
		snap.notRead = r.Held
	}
	i := 0
	for _, k := range r.Keys {
		if kvs := rs[i].GetResponseRange().Kvs; len(kvs) > 0 {
			snap.values[k] = Value{Data: kvs[0].Value, ModRevision: kvs[0].ModRevision}
		}
		i++
	}
	for _, p := range r.Prefixes {
		kvs := rs[i].GetResponseRange().Kvs
		list := make([]KeyValue, len(kvs))
		for j, kv := range kvs {
			list[j] = KeyValue{Key: string(kv.Key[len(s.Prefix):]), Value: Value{Data: kv.Value, ModRevision: kv.ModRevision}}
		}
		snap.prefixes[p] = list
		i++
	}
	for _, p := range r.Counts {
		snap.counts[p] = rs[i].GetResponseRange().Count
		i++
	}
	if r.LeaderKey != "" {
		snap.Leading = rs[i].GetResponseRange().Count > 0
	}
	return snap, nil
}

// readOps are the reads of r, in the order Read takes their answers; the
// held key without its value when heldUnchanged.
func (s Storage) readOps(r Request, heldUnchanged bool) []clientv3.Op {
	ops := make([]clientv3.Op, 0, len(r.Keys)+len(r.Prefixes)+len(r.Counts)+1)
	for _, k := range r.Keys {
		if heldUnchanged && k == r.Held {
			ops = append(ops, clientv3.OpGet(s.Key(k), clientv3.WithKeysOnly()))
			continue
		}
		ops = append(ops, clientv3.OpGet(s.Key(k)))
	}
	for _, p := range r.Prefixes {
		ops = append(ops, clientv3.OpGet(s.Key(p), clientv3.WithPrefix()))
	}
	for _, p := range r.Counts {
		ops = append(ops, clientv3.OpGet(s.Key(p), clientv3.WithPrefix(), clientv3.WithCountOnly()))
	}
	if r.LeaderKey != "" {
		ops = append(ops, clientv3.OpGet(r.LeaderKey, clientv3.WithCountOnly()))
	}
	return ops
}
