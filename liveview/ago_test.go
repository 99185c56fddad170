package liveview

import (
	"testing"
	"time"
)

// TestAgo: the page's "how long ago" in one unit, and the messages' to the
// second, each with its words for no time.
func TestAgo(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		t          time.Time
		ago, since string
	}{
		{time.Time{}, "", "none"},
		{now.Add(time.Second), "in the future", "0s ago"},
		{now.Add(-61 * time.Second), "1m ago", "1m1s ago"},
		{now.Add(-50 * time.Hour), "2d ago", "50h0m0s ago"},
	} {
		if got := ago(now, tc.t); got != tc.ago {
			t.Errorf("ago(%v) = %q, want %q", tc.t, got, tc.ago)
		}
		if got := since(tc.t, now, "none"); got != tc.since {
			t.Errorf("since(%v) = %q, want %q", tc.t, got, tc.since)
		}
	}
}
