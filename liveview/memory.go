package liveview

import (
	"context"
	"errors"
	"fmt"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/storage"
)

// ReadMemory reads the memory the leader stored with its last status
// (none: an empty memory), for a view that decides as the leader does.
func ReadMemory(ctx context.Context, st storage.Storage) (decision.Memory, error) {
	var m decision.Memory
	v, err := st.Get(ctx, storage.KeyCKEGenMemory)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return m, nil
	case err != nil:
		return m, err
	}
	if err := m.Recall(v); err != nil {
		return m, fmt.Errorf("%w: %w", storage.ErrInvalid, err)
	}
	return m, nil
}

// leaderView is the Kubernetes view the leader last decided with, as a
// view that decides as it does takes it (nil: the leader has none).
func leaderView(m decision.Memory) kubenodes.Kubernetes {
	if m.Kubernetes == nil {
		return nil
	}
	v := *m.Kubernetes
	v.Source = "the leader's view, from " + v.Source
	return v
}
