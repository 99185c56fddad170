package generator

import (
	"cmp"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
)

// Score is a machine's score with the terms that make it up, so that every
// choice can be explained. In JSON a score is its Value (the terms are in
// the change's reason): that is the "score" of `ckegenctl sabakan generate
// --explain json` and of the daemon's history.
type Score struct {
	// Total is the sum of the integer terms of docs/design.md 3 (rack, lifetime,
	// health); Value adds the metric points.
	Total int
	// MetricPoints is the placement's metric score (docs/design.md 12.3), 0 without
	// a policy; Terms explain it, one per metric of the placement.
	MetricPoints float64
	Terms        []policy.Term
	// Removal is true for a removal score (lowest is removed), false for a
	// selection score (highest is added).
	Removal bool
	Rack    int
	// RackCount is the number of nodes of the same kind already in the rack
	// (including the machine itself for a removal score).
	RackCount  int
	RackPoints int
	Group      string
	// LifetimeDays is the number of whole days before the retire date.
	LifetimeDays   int
	LifetimePoints int
	State          machine.State
	HealthPoints   int
}

// Value is the whole score: Total plus the metric points.
func (s *Score) Value() float64 {
	return float64(s.Total) + s.MetricPoints
}

// MarshalJSON writes the score's value as explanations show it: an
// integer without metric points, else rounded to three decimals.
func (s Score) MarshalJSON() ([]byte, error) {
	return s.appendValue(nil), nil
}

// UnmarshalJSON reads a value; the terms stay zero. An integral value is
// the Total, any other splits into the integer Total and MetricPoints.
func (s *Score) UnmarshalJSON(data []byte) error {
	*s = Score{}
	var v float64
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	t := math.Floor(v)
	s.Total, s.MetricPoints = int(t), v-t
	return nil
}

// rackPoints is the rack-spread term: fewer nodes of the same kind in the
// rack score higher.
func rackPoints(rackCount int) int {
	return (100 - rackCount) * 10
}

// lifetimePoints is the lifetime term: +1 for each of more than 250, 500 and
// 1000 days left, -1 for each of more than 250, 500 and 1000 days past the
// retire date.
func lifetimePoints(days int) int {
	p := 0
	for _, t := range [...]int{250, 500, 1000} {
		if days > t {
			p++
		}
		if days < -t {
			p--
		}
	}
	return p
}

// healthPoints is the removal score's health term: healthy machines are
// kept.
func healthPoints(s machine.State) int {
	if s == machine.StateHealthy {
		return 1000
	}
	return 0
}

func selectionScore(m *machineInfo, rackCount int, group string) Score {
	s := Score{
		Rack:           m.rack,
		RackCount:      rackCount,
		RackPoints:     rackPoints(rackCount),
		Group:          group,
		LifetimeDays:   m.lifetimeDays,
		LifetimePoints: m.lifetimePoints,
		State:          m.state,
	}
	s.Total = s.RackPoints + s.LifetimePoints
	return s
}

func removalScore(m *machineInfo, rackCount int, group string) Score {
	s := selectionScore(m, rackCount, group)
	s.Removal = true
	s.HealthPoints = healthPoints(m.state)
	s.Total += s.HealthPoints
	return s
}

// String explains the score, e.g.
// "score 1002 = rack 3 with 0 control planes (+1000) + 612 days to retire (+2)".
// It is built with appends: Generate explains every one of thousands of
// picks.
func (s *Score) String() string {
	return string(s.appendTo(make([]byte, 0, 128)))
}

func (s *Score) appendTo(b []byte) []byte {
	if s.Removal {
		b = append(b, "removal score "...)
		b = s.appendValue(b)
		b = append(b, " = "...)
		b = append(b, s.State...)
		b = append(b, " ("...)
		b = appendSigned(b, s.HealthPoints)
		b = append(b, ") + "...)
	} else {
		b = append(b, "score "...)
		b = s.appendValue(b)
		b = append(b, " = "...)
	}
	b = append(b, "rack "...)
	b = strconv.AppendInt(b, int64(s.Rack), 10)
	b = append(b, " with "...)
	b = strconv.AppendInt(b, int64(s.RackCount), 10)
	b = append(b, ' ')
	b = append(b, s.Group...)
	if s.Removal {
		b = append(b, " incl. itself"...)
	}
	b = append(b, " ("...)
	b = appendSigned(b, s.RackPoints)
	b = append(b, ") + "...)
	b = strconv.AppendInt(b, int64(s.LifetimeDays), 10)
	b = append(b, " days to retire ("...)
	b = appendSigned(b, s.LifetimePoints)
	b = append(b, ')')
	for _, t := range s.Terms {
		b = append(b, " + "...)
		b = t.AppendText(b)
	}
	return b
}

// appendValue appends the score's value: its Total, or with metric points
// the value rounded to three decimals.
func (s *Score) appendValue(b []byte) []byte {
	if s.MetricPoints == 0 {
		return strconv.AppendInt(b, int64(s.Total), 10)
	}
	return appendRounded(b, s.Value())
}

// appendRounded appends v rounded to three decimals, without trailing
// zeros.
func appendRounded(b []byte, v float64) []byte {
	r := math.Round(v*1000) / 1000
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.AppendFloat(b, r, 'f', -1, 64)
}

// appendSigned appends n with its sign, as %+d does.
func appendSigned(b []byte, n int) []byte {
	if n >= 0 {
		b = append(b, '+')
	}
	return strconv.AppendInt(b, int64(n), 10)
}

// betterSelection is the total order of selection: higher score, then later
// retire date, then smaller serial, then smaller address.
func betterSelection(a *machineInfo, as float64, b *machineInfo, bs float64) bool {
	if as != bs {
		return as > bs
	}
	return laterFirst(a, b) < 0
}

// instant is a point in time as seconds and nanoseconds since the Unix
// epoch: 16 bytes without a location pointer, compared without calls.
type instant struct {
	sec  int64
	nsec int64
}

func instantOf(t time.Time) instant {
	return instant{sec: t.Unix(), nsec: int64(t.Nanosecond())}
}

func (a instant) compare(b instant) int {
	if c := cmp.Compare(a.sec, b.sec); c != 0 {
		return c
	}
	return cmp.Compare(a.nsec, b.nsec)
}

// laterFirst orders machines by later retire date, then smaller serial, then
// smaller address: the selection order among equal scores.
func laterFirst(a, b *machineInfo) int {
	if c := b.retireAt.compare(a.retireAt); c != 0 {
		return c
	}
	if a.serial != b.serial {
		if a.serial < b.serial {
			return -1
		}
		return 1
	}
	return strings.Compare(a.address, b.address)
}

// worseForRemoval is the total order of removal: lower score, then earlier
// retire date, then smaller serial, then smaller address.
func worseForRemoval(a *machineInfo, as float64, b *machineInfo, bs float64) bool {
	if as != bs {
		return as < bs
	}
	if c := a.retireAt.compare(b.retireAt); c != 0 {
		return c < 0
	}
	if a.serial != b.serial {
		return a.serial < b.serial
	}
	return a.address < b.address
}
