package intake

import (
	"errors"
	"fmt"
)

// Source is where a value came from: etcd (the zero Source), a what-if
// value (ckegenctl sabakan plan --template, a setting command's --dry-run) or
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
	return &Refusal{Reason: rows[s].Reason, Setting: s, Source: src, Err: err}
}

// absent is the refusal of a missing stored value of s.
func absent(s Setting) *Refusal {
	row := rows[s]
	return &Refusal{Reason: row.Missing, Setting: s, Missing: true, Err: errors.New(row.Absent)}
}

// Error is the refusal as the daemon's status says it.
func (r *Refusal) Error() string {
	if r.Source == Stored && !r.Missing {
		return r.Err.Error() + rows[r.Setting].Status
	}
	return r.Explain()
}

// Unwrap returns the cause.
func (r *Refusal) Unwrap() error { return r.Err }

// Explain is the refusal as ckegenctl says it to a person: which value, from
// where, and the command that fixes it.
func (r *Refusal) Explain() string {
	row := rows[r.Setting]
	switch {
	case r.Missing:
		return r.Err.Error()
	case r.Source.Path != "":
		return fmt.Sprintf("%s %s: %v", r.Source.Flag, r.Source.Path, r.Err)
	case r.Source.WhatIf:
		return fmt.Sprintf("%s: %v", r.Setting, r.Err)
	case row.Stored == "":
		return r.Err.Error()
	case row.Fix == "":
		return fmt.Sprintf("%s: %v", row.Stored, r.Err)
	default:
		return fmt.Sprintf("%s: %v (%s)", row.Stored, r.Err, row.Fix)
	}
}

// Explained is err as ckegenctl says it to a person when err is a *Refusal
// (Explain, and when canGive ExplainFor), the refusal and its cause still
// wrapped; other errors as they are.
func Explained(err error, canGive bool) error {
	var r *Refusal
	if !errors.As(err, &r) {
		return err
	}
	msg := r.Explain()
	if canGive {
		msg = r.ExplainFor()
	}
	return &explained{msg: msg, ref: r}
}

// explained is a refusal as ckegenctl says it.
type explained struct {
	msg string
	ref *Refusal
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.ref }

// ExplainFor is Explain for a person who can give the value to ckegenctl
// instead of storing it (ckegenctl sabakan plan --template ...).
func (r *Refusal) ExplainFor() string {
	if r.Missing {
		return r.Explain() + rows[r.Setting].Plan
	}
	return r.Explain()
}
