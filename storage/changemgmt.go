package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Change management (docs/design.md 11): ckegen's own keys, under sabakan/ where CKE
// keeps nothing of these names.
const (
	// KeySabakanTrigger is "planning" or "schedule" (absent: schedule).
	KeySabakanTrigger = "sabakan/trigger"
	// KeySabakanPlan is the daemon's last plan (StoredPlan, JSON).
	KeySabakanPlan = "sabakan/plan"
	// KeySabakanQuietTime is a Go duration (absent or 0: off).
	KeySabakanQuietTime = "sabakan/quiet-time"
	// KeySabakanMaxUnhealthy is a count or a percentage (absent: off).
	KeySabakanMaxUnhealthy = "sabakan/max-unhealthy"
)

// Triggers (docs/design.md 11.2).
const (
	// TriggerSchedule applies changes as they come, one step per tick
	// (CKE's behaviour, and the default).
	TriggerSchedule = "schedule"
	// TriggerPlanning computes and stores the plan, and writes no cluster.
	TriggerPlanning = "planning"
)

// ParseTrigger validates a trigger.
func ParseTrigger(s string) (string, error) {
	switch s {
	case TriggerPlanning, TriggerSchedule:
		return s, nil
	}
	return "", fmt.Errorf("trigger: must be %s (compute and store the plan, change nothing) or %s (apply it one step per tick), got %q",
		TriggerPlanning, TriggerSchedule, s)
}

// GetTrigger returns the trigger: TriggerSchedule when unset, ErrInvalid
// when the stored value is neither trigger.
func (s Storage) GetTrigger(ctx context.Context) (string, error) {
	t, _, err := s.GetTriggerRevision(ctx)
	return t, err
}

// GetTriggerRevision returns the trigger and the mod revision of its key
// (0 when unset).
func (s Storage) GetTriggerRevision(ctx context.Context) (string, int64, error) {
	data, rev, err := s.get(ctx, KeySabakanTrigger)
	if errors.Is(err, ErrNotFound) {
		return TriggerSchedule, 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	t, err := parseStoredTrigger(data)
	return t, rev, err
}

func parseStoredTrigger(data []byte) (string, error) {
	t, err := ParseTrigger(string(data))
	if err != nil {
		return "", fmt.Errorf("stored %s: %w: %w (set it with ckecli sabakan trigger)", KeySabakanTrigger, ErrInvalid, err)
	}
	return t, nil
}

// SetTrigger validates and stores the trigger.
func (s Storage) SetTrigger(ctx context.Context, trigger string) error {
	if _, err := ParseTrigger(trigger); err != nil {
		return err
	}
	return s.put(ctx, KeySabakanTrigger, []byte(trigger))
}

// ParseQuietTime validates a quiet time (docs/design.md 11.3): a Go duration, not
// negative; 0 turns quiet time off.
func ParseQuietTime(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("quiet-time: want a duration such as 10m or 1h30m (0 turns it off), got %q", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("quiet-time: must not be negative (0 turns it off), got %s", s)
	}
	return d, nil
}

// GetQuietTime returns the quiet time: 0 (off) when unset, ErrInvalid when
// the stored value is not a duration >= 0.
func (s Storage) GetQuietTime(ctx context.Context) (time.Duration, error) {
	data, _, err := s.get(ctx, KeySabakanQuietTime)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return parseStoredQuietTime(data)
}

func parseStoredQuietTime(data []byte) (time.Duration, error) {
	d, err := ParseQuietTime(string(data))
	if err != nil {
		return 0, fmt.Errorf("stored %s: %w: %w (set it with ckecli sabakan set-quiet-time)", KeySabakanQuietTime, ErrInvalid, err)
	}
	return d, nil
}

// SetQuietTime stores a quiet time (as Go writes durations: 10m0s).
func (s Storage) SetQuietTime(ctx context.Context, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("quiet-time: must not be negative (0 turns it off), got %s", d)
	}
	return s.put(ctx, KeySabakanQuietTime, []byte(d.String()))
}

// MaxUnhealthy is how many of the cluster's nodes may be unhealthy before
// the daemon stops changing membership (docs/design.md 11.4): a count, or a
// percentage of the current cluster's nodes.
type MaxUnhealthy struct {
	// Value is the count, or the percentage (0-100) when Percent is set.
	Value   int
	Percent bool
}

// ParseMaxUnhealthy reads "5" (a count) or "40%" (a percentage of the
// cluster's nodes, 0-100).
func ParseMaxUnhealthy(s string) (MaxUnhealthy, error) {
	bad := func(why string) (MaxUnhealthy, error) {
		return MaxUnhealthy{}, fmt.Errorf("max-unhealthy: want a count of nodes such as 5 or a percentage of the cluster's nodes such as 40%%%s, got %q", why, s)
	}
	digits, percent := strings.CutSuffix(s, "%")
	if digits == "" || strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return bad("")
	}
	v, err := strconv.Atoi(digits)
	if err != nil {
		return bad("")
	}
	if percent && v > 100 {
		return bad(" (at most 100%)")
	}
	return MaxUnhealthy{Value: v, Percent: percent}, nil
}

// String is the value as stored: "5" or "40%".
func (m MaxUnhealthy) String() string {
	if m.Percent {
		return strconv.Itoa(m.Value) + "%"
	}
	return strconv.Itoa(m.Value)
}

// Limit is the number of unhealthy nodes allowed in a cluster of nodes
// nodes: the count, or the percentage rounded down (as Cluster API's
// maxUnhealthy). More unhealthy nodes than that hold membership changes.
func (m MaxUnhealthy) Limit(nodes int) int {
	if m.Percent {
		return nodes * m.Value / 100
	}
	return m.Value
}

// GetMaxUnhealthy returns the limit, or nil when unset (off); ErrInvalid
// when the stored value does not parse.
func (s Storage) GetMaxUnhealthy(ctx context.Context) (*MaxUnhealthy, error) {
	data, _, err := s.get(ctx, KeySabakanMaxUnhealthy)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseStoredMaxUnhealthy(data)
}

func parseStoredMaxUnhealthy(data []byte) (*MaxUnhealthy, error) {
	m, err := ParseMaxUnhealthy(string(data))
	if err != nil {
		return nil, fmt.Errorf("stored %s: %w: %w (set it with ckecli sabakan set-max-unhealthy)", KeySabakanMaxUnhealthy, ErrInvalid, err)
	}
	return &m, nil
}

// SetMaxUnhealthy stores the limit.
func (s Storage) SetMaxUnhealthy(ctx context.Context, m MaxUnhealthy) error {
	if _, err := ParseMaxUnhealthy(m.String()); err != nil {
		return err
	}
	return s.put(ctx, KeySabakanMaxUnhealthy, []byte(m.String()))
}

// GetPlan returns the stored plan's JSON (planreport.Stored), or
// ErrNotFound.
func (s Storage) GetPlan(ctx context.Context) ([]byte, error) {
	data, _, err := s.get(ctx, KeySabakanPlan)
	return data, err
}

// PutPlan stores a plan (planreport.MarshalStored) while leaderKey exists.
func (s Storage) PutPlan(ctx context.Context, leaderKey string, data []byte) error {
	return s.leaderPut(ctx, leaderKey, KeySabakanPlan, data)
}

// DeleteMaxUnhealthy removes the limit.
func (s Storage) DeleteMaxUnhealthy(ctx context.Context) error {
	_, err := s.Client.Delete(ctx, s.Key(KeySabakanMaxUnhealthy))
	return err
}

// ChangeStatus is change management's part of sabakan/status (docs/design.md 11):
// what held the tick's writes, what is pending, and what the daemon must
// remember across leaders (the inventory's digest and since when it is
// unchanged).
type ChangeStatus struct {
	// Trigger is the trigger the tick ran with.
	Trigger string `json:"trigger,omitempty"`
	// Pending is the plan from the cluster as the tick left it; nil when
	// the tick did not get as far as computing one.
	Pending *PlanSummary `json:"pending,omitempty"`
	// Quiet is the inventory's stillness; kept by every tick that
	// queried sabakan, whether or not a quiet time is set.
	Quiet *QuietStatus `json:"quiet,omitempty"`
	// Unhealthy counts the unhealthy nodes against max-unhealthy; nil when
	// no limit is set.
	Unhealthy *UnhealthyStatus `json:"unhealthy,omitempty"`
	// Release says what released the plan being applied (the trigger set
	// to schedule, or the end of quiet time); kept on the history entries
	// of its steps until the plan settles or is held again.
	Release string `json:"release,omitempty"`
}

// PlanSummary sums up the pending plan in the status.
type PlanSummary struct {
	// Result is how the plan ends: settled, refused or max-steps.
	Result string `json:"result"`
	// Steps is the number of steps pending.
	Steps int `json:"steps"`
	// NextOp and NextChanges are the first pending step (at most
	// MaxChanges of its NextChangeCount changes).
	NextOp          string   `json:"nextOp,omitempty"`
	NextChanges     []Change `json:"nextChanges,omitempty"`
	NextChangeCount int      `json:"nextChangeCount,omitempty"`
	// Error is a refused plan's error.
	Error string `json:"error,omitempty"`
	// Digest identifies the plan stored in sabakan/plan (all of it but
	// the time), so that an unchanged plan is not written again.
	Digest string `json:"digest,omitempty"`
}

// QuietStatus is the inventory's stillness (docs/design.md 11.3).
type QuietStatus struct {
	// QuietTime is the quiet time the tick ran with ("0s": off).
	QuietTime string `json:"quietTime"`
	// InventoryDigest identifies the set of serials sabakan returned;
	// InventorySince is when the daemon first saw that set.
	InventoryDigest string    `json:"inventoryDigest"`
	InventorySince  time.Time `json:"inventorySince"`
	// Remaining is the time left before writes resume ("" when quiet).
	Remaining string `json:"remaining,omitempty"`
	// LastMoved names the machines that changed state most recently,
	// while that is less than the quiet time ago.
	LastMoved []string `json:"lastMoved,omitempty"`
}

// UnhealthyStatus is the count of unhealthy nodes against max-unhealthy
// (docs/design.md 11.4).
type UnhealthyStatus struct {
	Count        int    `json:"count"`
	Nodes        int    `json:"nodes"`
	MaxUnhealthy string `json:"maxUnhealthy"`
	// Limit is MaxUnhealthy for this many nodes.
	Limit int `json:"limit"`
	// Addresses are the first MaxChanges unhealthy nodes.
	Addresses []string `json:"addresses,omitempty"`
}

// Trigger is the trigger (TriggerSchedule when unset) and the mod revision
// of its key (0 when unset).
func (s *Snapshot) Trigger() (string, int64, error) {
	data, rev, err := s.get(KeySabakanTrigger)
	if err != nil {
		return TriggerSchedule, 0, nil
	}
	t, err := parseStoredTrigger(data)
	return t, rev, err
}

// QuietTime is the quiet time (0 when unset: off).
func (s *Snapshot) QuietTime() (time.Duration, error) {
	data, _, err := s.get(KeySabakanQuietTime)
	if err != nil {
		return 0, nil
	}
	return parseStoredQuietTime(data)
}

// MaxUnhealthy is the limit of unhealthy nodes (nil when unset: off).
func (s *Snapshot) MaxUnhealthy() (*MaxUnhealthy, error) {
	data, _, err := s.get(KeySabakanMaxUnhealthy)
	if err != nil {
		return nil, nil
	}
	return parseStoredMaxUnhealthy(data)
}
