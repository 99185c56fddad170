package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// The host wakes its leader at once when a watched setting changes
// (intake.Watched): change management, the owner and both switches, the
// placement policy, as well as the settings TestWatchTriggersTick changes.

func (f *fixture) runHourly(t *testing.T) *Daemon {
	d := f.daemon("d", func(c *Config) { c.Interval = storage.Duration(time.Hour) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the first tick", func() bool { return ticks(d) == 1 })
	return d
}

func TestChangeSettingsWakeTheDaemon(t *testing.T) {
	f := newFixture(t)
	d := f.runHourly(t)
	ctx := context.Background()
	for _, change := range []func() error{
		func() error { return f.st.SetTrigger(ctx, intake.TriggerPlanning) },
		func() error { return f.st.SetQuietTime(ctx, time.Second) },
		func() error { return f.st.SetMaxUnhealthy(ctx, intake.MaxUnhealthy{Value: 3}) },
	} {
		before := ticks(d)
		must(t, change())
		waitFor(t, "a triggered tick", func() bool { return ticks(d) > before })
	}
	waitFor(t, "the planning status", func() bool {
		st, err := f.st.GetStatus(ctx)
		return err == nil && st.Result == reason.Planning
	})
}

func TestOwnerChangesWakeTheDaemon(t *testing.T) {
	f := newFixture(t)
	d := f.runHourly(t)
	ctx := context.Background()
	for _, kv := range [][2]string{{storage.KeyCKEGenDisabled, "true"}, {storage.KeyOwner, intake.OwnerCKEGen}, {storage.KeyCKEGenDisabled, "false"}} {
		before := ticks(d)
		_, err := f.st.Client.Put(ctx, f.st.Key(kv[0]), kv[1])
		must(t, err)
		waitFor(t, "a tick after "+kv[0]+" changed", func() bool { return ticks(d) > before })
	}
}
func TestPolicyWakesTheDaemon(t *testing.T) {
	f := newFixture(t)
	d := f.daemon("d", func(c *Config) { c.Interval = storage.Duration(time.Hour) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the first tick", func() bool { return ticks(d) == 1 })
	before := ticks(d)
	_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeySabakanPolicy), `{"placements":{"control-plane":{"groups":[{"name":"any"}]}}}`)
	must(t, err)
	waitFor(t, "a tick triggered by the policy", func() bool { return ticks(d) > before })
	waitFor(t, "the placements in the status", func() bool {
		st, err := f.st.GetStatus(ctx)
		return err == nil && len(st.Placements) == 1
	})
}

// TestWaitingWakesWithinASecond: a daemon waiting for its template (the
// first state of a new installation) writes its first cluster within a
// second of set-template's write, with an interval of an hour and the
// default backoff: the write wakes it, nothing waits for a timer.
func TestWaitingWakesWithinASecond(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.st.Client.Delete(ctx, f.st.Key(storage.KeySabakanTemplate))
	must(t, err)
	d := f.daemon("d", func(c *Config) {
		c.Interval, c.MinBackoff = storage.Duration(time.Hour), storage.Duration(decision.DefaultMinBackoff)
	})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = d.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor(t, "the waiting status", func() bool { return d.Status().Result == reason.Waiting })
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	var health struct {
		Health   string         `json:"health"`
		LastTick storage.Status `json:"lastTick"`
	}
	must(t, json.Unmarshal(rec.Body.Bytes(), &health))
	if rec.Code != http.StatusOK || health.Health != "healthy" || health.LastTick.Result != reason.Waiting || strings.Contains(rec.Body.String(), "failing") {
		t.Errorf("/health while waiting: %d %s", rec.Code, rec.Body)
	}
	time.Sleep(100 * time.Millisecond) // the watch is up
	written := time.Now()
	must(t, f.st.SetTemplate(ctx, []byte(testTemplate)))
	waitFor(t, "the first cluster", func() bool { return d.Status().Result == reason.OK })
	if took := time.Since(written); took > time.Second {
		t.Errorf("the first cluster came %s after the template was stored, want under a second", took.Round(time.Millisecond))
	} else {
		t.Logf("the first cluster came %s after the template was stored", took.Round(time.Millisecond))
	}
}
