package storage

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// WithDeadline makes every read and write of cli (Get, Put, Delete, Do
// and Txn) give up after d, unless its own context ends sooner: an etcd
// that stops answering (a hung member, a half-open connection) fails a
// call instead of holding it, and whoever made the call for ever. Watches
// and leases are long-lived by nature and keep their contexts.
func WithDeadline(cli *clientv3.Client, d time.Duration) {
	cli.KV = deadlineKV{KV: cli.KV, d: d}
}

type deadlineKV struct {
	clientv3.KV
	d time.Duration
}

func (k deadlineKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, k.d)
	defer cancel()
	return k.KV.Put(ctx, key, val, opts...)
}

func (k deadlineKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, k.d)
	defer cancel()
	return k.KV.Get(ctx, key, opts...)
}

func (k deadlineKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, k.d)
	defer cancel()
	return k.KV.Delete(ctx, key, opts...)
}

func (k deadlineKV) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, k.d)
	defer cancel()
	return k.KV.Do(ctx, op)
}

// Txn's deadline starts at Commit, which ends it.
func (k deadlineKV) Txn(ctx context.Context) clientv3.Txn {
	return &deadlineTxn{ctx: ctx, kv: k}
}

type deadlineTxn struct {
	ctx              context.Context
	kv               deadlineKV
	cmps             []clientv3.Cmp
	thenOps, elseOps []clientv3.Op
}

func (t *deadlineTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.cmps = append(t.cmps, cs...)
	return t
}

func (t *deadlineTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.thenOps = append(t.thenOps, ops...)
	return t
}

func (t *deadlineTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.elseOps = append(t.elseOps, ops...)
	return t
}

func (t *deadlineTxn) Commit() (*clientv3.TxnResponse, error) {
	ctx, cancel := context.WithTimeout(t.ctx, t.kv.d)
	defer cancel()
	return t.kv.KV.Txn(ctx).If(t.cmps...).Then(t.thenOps...).Else(t.elseOps...).Commit()
}
