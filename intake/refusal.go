package intake

import (
	"errors"
	"fmt"

	"github.com/ckegen/ckegen/storage"
)

// Reason codes of the settings, as the daemon records them in
// sabakan/status.
const (
	ReasonNoTemplate          = "NO_TEMPLATE"
	ReasonInvalidTemplate     = "INVALID_TEMPLATE"
	ReasonNoURL               = "NO_URL"
	ReasonInvalidVariables    = "INVALID_VARIABLES"
	ReasonInvalidConstraints  = "INVALID_CONSTRAINTS"
	ReasonInvalidCluster      = "INVALID_CLUSTER"
	ReasonInvalidPolicy       = "INVALID_POLICY"
	ReasonInvalidTrigger      = "INVALID_TRIGGER"
	ReasonInvalidQuietTime    = "INVALID_QUIET_TIME"
	ReasonInvalidMaxUnhealthy = "INVALID_MAX_UNHEALTHY"
)

// Setting names a setting, or a piece of state read with the settings.
type Setting string

// The settings.
const (
	SettingTemplate        Setting = "template"
	SettingURL             Setting = "url"
	SettingVariables       Setting = "variables"
	SettingConstraints     Setting = "constraints"
	SettingCluster         Setting = "cluster"
	SettingClusterRevision Setting = "cluster-revision"
	SettingPolicy          Setting = "policy"
	SettingTrigger         Setting = "trigger"
	SettingQuietTime       Setting = "quiet-time"
	SettingMaxUnhealthy    Setting = "max-unhealthy"
)

// setting is how each setting is refused.
type setting struct {
	// reason is the reason code of an invalid value; missing the one of a
	// missing value ("" when a missing value takes a default).
	reason, missing string
	// stored names a stored value that is invalid, for a person;
	// fix says how to fix it ("" when there is no command for it).
	stored, fix string
	// status is added to an invalid stored value's cause in the daemon's
	// status ("" for nothing).
	status string
	// absent is what the daemon and ckecli say of a missing value; plan
	// is added for a person who can give the value to ckecli instead.
	absent, plan string
}

// settings is the table of settings: one row each.
var settings = map[Setting]setting{
	SettingTemplate: {reason: ReasonInvalidTemplate, missing: ReasonNoTemplate,
		stored: "the stored template is invalid", fix: "set one with ckecli sabakan set-template",
		absent: "no template: set one with ckecli sabakan set-template", plan: ", or give --template"},
	SettingURL: {missing: ReasonNoURL, absent: "no sabakan URL: set one with ckecli sabakan set-url"},
	SettingVariables: {reason: ReasonInvalidVariables,
		stored: "the stored query variables are invalid", fix: "set them with ckecli sabakan set-variables"},
	SettingConstraints: {reason: ReasonInvalidConstraints,
		stored: "the stored constraints are invalid", fix: "set them with ckecli constraints set"},
	SettingCluster:         {reason: ReasonInvalidCluster, stored: "the stored cluster is invalid"},
	SettingClusterRevision: {reason: ReasonInvalidCluster, stored: "the cluster's template revision"},
	SettingPolicy: {reason: ReasonInvalidPolicy,
		stored: "the stored policy is invalid for the template", fix: "fix it with ckecli sabakan set-policy, or clear it with clear-policy",
		status: "; this is the policy stored in " + storage.KeySabakanPolicy + ": fix it with ckecli sabakan set-policy, or remove it with ckecli sabakan clear-policy"},
	SettingTrigger:      {reason: ReasonInvalidTrigger},
	SettingQuietTime:    {reason: ReasonInvalidQuietTime},
	SettingMaxUnhealthy: {reason: ReasonInvalidMaxUnhealthy},
}

// Source is where a value came from: etcd (the zero Source), a what-if
// value (ckecli sabakan plan --template, a setting command's --dry-run) or
// a file of the offline generator.
type Source struct {
	WhatIf bool
	// Flag and Path name the file a value was read from.
	Flag, Path string
}

// Stored is the source of a value read from etcd.
var Stored = Source{}

// Given is the source of a what-if value.
var Given = Source{WhatIf: true}

// File is the source of a value read from the file path, named by flag.
func File(flag, path string) Source { return Source{Flag: flag, Path: path} }

// Refusal is a setting that is missing or invalid.
type Refusal struct {
	// Reason is the daemon's reason code.
	Reason  string
	Setting Setting
	Source  Source
	// Missing: no value is stored; else Err is why the value is invalid.
	Missing bool
	Err     error
}

// refuse is the refusal of an invalid value of s from src.
func refuse(s Setting, src Source, err error) *Refusal {
	return &Refusal{Reason: settings[s].reason, Setting: s, Source: src, Err: err}
}

// absent is the refusal of a missing stored value of s.
func absent(s Setting) *Refusal {
	row := settings[s]
	return &Refusal{Reason: row.missing, Setting: s, Missing: true, Err: errors.New(row.absent)}
}

// Error is the refusal as the daemon's status says it.
func (r *Refusal) Error() string {
	if r.Source == Stored && !r.Missing {
		return r.Err.Error() + settings[r.Setting].status
	}
	return r.Explain()
}

// Unwrap returns the cause.
func (r *Refusal) Unwrap() error { return r.Err }

// Explain is the refusal as ckecli says it to a person: which value, from
// where, and the command that fixes it.
func (r *Refusal) Explain() string {
	row := settings[r.Setting]
	switch {
	case r.Missing:
		return r.Err.Error()
	case r.Source.Path != "":
		return fmt.Sprintf("%s %s: %v", r.Source.Flag, r.Source.Path, r.Err)
	case r.Source.WhatIf:
		return fmt.Sprintf("%s: %v", r.Setting, r.Err)
	case row.stored == "":
		return r.Err.Error()
	case row.fix == "":
		return fmt.Sprintf("%s: %v", row.stored, r.Err)
	default:
		return fmt.Sprintf("%s: %v (%s)", row.stored, r.Err, row.fix)
	}
}

// Explained is err as ckecli says it to a person when err is a *Refusal
// (Explain, and when canGive ExplainFor), the cause still wrapped; other
// errors as they are.
func Explained(err error, canGive bool) error {
	var r *Refusal
	if !errors.As(err, &r) {
		return err
	}
	msg := r.Explain()
	if canGive {
		msg = r.ExplainFor()
	}
	return &explained{msg: msg, cause: r.Err}
}

// explained is a refusal as ckecli says it.
type explained struct {
	msg   string
	cause error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.cause }

// ExplainFor is Explain for a person who can give the value to ckecli
// instead of storing it (ckecli sabakan plan --template ...).
func (r *Refusal) ExplainFor() string {
	if r.Missing {
		return r.Explain() + settings[r.Setting].plan
	}
	return r.Explain()
}
