package main

import (
	"errors"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/storage"
)

// What the get commands say of a value never stored: what sets it, or,
// for what the daemon writes, how to see why it has not.
var (
	absentCluster = "no cluster yet: the daemon writes one at its first successful tick; ckegenctl sabakan status says why it has not"
	absentStatus  = "no status yet: no ckegen has ticked on this etcd and prefix, neither a daemon nor CKE's server with ckegen inside; ckegenctl leader says whether one leads"
	// The daemon's own words for a missing template (intake.Table).
	absentTemplate  = intake.RowOf(intake.SettingTemplate).Absent
	absentVariables = "no query variables: the daemon queries with the query's defaults (every machine but boot servers and retired ones); set them with ckegenctl sabakan set-variables"
	absentPolicy    = "no placement policy: machines are placed by role and weight only; set one with ckegenctl sabakan set-policy"
)

// notStored is storage.ErrNotFound of a get command, said as msg.
type notStored struct{ msg string }

func (e notStored) Error() string { return e.msg }
func (e notStored) Unwrap() error { return storage.ErrNotFound }

// absent is err, the error of reading a value, with msg in place of
// storage.ErrNotFound's "KEY: not found".
func absent(err error, msg string) error {
	if errors.Is(err, storage.ErrNotFound) {
		return notStored{msg}
	}
	return err
}
