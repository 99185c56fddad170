package liveview

import (
	"context"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// TestViewsSayTheUnchosenHold: with nothing stored and the leader's
// memory saying the count model's defaults were in force, the views that
// decide as the leader does say its hold (CONSTRAINTS_UNCHOSEN): the plan
// is an error naming the commands, and who writes (owner's view) says
// nobody, and why; without that memory, the plan is the rate model's.
func TestViewsSayTheUnchosenHold(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := f.reader(Options{})
	if d, err := r.Decide(ctx, Preview{}); err != nil || d.Constraints == nil || !d.Constraints.RateModel() {
		t.Fatalf("nothing stored, no memory: %v; want the rate model's plan", err)
	}
	_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyCKEGenMemory), `{"last":{"result":"ok","since":"2026-01-01T00:00:00Z","time":"2026-01-01T00:00:00Z","consecutiveFailures":0,"model":"count","constraintsSource":"default"}}`)
	must(t, err)
	if _, err := r.Decide(ctx, Preview{}); err == nil || !strings.Contains(err.Error(), "ckegenctl constraints set minimum-workers 1") {
		t.Errorf("plan: %v, want the hold's message", err)
	}
	d, err := r.Decide(ctx, Preview{SettingsOnly: true})
	must(t, err)
	if h := d.Hold; d.Result != reason.Held || h == nil || h.Rung != decision.RungModel || h.Reason != reason.ConstraintsUnchosen || !strings.HasPrefix(h.Writer, "none: ") {
		t.Errorf("who writes: %s, hold %+v", d.Result, h)
	}
}
