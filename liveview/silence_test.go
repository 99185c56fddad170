package liveview

import (
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// TestSilence: a status older than three of its host's intervals says
// that the host stopped calling, in the words of its mode; a fresh one
// says nothing; a daemon held by CKE's pace says since when it has not
// run the integration.
func TestSilence(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	minute := storage.Duration(time.Minute)
	cke := &intake.CKEStatus{Phase: "upgrade-aborted", Timestamp: at.Add(4 * time.Minute)}
	inside := storage.Status{Result: reason.OK, Time: at, LastRun: at, Interval: minute, Mode: decision.ModeInsideCKE}
	for _, c := range []struct {
		name string
		st   storage.Status
		now  time.Time
		want string
	}{
		{"inside, at its pace", inside, at.Add(3 * time.Minute), ""},
		{"inside, silent", inside, at.Add(3*time.Minute + time.Second),
			"CKE's server has not called ckegen since 2026-01-01T00:00:00Z (3m1s ago, more than three of its intervals of 1m0s); CKE's phase is upgrade-aborted (written 0s ago); why: the cause"},
		{"a daemon, silent", storage.Status{Result: reason.OK, Time: at, Interval: minute, Mode: decision.ModeStandalone}, at.Add(time.Hour),
			"no tick since 2026-01-01T00:00:00Z (1h0m0s ago, more than three intervals of 1m0s); why: the cause"},
		{"beside, waiting for CKE's pace", storage.Status{Result: reason.Held, Reason: reason.CKENotReady, Time: at.Add(10 * time.Minute),
			LastRun: at, Interval: minute, Mode: decision.ModeBesideCKE}, at.Add(10 * time.Minute),
			"ckegen has not run the integration since 2026-01-01T00:00:00Z (10m0s ago): CKE's server is in phase upgrade-aborted"},
		{"beside, held a short while", storage.Status{Result: reason.Held, Reason: reason.CKENotReady, Time: at.Add(2 * time.Minute),
			LastRun: at, Interval: minute, Mode: decision.ModeBesideCKE}, at.Add(2 * time.Minute), ""},
		{"no interval recorded", storage.Status{Result: reason.OK, Time: at}, at.Add(time.Hour), ""},
	} {
		got := Silence(c.st, cke, "the cause", c.now)
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := Silence(inside, nil, "the cause", at.Add(time.Hour)); !strings.Contains(got, "CKE's phase is not known (no status key)") {
		t.Errorf("without CKE's status: %q", got)
	}
}
