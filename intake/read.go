package intake

import (
	"fmt"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/template"
)

// WhatIf replaces stored settings (ckegenctl sabakan plan --template ...,
// a setting command's --dry-run); a nil field keeps the stored value.
type WhatIf struct {
	// Template is a template as stored (JSON, with CKE's defaults).
	Template []byte
	// Constraints replace the stored constraints.
	Constraints *constraints.Constraints
	// Variables are query variables as stored (JSON).
	Variables []byte
	// Policy is a placement policy (YAML or JSON).
	Policy []byte
}

// Reader parses snapshots into Settings. It keeps the last cluster it
// parsed, by the mod revision of its key, and the last policy it
// compiled, by the mod revisions of the policy and the template: a
// 10,000-node cluster is megabytes of JSON, a static provider may list
// thousands of machines, and most ticks change neither. The cluster is
// read-only: the generator shares its nodes with its results and never
// changes them. A Reader is not safe for concurrent use.
type Reader struct {
	cluster struct {
		rev     int64
		cluster *cluster.Cluster
	}
	policy struct {
		rev, templateRev int64
		policy           *policy.Policy
	}
}

// Read parses every setting of snap, in the order of Table, each as
// Reader.read says, w applied.
// The first value that is missing or invalid is a *Refusal, returned with
// the settings read before it (the switches and the owner come first, so
// a caller can tell a disabled integration from a refused setting).
func (r *Reader) Read(snap *storage.Snapshot, w WhatIf) (*Settings, error) {
	s := &Settings{}
	for i := range Table {
		if ref := r.read(&Table[i], snap, w, s); ref != nil {
			return s, ref
		}
	}
	return s, nil
}

// ReadEach parses every setting of snap it can, w applied, and returns
// every refusal by setting: for a view that shows what it can (the rack
// map, a plan that notes what would hold it) and a check that lists every
// problem (takeover). A setting that needs another (the policy needs the
// template) is skipped when that one is refused.
func (r *Reader) ReadEach(snap *storage.Snapshot, w WhatIf) (*Settings, map[Setting]*Refusal) {
	s := &Settings{}
	refused := map[Setting]*Refusal{}
	for i := range Table {
		if ref := r.read(&Table[i], snap, w, s); ref != nil {
			refused[ref.Setting] = ref
		}
	}
	return s, refused
}

// invalidStored is the refusal of a stored value of a row whose cause
// names the key and the fix itself.
func invalidStored(s Setting, err error) *Refusal {
	row := rows[s]
	if row.Fix == "" {
		return refuse(s, Stored, fmt.Errorf("stored %s: %w: %w", row.Key, storage.ErrInvalid, err))
	}
	return refuse(s, Stored, fmt.Errorf("stored %s: %w: %w (%s)", row.Key, storage.ErrInvalid, err, row.Fix))
}

func (r *Reader) disabled(snap *storage.Snapshot, s *Settings) *Refusal {
	v := snap.Get(storage.KeySabakanDisabled)
	s.Own.CKEDisabledRev = v.ModRevision
	if !v.Exists() {
		return nil
	}
	var err error
	if s.Own.CKEDisabled, err = ParseSwitch(v.Data); err != nil {
		return invalidStored(SettingDisabled, err)
	}
	return nil
}

func (r *Reader) owner(snap *storage.Snapshot, s *Settings) *Refusal {
	s.Own.Owner = OwnerCKE
	s.Own.CKEServer = snap.Count(storage.KeyLeader) > 0
	if v := snap.Get(storage.KeyCKEStatus); v.Exists() {
		s.Own.CKEStatus = parseCKEStatus(v.Data)
	}
	v := snap.Get(storage.KeyOwner)
	if !v.Exists() {
		return nil
	}
	owner, err := ParseOwner(v.Data)
	if err != nil {
		return invalidStored(SettingOwner, err)
	}
	s.Own.Owner, s.Own.OwnerRev = owner, v.ModRevision
	return nil
}

func (r *Reader) ckegenDisabled(snap *storage.Snapshot, s *Settings) *Refusal {
	v := snap.Get(storage.KeyCKEGenDisabled)
	if !v.Exists() {
		return nil
	}
	disabled, err := ParseSwitch(v.Data)
	if err != nil {
		return invalidStored(SettingCKEGenDisabled, err)
	}
	s.Own.CKEGenDisabled, s.Own.CKEGenDisabledRev = disabled, v.ModRevision
	return nil
}

func (r *Reader) template(snap *storage.Snapshot, w WhatIf, s *Settings) *Refusal {
	v := snap.Get(storage.KeySabakanTemplate)
	s.TemplateRevision = v.ModRevision
	data, src := v.Data, Stored
	switch {
	case w.Template != nil:
		data, src, s.templateGiven = w.Template, Given, true
	case !v.Exists():
		return absent(SettingTemplate)
	}
	var err error
	if s.Template, err = template.Parse(data); err != nil {
		return refuse(SettingTemplate, src, err)
	}
	return nil
}

func (r *Reader) url(snap *storage.Snapshot, s *Settings) *Refusal {
	v := snap.Get(storage.KeySabakanURL)
	if !v.Exists() {
		return absent(SettingURL)
	}
	s.URL = string(v.Data)
	return nil
}

func (r *Reader) variables(snap *storage.Snapshot, w WhatIf, s *Settings) *Refusal {
	data, src := w.Variables, Given
	if data == nil {
		data, src = snap.Get(storage.KeySabakanQueryVariables).Data, Stored
	}
	if data == nil {
		return nil
	}
	vars, err := sabakan.ParseVariables(data)
	if err != nil {
		return refuse(SettingVariables, src, err)
	}
	s.Variables, s.VariablesData = vars, data
	return nil
}

func (r *Reader) constraints(snap *storage.Snapshot, w WhatIf, s *Settings) *Refusal {
	src := Stored
	switch v := snap.Get(storage.KeyConstraints); {
	case w.Constraints != nil:
		s.Constraints, s.ConstraintsStored, src = *w.Constraints, true, Given
	case v.Exists():
		c, err := constraints.Parse(v.Data)
		if err != nil {
			return refuse(SettingConstraints, Stored, fmt.Errorf("%w: %w", storage.ErrInvalid, err))
		}
		s.Constraints, s.ConstraintsStored, s.ConstraintsRevision = c, true, v.ModRevision
	default:
		s.Constraints = constraints.Default()
	}
	// Stored constraints were validated as they were parsed; these may
	// be what-if ones.
	if err := s.Constraints.Validate(); err != nil {
		return refuse(SettingConstraints, src, err)
	}
	s.Warnings = append(s.Warnings, s.Constraints.Warnings()...)
	return nil
}

// currentCluster reads the cluster, reusing the last one parsed while its
// mod revision is the same.
func (r *Reader) currentCluster(snap *storage.Snapshot, s *Settings) *Refusal {
	v := snap.Get(storage.KeyCluster)
	if !v.Exists() {
		return nil
	}
	if c := r.cluster; c.cluster != nil && c.rev == v.ModRevision {
		s.Current, s.ClusterRevision = c.cluster, v.ModRevision
		return nil
	}
	if snap.NotRead(storage.KeyCluster) {
		// Held by a reader that has since dropped it: not a value.
		return refuse(SettingCluster, Stored, fmt.Errorf("stored %s: %w: read without its value", storage.KeyCluster, storage.ErrInvalid))
	}
	c, err := cluster.Parse(v.Data)
	if err != nil {
		return refuse(SettingCluster, Stored, fmt.Errorf("stored %s: %w: %w", storage.KeyCluster, storage.ErrInvalid, err))
	}
	r.cluster.rev, r.cluster.cluster = v.ModRevision, c
	s.Current, s.ClusterRevision = c, v.ModRevision
	return nil
}

// clusterRevision reads the template revision the cluster was built from
// (0 when unset).
func (r *Reader) clusterRevision(snap *storage.Snapshot, s *Settings) *Refusal {
	v := snap.Get(storage.KeyClusterRevision)
	if !v.Exists() {
		return nil
	}
	var err error
	if s.BuiltFrom, err = ParseClusterRevision(v.Data); err != nil {
		return invalidStored(SettingClusterRevision, err)
	}
	return nil
}

// compilePolicy compiles the policy for the template (none: nil),
// reusing the last one compiled while neither the stored policy nor the
// stored template has changed.
func (r *Reader) compilePolicy(snap *storage.Snapshot, w WhatIf, s *Settings) *Refusal {
	if s.Template == nil {
		return nil
	}
	v := snap.Get(storage.KeySabakanPolicy)
	data, src := v.Data, Stored
	switch {
	case w.Policy != nil:
		data, src = w.Policy, Given
	case !v.Exists():
		return nil
	}
	cacheable := src == Stored && !s.templateGiven
	if c := r.policy; cacheable && c.policy != nil && c.rev == v.ModRevision && c.templateRev == s.TemplateRevision {
		s.Policy = c.policy
		return nil
	}
	var err error
	if s.Policy, err = policy.Load(data, s.Template); err != nil {
		return refuse(SettingPolicy, src, err)
	}
	if cacheable {
		r.policy.rev, r.policy.templateRev, r.policy.policy = v.ModRevision, s.TemplateRevision, s.Policy
	}
	return nil
}
