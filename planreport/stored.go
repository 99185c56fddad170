package planreport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/storage"
)

// Stored is the daemon's plan as sabakan/plan keeps it (docs/design.md
// 11.2): the document of docs/design.md 11.1 and when and from what it was
// computed. storage keeps its bytes; this package owns the format.
type Stored struct {
	Document
	// ComputedAt is the time of the tick that computed the plan.
	ComputedAt time.Time `json:"computed-at"`
	// TemplateRevision is the mod revision of sabakan/template the plan
	// was computed with.
	TemplateRevision int64 `json:"template-revision"`
	// ClusterRevision is the mod revision of the cluster key the plan
	// starts from (0: no cluster yet).
	ClusterRevision int64 `json:"cluster-revision"`
	// Trigger is the trigger when the plan was computed.
	Trigger string `json:"trigger"`
	// Omitted says what was left out to fit etcd's request size limit.
	Omitted string `json:"omitted,omitempty"`
}

// ReadStored returns the stored plan: storage.ErrNotFound when there is
// none, an error wrapping storage.ErrInvalid when it does not parse, which
// says where in the value (a *strictjson.Error). Fields it does not know
// are skipped: a newer ckegen may store more.
func ReadStored(ctx context.Context, st storage.Storage) (*Stored, error) {
	data, err := st.GetPlan(ctx)
	if err != nil {
		return nil, err
	}
	var p Stored
	if err := strictjson.UnmarshalIgnoringUnknown(data, &p); err != nil {
		return nil, fmt.Errorf("stored %s: %w: %w", storage.KeySabakanPlan, storage.ErrInvalid, err)
	}
	return &p, nil
}

// MarshalStored is the JSON of p in at most maxBytes (maxBytes <= 0: no
// limit). A plan over the limit is stored without its final cluster, then
// also with at most storage.MaxChanges changes per step; Omitted says so.
// The summary, computed before, still counts every node.
func MarshalStored(p Stored, maxBytes int) ([]byte, error) {
	data, err := json.Marshal(p)
	if err != nil || maxBytes <= 0 || len(data) <= maxBytes {
		return data, err
	}
	full := len(data)
	p.Cluster = nil
	p.Omitted = "the final cluster, to fit etcd's request size limit"
	if data, err = json.Marshal(p); err != nil || len(data) <= maxBytes {
		return data, err
	}
	steps := make([]Step, len(p.Steps))
	for i, st := range p.Steps {
		steps[i] = st
		steps[i].Changes = st.Changes[:min(len(st.Changes), storage.MaxChanges)]
	}
	p.Steps = steps
	p.Omitted = fmt.Sprintf("the final cluster and the changes of each step after the first %d, to fit etcd's request size limit", storage.MaxChanges)
	if data, err = json.Marshal(p); err != nil || len(data) <= maxBytes {
		return data, err
	}
	return nil, fmt.Errorf("the plan is %d bytes of JSON (%d without the final cluster and with %d changes per step), over etcd's request size limit of %d bytes",
		full, len(data), storage.MaxChanges, maxBytes)
}

// Digest identifies a stored plan: all of it but the time. A plan
// that leaves the cluster as it is (a settled plan, a refused first
// step) is identified by the cluster's mod revision, which the plan
// records, instead of the cluster's JSON: at 10,000 nodes, encoding the
// cluster at every tick only to hash it was most of a steady tick.
func (p Stored) Digest(clusterUnchanged bool) (string, error) {
	p.ComputedAt = time.Time{}
	if clusterUnchanged {
		p.Cluster = nil
	}
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(struct {
		Stored
		ClusterUnchanged bool
	}{p, clusterUnchanged}); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}
