package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// KeyCKEGenForecast is the leader's last forecast, a ForecastSummary
// (docs/forecast.md).
const KeyCKEGenForecast = "sabakan/ckegen/forecast"

// ForecastSummary is what the leader keeps of its last forecast: when it
// was made and from what (Input: the memo's key, the settings' revisions
// and a digest of the machines' serials, retire dates and states), the
// runway and the next events. The forecast package says what the fields
// mean; storage only keeps them.
type ForecastSummary struct {
	// At is when the forecast was made, Until its end.
	At    time.Time `json:"at"`
	Until time.Time `json:"until"`
	// Input identifies what it was made from.
	Input string `json:"input"`
	// Runway: RunwayUntil is the last day the cluster meets its
	// constraints ("": nothing fails before Until), RunwayReason its
	// code, RunwayMessage the words for it.
	RunwayUntil   string `json:"runwayUntil,omitempty"`
	RunwayReason  string `json:"runwayReason"`
	RunwayMessage string `json:"runwayMessage"`
	// End is the first day the cluster no longer meets its constraints
	// (the day after RunwayUntil), or Until when nothing fails before.
	End time.Time `json:"end"`
	// Events are the first events of the forecast.
	Events []ForecastEvent `json:"events"`
	// Failed is the last forecast tried, when it failed (nil: the one
	// above is the last tried); the fields above are then the last
	// forecast made, if any (At zero: none).
	Failed *ForecastFailure `json:"failed,omitempty"`
}

// ForecastFailure is a forecast that failed: when, of which input, and
// why.
type ForecastFailure struct {
	At      time.Time `json:"at"`
	Input   string    `json:"input"`
	Message string    `json:"message"`
}

// ForecastEvent is one event of a ForecastSummary.
type ForecastEvent struct {
	Date     string `json:"date"`
	Retiring int    `json:"retiring"`
	Retired  int    `json:"retired"`
	Workers  int    `json:"workers"`
	// Plan is what the plan does, in words.
	Plan string `json:"plan"`
	// Fails: the runway ends at this event.
	Fails bool `json:"fails,omitempty"`
}

// GetForecast returns the stored forecast summary, or ErrNotFound.
func (s Storage) GetForecast(ctx context.Context) (ForecastSummary, error) {
	var f ForecastSummary
	v, err := s.Get(ctx, KeyCKEGenForecast)
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(v.Data, &f); err != nil {
		return f, fmt.Errorf("%s: %w", KeyCKEGenForecast, err)
	}
	return f, nil
}

// PutForecast stores a forecast summary while leaderKey exists.
func (s Storage) PutForecast(ctx context.Context, leaderKey string, f ForecastSummary) error {
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return s.PutLeading(ctx, leaderKey, Write{Key: KeyCKEGenForecast, Data: data})
}
