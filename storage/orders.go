package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// KeyCKEGenOrders is what is on order (`ckegenctl sabakan order`): an
// Orders document the leader's forecast assumes (docs/forecast.md).
const KeyCKEGenOrders = "sabakan/ckegen/orders"

// Orders is what is on order, oldest first. NextID is the ID the next
// order gets (0: one more than the largest present): it only grows, so
// an ID removed is never given again.
type Orders struct {
	Orders []Order `json:"orders"`
	NextID int     `json:"nextID,omitempty"`
}

// Order is machines ordered: Spec is an --assume-new spec (rack, role,
// count, from, product, retire; assume.ParseNew reads it), ID a number
// no other order of the document has had, Added when it was stored.
type Order struct {
	ID    int       `json:"id"`
	Spec  string    `json:"spec"`
	Added time.Time `json:"added"`
}

// GetOrders returns what is on order and the value it was read from (to
// guard a change with GuardOf); none stored is an empty list.
func (s Storage) GetOrders(ctx context.Context) (Orders, Value, error) {
	var o Orders
	v, err := s.Get(ctx, KeyCKEGenOrders)
	switch {
	case errors.Is(err, ErrNotFound):
		return Orders{Orders: []Order{}}, Value{}, nil
	case err != nil:
		return o, v, err
	}
	if err := json.Unmarshal(v.Data, &o); err != nil {
		return o, v, fmt.Errorf("%s: %w", KeyCKEGenOrders, err)
	}
	return o, v, nil
}

// PutOrders stores o if the orders are still as read (was, from
// GetOrders); otherwise it writes nothing and returns a *ChangedError.
func (s Storage) PutOrders(ctx context.Context, was Value, o Orders) error {
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return s.Swap(ctx, []Guard{GuardOf(KeyCKEGenOrders, was)}, Write{Key: KeyCKEGenOrders, Data: data})
}
