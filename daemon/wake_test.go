package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// The host wakes its leader at once when a watched setting changes
// (intake.Watched): change management, the owner and both switches, the
// placement policy, as well as the settings TestWatchTriggersTick changes.

func (f *fixture) runHourly(t *testing.T) *Daemon {
	d := f.daemon("d", func(c *Config) { c.Interval = time.Hour })
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
	d := f.daemon("d", func(c *Config) { c.Interval = time.Hour })
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
