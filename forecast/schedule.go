package forecast

import (
	"fmt"
	"slices"
	"time"

	"github.com/ckegen/ckegen/machine"
)

// Resolution is the length of a period: the machines whose assumed state
// changes within one period take it on the period's first day.
type Resolution string

// The resolutions.
const (
	Month Resolution = "month"
	Week  Resolution = "week"
	Day   Resolution = "day"
)

// ParseResolution reads month, week or day.
func ParseResolution(s string) (Resolution, error) {
	switch r := Resolution(s); r {
	case Month, Week, Day:
		return r, nil
	}
	return "", fmt.Errorf("want month, week or day, got %q", s)
}

// start is the first instant of the period that holds t (UTC): the first
// of its month, the Monday of its week, or its day.
func (r Resolution) start(t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch r {
	case Month:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	case Week:
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		return day.AddDate(0, 0, -back)
	}
	return day
}

// transition is when one machine's assumed state changes, as the forecast
// dates it: the start of the period of the change, never before now.
type transition struct {
	machine int
	at      time.Time
	state   machine.State
}

// schedule is the forecast's calendar: the dates of the events (the
// first is now) and, for each, the machines whose assumed state changes
// then, in the machines' order.
type schedule struct {
	dates   []time.Time
	changes [][]transition
}

// plan dates every machine's change from now to until: RETIRING lead
// before its retire date (when lead is not 0) and RETIRED at it, each on
// the first day of its period, or now when that day has passed. A
// machine without a retire date never changes; one already RETIRED stays
// so; one already RETIRING only becomes RETIRED. The first event is now,
// whether or not anything changes then.
func plan(ms []*machine.Machine, now, until time.Time, res Resolution, lead time.Duration) schedule {
	at := func(t time.Time) time.Time {
		if s := res.start(t); s.After(now) {
			return s
		}
		return now
	}
	byDate := map[time.Time][]transition{now: nil}
	for i, m := range ms {
		retire := m.Spec.RetireDate
		if retire.IsZero() || m.Status.State == machine.StateRetired {
			continue
		}
		retiredAt := at(retire)
		if lead > 0 && m.Status.State != machine.StateRetiring {
			if t := at(retire.Add(-lead)); t.Before(retiredAt) && !t.After(until) {
				byDate[t] = append(byDate[t], transition{i, t, machine.StateRetiring})
			}
		}
		if !retiredAt.After(until) {
			byDate[retiredAt] = append(byDate[retiredAt], transition{i, retiredAt, machine.StateRetired})
		}
	}
	var s schedule
	for t := range byDate {
		s.dates = append(s.dates, t)
	}
	slices.SortFunc(s.dates, func(a, b time.Time) int { return a.Compare(b) })
	for _, t := range s.dates {
		s.changes = append(s.changes, byDate[t])
	}
	return s
}
