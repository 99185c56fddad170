package sitetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/storage"
)

// Store is a storage with typed getters and setters of the settings, for
// tests that arrange a site and look at what a tick wrote. The product
// reads settings through intake's table and writes them through the
// CLI; a test states them directly.
type Store struct{ storage.Storage }

// StoreOf wraps st.
func StoreOf(st storage.Storage) Store { return Store{st} }

// SetTemplate stores a template (JSON) as is.
func (s Store) SetTemplate(ctx context.Context, data []byte) error {
	return s.Put(ctx, storage.KeySabakanTemplate, data)
}

// GetTemplate returns the stored template and its mod revision.
func (s Store) GetTemplate(ctx context.Context) ([]byte, int64, error) {
	v, err := s.Get(ctx, storage.KeySabakanTemplate)
	return v.Data, v.ModRevision, err
}

// SetURL stores sabakan's URL as is.
func (s Store) SetURL(ctx context.Context, url string) error {
	return s.Put(ctx, storage.KeySabakanURL, []byte(url))
}

// GetURL returns the stored URL.
func (s Store) GetURL(ctx context.Context) (string, error) {
	v, err := s.Get(ctx, storage.KeySabakanURL)
	return string(v.Data), err
}

// SetQueryVariables stores query variables as given.
func (s Store) SetQueryVariables(ctx context.Context, data []byte) error {
	return s.Put(ctx, storage.KeySabakanQueryVariables, data)
}

// SetConstraints stores c as ckegenctl stores constraints.
func (s Store) SetConstraints(ctx context.Context, c constraints.Constraints) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.Put(ctx, storage.KeyConstraints, data)
}

// GetConstraints returns the stored constraints; the defaults when none
// are stored.
func (s Store) GetConstraints(ctx context.Context) (constraints.Constraints, error) {
	v, err := s.Get(ctx, storage.KeyConstraints)
	if errors.Is(err, storage.ErrNotFound) {
		return constraints.Default(), nil
	}
	if err != nil {
		return constraints.Constraints{}, err
	}
	return constraints.Parse(v.Data)
}

// SetDisabled stores CKE's switch.
func (s Store) SetDisabled(ctx context.Context, disabled bool) error {
	return s.Put(ctx, storage.KeySabakanDisabled, []byte(strconv.FormatBool(disabled)))
}

// SetCKEGenDisabled stores ckegen's own switch.
func (s Store) SetCKEGenDisabled(ctx context.Context, disabled bool) error {
	return s.Put(ctx, storage.KeyCKEGenDisabled, []byte(strconv.FormatBool(disabled)))
}

// SetTrigger stores the trigger as is.
func (s Store) SetTrigger(ctx context.Context, trigger string) error {
	return s.Put(ctx, storage.KeySabakanTrigger, []byte(trigger))
}

// SetQuietTime stores the quiet time as ckegenctl does.
func (s Store) SetQuietTime(ctx context.Context, d time.Duration) error {
	return s.Put(ctx, storage.KeySabakanQuietTime, []byte(d.String()))
}

// SetMaxUnhealthy stores the limit as ckegenctl does.
func (s Store) SetMaxUnhealthy(ctx context.Context, m intake.MaxUnhealthy) error {
	return s.Put(ctx, storage.KeySabakanMaxUnhealthy, []byte(m.String()))
}

// GetCluster returns the stored cluster and its mod revision, or
// storage.ErrNotFound.
func (s Store) GetCluster(ctx context.Context) (*cluster.Cluster, int64, error) {
	v, err := s.Get(ctx, storage.KeyCluster)
	if err != nil {
		return nil, 0, err
	}
	c, err := cluster.Parse(v.Data)
	if err != nil {
		return nil, 0, fmt.Errorf("stored cluster: %w", err)
	}
	return c, v.ModRevision, nil
}

// GetClusterRaw returns the stored cluster as stored.
func (s Store) GetClusterRaw(ctx context.Context) ([]byte, error) {
	v, err := s.Get(ctx, storage.KeyCluster)
	return v.Data, err
}

// GetClusterRevision returns the stored cluster-revision, 0 when unset.
func (s Store) GetClusterRevision(ctx context.Context) (int64, error) {
	v, err := s.Get(ctx, storage.KeyClusterRevision)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return intake.ParseClusterRevision(v.Data)
}

// Ownership reads the owner and the switches as a tick does.
func (s Store) Ownership(ctx context.Context) (intake.Ownership, error) {
	var r intake.Reader
	snap, err := s.Read(ctx, r.Request(""))
	if err != nil {
		return intake.Ownership{}, err
	}
	set, refused := r.ReadEach(snap, intake.WhatIf{})
	if ref := intake.First(refused, intake.Switch); ref != nil {
		return set.Own, ref
	}
	return set.Own, nil
}

// Takeover writes what ckegenctl sabakan takeover writes, guarded as it is.
func (s Store) Takeover(ctx context.Context, o intake.Ownership) error {
	return s.Swap(ctx, o.Guards(), storage.Write{Key: storage.KeyOwner, Data: []byte(intake.OwnerCKEGen)},
		storage.Write{Key: storage.KeySabakanDisabled, Data: []byte("true")})
}

// Handback writes what ckegenctl sabakan handback writes, guarded as it is.
func (s Store) Handback(ctx context.Context, o intake.Ownership) error {
	return s.Swap(ctx, o.Guards(), storage.Write{Key: storage.KeyOwner, Data: []byte(intake.OwnerCKE)},
		storage.Write{Key: storage.KeySabakanDisabled, Data: []byte("false")})
}
