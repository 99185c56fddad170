package storage

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// KeySabakanPolicy holds the placement policy (docs/design.md 12.1), JSON; ckegen's
// own key.
const KeySabakanPolicy = "sabakan/policy"

// ErrTemplateChanged: the policy was not stored because the template it
// was checked against changed in the meantime.
var ErrTemplateChanged = errors.New("the template changed while the policy was checked against it")

// GetPolicy returns the stored policy (JSON) and its mod revision, or
// ErrNotFound.
func (s Storage) GetPolicy(ctx context.Context) ([]byte, int64, error) {
	resp, err := s.Client.Get(ctx, s.Key(KeySabakanPolicy))
	if err != nil {
		return nil, 0, err
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, fmt.Errorf("%s: %w", KeySabakanPolicy, ErrNotFound)
	}
	return resp.Kvs[0].Value, resp.Kvs[0].ModRevision, nil
}

// SetPolicy stores a policy (JSON, validated by the caller against the
// template whose mod revision is templateRev; 0: no template was stored).
// The write happens only while the template is still that one; otherwise
// it returns ErrTemplateChanged and stores nothing.
func (s Storage) SetPolicy(ctx context.Context, data []byte, templateRev int64) error {
	resp, err := s.Client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(s.Key(KeySabakanTemplate)), "=", templateRev)).
		Then(clientv3.OpPut(s.Key(KeySabakanPolicy), string(data))).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return ErrTemplateChanged
	}
	return nil
}

// ClearPolicy removes the policy; it reports whether there was one.
func (s Storage) ClearPolicy(ctx context.Context) (bool, error) {
	resp, err := s.Client.Delete(ctx, s.Key(KeySabakanPolicy))
	if err != nil {
		return false, err
	}
	return resp.Deleted > 0, nil
}

// Policy is the stored placement policy (JSON) and its mod revision, or
// ErrNotFound. It is checked against the template by the reader.
func (s *Snapshot) Policy() ([]byte, int64, error) { return s.get(KeySabakanPolicy) }
