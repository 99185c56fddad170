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
// and a digest of the machines' serials, retire dates and states and of
// the orders), the runway if nothing is bought, the next events, and what
// to buy. The forecast package says what the fields mean; storage only
// keeps them. A release before purchases reads the fields it knows and
// ignores the others: the runway and End mean what they meant then.
type ForecastSummary struct {
	// At is when the forecast was made, Until its end.
	At    time.Time `json:"at"`
	Until time.Time `json:"until"`
	// Input identifies what it was made from.
	Input string `json:"input"`
	// Runway, if nothing is bought beyond the orders (the forecast's
	// unbought runway when it bought): RunwayUntil is the last day the
	// cluster meets its constraints ("": nothing fails before Until),
	// RunwayReason its code, RunwayMessage the words for it.
	RunwayUntil   string `json:"runwayUntil,omitempty"`
	RunwayReason  string `json:"runwayReason"`
	RunwayMessage string `json:"runwayMessage"`
	// End is the first day the cluster no longer meets its constraints
	// if nothing is bought (the day after RunwayUntil), or Until when
	// nothing fails before.
	End time.Time `json:"end"`
	// Events are the first events of the forecast, with the purchases
	// and orders assumed.
	Events []ForecastEvent `json:"events"`
	// NeedWorkers is the HEALTHY workers needed (0: none, the rate model
	// without one).
	NeedWorkers int `json:"needWorkers,omitempty"`
	// Points are every event's figures, with the purchases and orders
	// assumed (the page's runway chart).
	Points []ForecastPoint `json:"points,omitempty"`
	// Purchases are what keeps the constraints until Until, by needed
	// date then role: the first ones, PurchasesLeft the number of those
	// after them left out (`ckegenctl sabakan forecast --buy` gives them
	// all). OrderBy is the first of all their order-by dates ("" when
	// nothing needs buying).
	Purchases     []ForecastPurchase `json:"purchases,omitempty"`
	PurchasesLeft int                `json:"purchasesLeft,omitempty"`
	OrderBy       string             `json:"orderBy,omitempty"`
	// UnboughtEnd is End when the forecast bought (zero when it was
	// made without buying): a reader then knows End, and the runway, are
	// those without the purchases, and Points those with them.
	UnboughtEnd time.Time `json:"unboughtEnd,omitzero"`
	// Orders are the orders the forecast assumed (their specs).
	Orders []string `json:"orders,omitempty"`
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

// ForecastPoint is one event's figures: its date, the HEALTHY workers
// and control planes of the cluster it leaves, the machines that retire
// and those that arrive (bought or ordered), and whether it fails.
type ForecastPoint struct {
	Date          string `json:"d"`
	Workers       int    `json:"w"`
	ControlPlanes int    `json:"c"`
	Retired       int    `json:"r,omitempty"`
	Arriving      int    `json:"a,omitempty"`
	Bought        int    `json:"b,omitempty"`
	Fails         bool   `json:"f,omitempty"`
}

// ForecastPurchase is one purchase of a ForecastSummary
// (forecast.Purchase).
type ForecastPurchase struct {
	Role    string         `json:"role"`
	Product string         `json:"product,omitempty"`
	Count   int            `json:"count"`
	Racks   map[string]int `json:"racks"`
	Needed  string         `json:"needed"`
	OrderBy string         `json:"orderBy"`
	Overdue bool           `json:"overdue,omitempty"`
	Reason  string         `json:"reason"`
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
