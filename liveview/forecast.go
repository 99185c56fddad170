package liveview

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/storage"
)

// Runway is the leader's last forecast as the views show it: its stored
// summary and how old it is (docs/forecast.md), never a forecast made
// again.
type Runway struct {
	// Summary is the stored summary; nil when none is stored yet.
	Summary *storage.ForecastSummary
	// Age is how long ago it was made, at the view's time Now.
	Age time.Duration
	Now time.Time
}

// NoForecast is what the views say when no forecast is stored.
const NoForecast = "no forecast stored yet: the leader (ckegen's daemon, or CKE's server with ckegen inside) stores one once the cluster is settled"

// ReadRunway reads the stored forecast at now; none stored is no error.
func ReadRunway(ctx context.Context, st storage.Storage, now time.Time) (Runway, error) {
	s, err := st.GetForecast(ctx)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return Runway{}, nil
	case err != nil:
		return Runway{}, err
	}
	return Runway{Summary: &s, Age: now.Sub(s.At), Now: now}, nil
}

// Line is the runway in words: the forecast's answer and its age, or
// that there is none.
func (r Runway) Line() string {
	s := r.Summary
	switch {
	case s == nil:
		return NoForecast
	case s.Failed == nil:
		return fmt.Sprintf("%s (forecast made %s ago, %s)", s.RunwayMessage, ageText(r.Age), s.At.UTC().Format(time.RFC3339))
	}
	failed := fmt.Sprintf("the last forecast failed %s ago (%s): %s", ageText(r.Now.Sub(s.Failed.At)), s.Failed.At.UTC().Format(time.RFC3339), s.Failed.Message)
	if s.At.IsZero() {
		return "no forecast made yet: " + failed
	}
	return fmt.Sprintf("%s (forecast made %s ago, %s); %s", s.RunwayMessage, ageText(r.Age), s.At.UTC().Format(time.RFC3339), failed)
}

// Events are the next events in words, one a line.
func (r Runway) Events() []string {
	if r.Summary == nil {
		return nil
	}
	out := make([]string, len(r.Summary.Events))
	for i, ev := range r.Summary.Events {
		fails := ""
		if ev.Fails {
			fails = "; the runway ends here"
		}
		out[i] = fmt.Sprintf("%s: %d retiring, %d retired, %d workers; %s%s", ev.Date, ev.Retiring, ev.Retired, ev.Workers, ev.Plan, fails)
	}
	return out
}

// ageText is a duration rounded for people: 45s, 12m, 3h, 2d.
func ageText(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
