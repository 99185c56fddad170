// Who acts: ReadActor says who acts on the cluster now: which server leads
// CKE's election and ckegen's, and whether ckegen runs in CKE's, from
// the election keys and the records of presence every process of ckegen
// keeps (storage.Presence), never from flags, settings or the mode of
// the last status. `ckegenctl sabakan owner`, `status`, `leader`, the
// page and /ckegen/status show it, and the status's note names its cause
// from it.
//
// The evidence is the keys as read now, each leader's session lease (a
// key of a process that died goes when its lease expires: the lease's
// time left bounds how stale the evidence can be) and the time its
// record of presence was written (when that process started).

package liveview

import (
	"context"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/storage"
)

// ActorKind is who acts.
type ActorKind string

// The kinds.
const (
	// Daemon: a ckegen daemon leads ckegen's election (alone or beside
	// a CKE server; Actor.CKE says which).
	Daemon ActorKind = "ckegen-daemon"
	// InsideCKE: CKE's server with ckegen inside leads, and its ckegen
	// integrates.
	InsideCKE ActorKind = "cke-with-ckegen"
	// CKEWithoutCKEGen: CKE's server leads and runs no ckegen now: the
	// ckegen inside it is switched off (CKE's sabakan/disabled), or
	// leaves the integration to ckegen's daemons and none leads.
	CKEWithoutCKEGen ActorKind = "cke-without-ckegen"
	// CKENotKnown: CKE's server leads and keeps no record of presence:
	// CKE's own binary, or a cke built from a ckegen older than the
	// records. etcd cannot tell which, so whether ckegen runs inside is
	// not known.
	CKENotKnown ActorKind = "cke-not-known"
	// Nobody: no server leads either election.
	Nobody ActorKind = "none"
)

// Leader is the holder of one election as read.
type Leader struct {
	Name string `json:"name"`
	// Key is its election key.
	Key string `json:"key"`
	// Presence is its record (nil: it keeps none).
	Presence *storage.Presence `json:"presence,omitempty"`
	// LeaseLeft is how long its session's lease has left, LeaseTTL what
	// it was granted: the key goes at most LeaseLeft after the process
	// stops renewing it, so the evidence is at most LeaseTTL-LeaseLeft
	// old when it is read.
	LeaseLeft storage.Duration `json:"leaseLeft"`
	LeaseTTL  storage.Duration `json:"leaseTTL"`
	// WroteCKEStatus: CKE's status key is under this leader's lease
	// (CKE's server writes it, under its lease, at each pass that gets
	// past its infrastructure; CKE's election only).
	WroteCKEStatus bool `json:"wroteCKEStatus,omitempty"`
}

// Actor is who acts, as read at Time.
type Actor struct {
	Kind ActorKind `json:"kind"`
	// Says is Kind in words, with the names, versions and evidence.
	Says string `json:"says"`
	// CKE leads CKE's election (leader/), CKEGen ckegen's daemons'
	// (sabakan/ckegen/leader/); nil: nobody.
	CKE    *Leader   `json:"cke,omitempty"`
	CKEGen *Leader   `json:"ckegen,omitempty"`
	Time   time.Time `json:"time"`
}

// ReadActor reads who acts at now: both elections, the records of presence
// and the leases, with own as the ownership keys were read (the switch
// and the owner decide whether ckegen inside CKE's server integrates).
func ReadActor(ctx context.Context, st storage.Storage, own intake.Ownership, now time.Time) (Actor, error) {
	l, err := st.ReadLeaders(ctx)
	if err != nil {
		return Actor{}, err
	}
	r := Actor{Time: now}
	if r.CKE, err = leaderOf(ctx, st, l, l.CKE); err != nil {
		return Actor{}, err
	}
	if r.CKE != nil {
		r.CKE.WroteCKEStatus = l.CKEStatusLease != 0 && l.CKEStatusLease == l.CKE.Lease
	}
	if r.CKEGen, err = leaderOf(ctx, st, l, l.CKEGen); err != nil {
		return Actor{}, err
	}
	r.Kind = kindOf(r, own)
	r.Says = r.words(own)
	return r, nil
}

func leaderOf(ctx context.Context, st storage.Storage, l storage.Leaders, e *storage.Elected) (*Leader, error) {
	if e == nil {
		return nil, nil
	}
	ld := &Leader{Name: e.Name, Key: e.Key}
	if p, ok := l.Presences[e.Lease]; ok {
		ld.Presence = &p
	}
	if e.Lease == 0 {
		// A key put by hand, of no session: no lease to age it by.
		return ld, nil
	}
	left, granted, err := st.LeaseLeft(ctx, e.Lease)
	if err != nil {
		return nil, err
	}
	if granted == 0 {
		// The lease expired since the keys were read: its key is gone.
		return nil, nil
	}
	ld.LeaseLeft, ld.LeaseTTL = storage.Duration(left), storage.Duration(granted)
	return ld, nil
}

// inside reports whether l is CKE's server with ckegen inside, by its
// record.
func (l *Leader) inside() bool {
	return l != nil && l.Presence != nil && l.Presence.Kind == storage.PresenceInsideCKE
}

// kindOf decides who acts: ckegen inside CKE's leading server while it
// integrates, else a leading daemon of ckegen's, else CKE's server as its
// record says, else nobody.
func kindOf(r Actor, own intake.Ownership) ActorKind {
	yields := own.LeftToDaemons()
	switch {
	case r.CKE.inside() && !yields && !own.CKEDisabled:
		return InsideCKE
	case r.CKEGen != nil:
		return Daemon
	case r.CKE.inside():
		return CKEWithoutCKEGen
	case r.CKE != nil:
		return CKENotKnown
	}
	return Nobody
}

// words says r.Kind with the names, the builds and the evidence.
func (r Actor) words(own intake.Ownership) string {
	switch r.Kind {
	case InsideCKE:
		return fmt.Sprintf("CKE's server %s leads with ckegen %s inside (%s)", r.CKE.Name, build(r.CKE.Presence), r.CKE.evidence())
	case Daemon:
		s := fmt.Sprintf("ckegen's daemon %s (%s) leads (%s)", r.CKEGen.Name, build(r.CKEGen.Presence), r.CKEGen.evidence())
		return s + "; " + r.besideWords()
	case CKEWithoutCKEGen:
		why := fmt.Sprintf("CKE's %s is true", storage.KeySabakanDisabled)
		if own.LeftToDaemons() {
			why = fmt.Sprintf("it leaves the integration to ckegen's daemons (%s: ckegen), and none leads", storage.KeyOwner)
		}
		return fmt.Sprintf("CKE's server %s leads and runs no ckegen now: ckegen %s is inside but %s (%s)", r.CKE.Name, build(r.CKE.Presence), why, r.CKE.evidence())
	case CKENotKnown:
		why := fmt.Sprintf("it keeps no record under %s (CKE's own binary, or a cke built from an older ckegen; etcd cannot tell them apart)", storage.KeyPresence)
		if p := r.CKE.Presence; p != nil {
			why = "its record " + p.Unreadable
		}
		return fmt.Sprintf("CKE's server %s leads; whether ckegen runs inside is not known: %s (%s)", r.CKE.Name, why, r.CKE.evidence())
	}
	return fmt.Sprintf("nothing leads: no key under %s nor %s (read at %s)", storage.KeyLeader, storage.KeyCKEGenLeader, stamp(r.Time))
}

// besideWords says what of CKE's server stands beside a leading daemon.
func (r Actor) besideWords() string {
	switch {
	case r.CKE == nil:
		return fmt.Sprintf("no CKE server leads (nothing under %s)", storage.KeyLeader)
	case r.CKE.inside():
		return fmt.Sprintf("beside CKE's server %s with ckegen %s inside (%s)", r.CKE.Name, build(r.CKE.Presence), r.CKE.evidence())
	}
	if p := r.CKE.Presence; p != nil {
		return fmt.Sprintf("beside CKE's server %s, whose record %s (%s)", r.CKE.Name, p.Unreadable, r.CKE.evidence())
	}
	return fmt.Sprintf("beside CKE's server %s, which keeps no record of ckegen (%s)", r.CKE.Name, r.CKE.evidence())
}

// build names a record's build ("version not known" without one).
func build(p *storage.Presence) string {
	switch {
	case p == nil:
		return "of a version not known"
	case p.Unreadable != "":
		return "of a version not known (its record " + p.Unreadable + ")"
	}
	return fmt.Sprintf("%s (commit %s, for CKE %s)", p.Version, p.Commit, p.CKEVersion)
}

// evidence says how old the evidence of l is: its lease, renewed at most
// TTL-left ago, and when its record was written.
func (l *Leader) evidence() string {
	left, ttl := time.Duration(l.LeaseLeft), time.Duration(l.LeaseTTL)
	if ttl == 0 {
		return "its election key has no lease: put by hand, not by a server's session"
	}
	s := fmt.Sprintf("its election key's lease was renewed at most %s ago and expires in %s unless renewed", max(ttl-left, 0), left)
	if l.Presence != nil && !l.Presence.Since.IsZero() {
		s += ", running since " + stamp(l.Presence.Since)
	}
	return s
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Version is the version of ckegen that leads, and where it runs ("":
// none that keeps a record leads): the leader that acts, or ckegen's
// daemon, or the CKE server's ckegen inside.
func (r Actor) Version() (version, who string) {
	for _, l := range []*Leader{r.active(), r.CKEGen, r.CKE} {
		if l != nil && l.Presence != nil {
			return l.Presence.Version, l.Name
		}
	}
	return "", ""
}

// active is the leader of the kind that acts (nil: none).
func (r Actor) active() *Leader {
	switch r.Kind {
	case Daemon:
		return r.CKEGen
	case Nobody:
		return nil
	}
	return r.CKE
}
