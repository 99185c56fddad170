package tick

import (
	"errors"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"

	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// TestRetryPolicy: the one retry policy of both hosts. After a failure
// the step waits from MinBackoff, doubling up to the interval, the
// backoff kept in the memory; after a success the interval; after a
// write lost to a concurrent change, no wait; a change of the settings
// starts the backoff again; the end of a quiet time comes first when it
// is sooner.
func TestRetryPolicy(t *testing.T) {
	s := New(storage.Storage{}, decision.Config{Interval: storage.Duration(time.Minute), MinBackoff: storage.Duration(5 * time.Second)})
	failure := &reason.Error{Reason: reason.QueryError, Err: errors.New("x")}
	d := &decision.Decision{Gathered: &decision.Gathered{SettingsID: "a"}}
	mem := decision.Memory{Settings: "a"}
	var waits []time.Duration
	for range 6 {
		var w time.Duration
		var b time.Duration
		w, b = s.after(d, failure, mem)
		mem.Backoff = storage.Duration(b)
		waits = append(waits, w)
	}
	want := []time.Duration{5, 10, 20, 40, 60, 60}
	for i := range want {
		if waits[i] != want[i]*time.Second {
			t.Fatalf("waits %v, want %v seconds", waits, want)
		}
	}
	for _, code := range []string{reason.ClusterChanged, reason.OwnershipChanged} {
		if w, _ := s.after(d, &reason.Error{Reason: code, Err: errors.New("x")}, mem); w != 0 {
			t.Errorf("after %s: wait %v, want 0", code, w)
		}
	}
	if w, b := s.after(&decision.Decision{Gathered: &decision.Gathered{SettingsID: "b"}}, failure, mem); w != 5*time.Second || b != 10*time.Second {
		t.Errorf("after the settings changed: wait %v, backoff %v, want 5s and 10s", w, b)
	}
	w, b := s.after(d, nil, mem)
	if w != time.Minute || b != 0 {
		t.Errorf("after a success: wait %v, backoff %v", w, b)
	}
	if w, _ := s.after(&decision.Decision{Gathered: d.Gathered, QuietRemaining: 3 * time.Second}, nil, mem); w != 3*time.Second+10*time.Millisecond {
		t.Errorf("with 3s of quiet time left: wait %v", w)
	}
}
