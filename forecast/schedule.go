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

// next is the first instant of the period after the one that starts at
// s.
func (r Resolution) next(s time.Time) time.Time {
	switch r {
	case Month:
		return s.AddDate(0, 1, 0)
	case Week:
		return s.AddDate(0, 0, 7)
	}
	return s.AddDate(0, 0, 1)
}

// transition is when one machine's assumed state changes, as the forecast
// dates it: the start of the period of the change, never before now.
// HEALTHY is a made-up machine's arrival.
type transition struct {
	machine int
	at      time.Time
	state   machine.State
}

// schedule is the forecast's calendar: the dates of the events (the
// first is now) and, for each, the machines whose assumed state changes
// then, in the order they were dated. Machines bought during the
// forecast are dated as they are bought (add), on dates after the
// event that buys them.
type schedule struct {
	now, until time.Time
	res        Resolution
	lead       time.Duration
	dates      []time.Time
	changes    [][]transition
}

// plan dates every machine's change from now to until (add), the first
// event being now, whether or not anything changes then. Machines from
// arriving on are made up, and arrive on their RegisterDate.
func plan(ms []*machine.Machine, arriving int, now, until time.Time, res Resolution, lead time.Duration) *schedule {
	s := &schedule{now: now, until: until, res: res, lead: lead}
	byDate := map[time.Time][]transition{now: nil}
	for i, m := range ms {
		for _, t := range s.of(i, m, i >= arriving) {
			byDate[t.at] = append(byDate[t.at], t)
		}
	}
	for t := range byDate {
		s.dates = append(s.dates, t)
	}
	slices.SortFunc(s.dates, func(a, b time.Time) int { return a.Compare(b) })
	for _, t := range s.dates {
		s.changes = append(s.changes, byDate[t])
	}
	return s
}

// of is the changes of machine i, m, up to until: arriving on its
// RegisterDate when it arrives, RETIRING lead before its retire date
// (when lead is not 0, and after it arrives) and RETIRED at it, each on
// the first day of its period, or now when that day has passed. A
// machine without a retire date never retires; one already RETIRED
// stays so; one already RETIRING only becomes RETIRED.
func (s *schedule) of(i int, m *machine.Machine, arrives bool) []transition {
	at := func(t time.Time) time.Time {
		if p := s.res.start(t); p.After(s.now) {
			return p
		}
		return s.now
	}
	var out []transition
	since := s.now
	if arrives {
		since = m.Spec.RegisterDate
		if since.After(s.until) {
			return nil
		}
		out = append(out, transition{i, since, machine.StateHealthy})
	}
	retire := m.Spec.RetireDate
	if retire.IsZero() || m.Status.State == machine.StateRetired {
		return out
	}
	retiredAt := at(retire)
	if arrives && !retiredAt.After(since) {
		retiredAt = s.res.next(s.res.start(since))
	}
	if s.lead > 0 && m.Status.State != machine.StateRetiring {
		if t := at(retire.Add(-s.lead)); (!arrives || t.After(since)) && t.Before(retiredAt) && !t.After(s.until) {
			out = append(out, transition{i, t, machine.StateRetiring})
		}
	}
	if !retiredAt.After(s.until) {
		out = append(out, transition{i, retiredAt, machine.StateRetired})
	}
	return out
}

// add dates the changes of machine i, m, which arrives on its
// RegisterDate, an event's date; its later changes go to the events of
// their dates, made when none was.
func (s *schedule) add(i int, m *machine.Machine) {
	for _, t := range s.of(i, m, true)[1:] {
		k, found := slices.BinarySearchFunc(s.dates, t.at, func(a, b time.Time) int { return a.Compare(b) })
		if !found {
			s.dates = slices.Insert(s.dates, k, t.at)
			s.changes = slices.Insert(s.changes, k, nil)
		}
		s.changes[k] = append(s.changes[k], t)
	}
}
