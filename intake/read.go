package intake

import (
	"errors"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/template"
)

// WhatIf replaces stored settings (ckecli sabakan plan --template ...,
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

// ClusterRevision is the mod revision of the cluster the reader holds
// parsed (0: none): given to storage.SnapshotKnowing, the next snapshot
// does not read that cluster's value again.
func (r *Reader) ClusterRevision() int64 { return r.cluster.rev }

// step reads one setting of snap into s; what-if values in w replace
// stored ones.
type step func(r *Reader, snap *storage.Snapshot, w WhatIf, s *Settings) *Refusal

// steps are the settings in the order the daemon reads them: a tick
// reports the first that is refused.
var steps = []step{
	(*Reader).template, (*Reader).url, (*Reader).variables, (*Reader).constraints,
	(*Reader).currentCluster, (*Reader).rebooting, (*Reader).compilePolicy,
}

// Read parses the settings of snap, w applied. The first value that is
// missing or invalid is a *Refusal. The change settings are read by
// ReadChange.
func (r *Reader) Read(snap *storage.Snapshot, w WhatIf) (*Settings, error) {
	s := &Settings{}
	for _, read := range steps {
		if ref := read(r, snap, w, s); ref != nil {
			return nil, ref
		}
	}
	return s, nil
}

// ReadEach parses every setting of snap it can, and returns every
// refusal by setting: for a view that shows what it can (the rack map).
// A setting that needs another (the policy needs the template) is skipped
// when that one is refused.
func (r *Reader) ReadEach(snap *storage.Snapshot) (*Settings, map[Setting]*Refusal) {
	s := &Settings{}
	refused := map[Setting]*Refusal{}
	for _, read := range steps {
		if ref := read(r, snap, WhatIf{}, s); ref != nil {
			refused[ref.Setting] = ref
		}
	}
	return s, refused
}

func (r *Reader) template(snap *storage.Snapshot, w WhatIf, s *Settings) *Refusal {
	data, rev, err := snap.Template()
	s.TemplateRevision = rev
	src := Stored
	switch {
	case w.Template != nil:
		data, src, s.templateGiven = w.Template, Given, true
	case err != nil:
		return absent(SettingTemplate)
	}
	if s.Template, err = template.Parse(data); err != nil {
		return refuse(SettingTemplate, src, err)
	}
	return nil
}

func (r *Reader) url(snap *storage.Snapshot, _ WhatIf, s *Settings) *Refusal {
	var err error
	if s.URL, err = snap.URL(); err != nil {
		return absent(SettingURL)
	}
	return nil
}

func (r *Reader) variables(snap *storage.Snapshot, w WhatIf, s *Settings) *Refusal {
	data, src := w.Variables, Given
	if data == nil {
		data, src = nil, Stored
		if stored, err := snap.QueryVariables(); err == nil {
			data = stored
		}
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
	if w.Constraints != nil {
		s.Constraints, s.ConstraintsStored, src = *w.Constraints, true, Given
	} else {
		var err error
		if s.Constraints, err = snap.Constraints(); err != nil {
			return refuse(SettingConstraints, Stored, err)
		}
		s.ConstraintsStored = snap.ConstraintsStored()
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
// mod revision is the same, and the template revision it was built from.
func (r *Reader) currentCluster(snap *storage.Snapshot, _ WhatIf, s *Settings) *Refusal {
	if rev := snap.ClusterModRevision(); rev != 0 {
		if c := r.cluster; c.cluster != nil && c.rev == rev {
			s.Current, s.ClusterRevision = c.cluster, rev
		} else {
			c, rev, err := snap.Cluster()
			if err != nil {
				return refuse(SettingCluster, Stored, err)
			}
			r.cluster.rev, r.cluster.cluster = rev, c
			s.Current, s.ClusterRevision = c, rev
		}
	}
	var err error
	if s.BuiltFrom, err = snap.ClusterRevision(); err != nil {
		return refuse(SettingClusterRevision, Stored, err)
	}
	return nil
}

func (r *Reader) rebooting(snap *storage.Snapshot, _ WhatIf, s *Settings) *Refusal {
	s.Rebooting = snap.RebootingNodes()
	return nil
}

// compilePolicy compiles the policy for the template (none: nil),
// reusing the last one compiled while neither the stored policy nor the
// stored template has changed.
func (r *Reader) compilePolicy(snap *storage.Snapshot, w WhatIf, s *Settings) *Refusal {
	if s.Template == nil {
		return nil
	}
	data, rev, err := snap.Policy()
	src := Stored
	switch {
	case w.Policy != nil:
		data, src = w.Policy, Given
	case errors.Is(err, storage.ErrNotFound):
		return nil
	}
	cacheable := src == Stored && !s.templateGiven
	if c := r.policy; cacheable && c.policy != nil && c.rev == rev && c.templateRev == s.TemplateRevision {
		s.Policy = c.policy
		return nil
	}
	if s.Policy, err = policy.Load(data, s.Template); err != nil {
		return refuse(SettingPolicy, src, err)
	}
	if cacheable {
		r.policy.rev, r.policy.templateRev, r.policy.policy = rev, s.TemplateRevision, s.Policy
	}
	return nil
}

// ReadChange parses the change management settings of snap; the first
// that is invalid is a *Refusal.
func ReadChange(snap *storage.Snapshot) (Change, error) {
	var c Change
	var err error
	if c.Trigger, c.TriggerRevision, err = snap.Trigger(); err != nil {
		return c, refuse(SettingTrigger, Stored, err)
	}
	if c.QuietTime, err = snap.QuietTime(); err != nil {
		return c, refuse(SettingQuietTime, Stored, err)
	}
	if c.MaxUnhealthy, err = snap.MaxUnhealthy(); err != nil {
		return c, refuse(SettingMaxUnhealthy, Stored, err)
	}
	return c, nil
}
