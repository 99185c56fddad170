package liveview

import (
	"cmp"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// A status is written by a tick, so when the host stops calling the
// step, the last status stays and goes on saying what the last tick did:
// inside CKE's server, CKE calls its integrator only while it has no
// operations, and the status said "ok" long after CKE's server stopped
// calling. No decision can say that; every view of a status asks Silence
// instead, with the time it is shown at.

// silentIntervals is how many of the host's intervals may pass without
// a tick before the views say the host stopped calling.
const silentIntervals = 3

// Silence says, at now, that the host of the step stopped calling it
// ("": it calls at its pace), and cause, why (Actor.Cause says it from
// who leads now): inside CKE's server, when the last tick is older than
// three of CKE's intervals, with CKE's phase from its status key (nil:
// not read); beside a CKE server, when the daemon holds for CKE's pace
// and has not run the integration for as long; and for any host whose
// last tick is that old.
func Silence(st storage.Status, cke *intake.CKEStatus, cause string, now time.Time) string {
	interval := time.Duration(st.Interval)
	if interval <= 0 || st.Time.IsZero() {
		return ""
	}
	limit := silentIntervals * interval
	phase := "not known (no status key)"
	if cke != nil {
		phase = fmt.Sprintf("%s (written %s)", cmp.Or(cke.Phase, "(none)"), since(cke.Timestamp, now, "never"))
	}
	switch {
	case now.Sub(st.Time) <= limit && st.Result == reason.Held && st.Reason == reason.CKENotReady && !st.LastRun.IsZero() && now.Sub(st.LastRun) > limit:
		return fmt.Sprintf("ckegen has not run the integration since %s (%s): CKE's server is in phase %s; ckegen writes only in phase %s, as CKE runs its own integration only when it has no operations",
			stamp(st.LastRun), since(st.LastRun, now, "never"), phase, intake.CKEPhases())
	case now.Sub(st.Time) <= limit:
		return ""
	case st.Mode == decision.ModeInsideCKE:
		return fmt.Sprintf("CKE's server has not called ckegen since %s (%s, more than three of its intervals of %s); CKE's phase is %s; why: %s",
			stamp(st.Time), since(st.Time, now, "never"), interval, phase, cause)
	}
	return fmt.Sprintf("no tick since %s (%s, more than three intervals of %s); why: %s",
		stamp(st.Time), since(st.Time, now, "never"), interval, cause)
}

// since is how long before now t was, to the second, or none for no time.
func since(t, now time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return max(now.Sub(t), 0).Truncate(time.Second).String() + " ago"
}
