package fakesabakan

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/machine"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func mk(serial string, rack int, role string, state machine.State, retireDays int, labels ...machine.Label) machine.Machine {
	return machine.Machine{
		Spec: machine.Spec{
			Serial: serial, Rack: rack, Role: role, Labels: labels,
			IPv4:         []string{fmt.Sprintf("10.0.%d.%d", rack, len(serial))},
			RegisterDate: now.AddDate(-1, 0, 0),
			RetireDate:   now.Add(time.Duration(retireDays) * 24 * time.Hour),
		},
		Status: machine.Status{State: state},
	}
}

func lbl(n, v string) machine.Label { return machine.Label{Name: n, Value: v} }

func testStore(t *testing.T) *Store {
	t.Helper()
	s := NewStore(func() time.Time { return now })
	err := s.Load([]machine.Machine{
		mk("c1", 1, "cs", machine.StateHealthy, 100, lbl("dc", "ty3"), lbl("gpu", "yes")),
		mk("a1", 1, "boot", machine.StateHealthy, 100),
		mk("b2", 2, "cs", machine.StateRetired, -5, lbl("dc", "ty3")),
		mk("d2", 2, "ss", machine.StateUnreachable, 10, lbl("dc", "ty4")),
		mk("e3", 3, "ss", machine.StateHealthy, 9),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ip(n int) *int { return &n }

func TestSearchMatching(t *testing.T) {
	s := testStore(t)
	cases := []struct {
		name              string
		having, notHaving *Query
		want              string
	}{
		{"no conditions", nil, nil, "a1 b2 c1 d2 e3"},
		{"empty params match all", &Query{}, &Query{}, "a1 b2 c1 d2 e3"},
		{"empty lists are no condition", &Query{Racks: []int{}, Roles: []string{}, States: []machine.State{}, Labels: []machine.Label{}}, &Query{Racks: []int{}}, "a1 b2 c1 d2 e3"},
		{"having labels: all must match", &Query{Labels: []machine.Label{lbl("dc", "ty3"), lbl("gpu", "yes")}}, nil, "c1"},
		{"having one label", &Query{Labels: []machine.Label{lbl("dc", "ty3")}}, nil, "b2 c1"},
		{"notHaving labels: any excludes", nil, &Query{Labels: []machine.Label{lbl("dc", "ty4"), lbl("gpu", "yes")}}, "a1 b2 e3"},
		{"label value must match", &Query{Labels: []machine.Label{lbl("dc", "ty5")}}, nil, ""},
		{"racks OR", &Query{Racks: []int{1, 3}}, nil, "a1 c1 e3"},
		{"notHaving racks", nil, &Query{Racks: []int{1}}, "b2 d2 e3"},
		{"roles", &Query{Roles: []string{"ss"}}, nil, "d2 e3"},
		{"states", &Query{States: []machine.State{machine.StateHealthy, machine.StateRetired}}, nil, "a1 b2 c1 e3"},
		{"having conditions AND", &Query{Racks: []int{2}, Roles: []string{"cs"}}, nil, "b2"},
		{"default notHaving: boot and RETIRED each excluded", nil, &Query{Roles: []string{"boot"}, States: []machine.State{machine.StateRetired}}, "c1 d2 e3"},
		{"having and notHaving", &Query{Roles: []string{"cs", "ss"}}, &Query{States: []machine.State{machine.StateUnreachable}}, "b2 c1 e3"},
		// e3 has 9 days left, d2 10, b2 -5.
		{"minDays having: days >= N (at boundary)", &Query{MinDaysBeforeRetire: ip(10)}, nil, "a1 c1 d2"},
		{"minDays having: just above", &Query{MinDaysBeforeRetire: ip(11)}, nil, "a1 c1"},
		{"minDays notHaving: days < N kept (at boundary)", nil, &Query{MinDaysBeforeRetire: ip(10)}, "b2 e3"},
		{"minDays notHaving: just below", nil, &Query{MinDaysBeforeRetire: ip(9)}, "b2"},
		{"minDays negative", &Query{MinDaysBeforeRetire: ip(-5)}, nil, "a1 b2 c1 d2 e3"},
		{"minDays zero", &Query{MinDaysBeforeRetire: ip(0)}, nil, "a1 c1 d2 e3"},
		{"no match gives empty", &Query{Roles: []string{"gpu"}}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := s.Search(c.having, c.notHaving)
			if got == nil {
				t.Fatal("Search returned nil, want an empty list")
			}
			var serials []string
			for _, m := range got {
				serials = append(serials, m.Spec.Serial)
			}
			if g := strings.Join(serials, " "); g != c.want {
				t.Errorf("got %q, want %q", g, c.want)
			}
		})
	}
}

func TestLifetimeDaysTruncated(t *testing.T) {
	s := NewStore(func() time.Time { return now })
	m := mk("x", 1, "cs", machine.StateHealthy, 0)
	m.Spec.RetireDate = now.Add(10*24*time.Hour - time.Second) // 9.99 days: 9
	if err := s.Load([]machine.Machine{m}); err != nil {
		t.Fatal(err)
	}
	if got := s.Search(&Query{MinDaysBeforeRetire: ip(10)}, nil); len(got) != 0 {
		t.Error("9.99 days counted as 10")
	}
	if got := s.Search(&Query{MinDaysBeforeRetire: ip(9)}, nil); len(got) != 1 {
		t.Error("9.99 days not counted as 9")
	}
}

// TestLifecycle tries every pair of states.
func TestLifecycle(t *testing.T) {
	allowed := map[machine.State][]machine.State{
		machine.StateUninitialized: {machine.StateHealthy, machine.StateRetiring},
		machine.StateHealthy:       {machine.StateUnhealthy, machine.StateUnreachable, machine.StateUpdating, machine.StateRetiring},
		machine.StateUnhealthy:     {machine.StateHealthy, machine.StateUnreachable, machine.StateUpdating, machine.StateRetiring},
		machine.StateUnreachable:   {machine.StateHealthy, machine.StateUnhealthy, machine.StateUpdating, machine.StateRetiring},
		machine.StateUpdating:      {machine.StateUninitialized},
		machine.StateRetiring:      {machine.StateRetired},
		machine.StateRetired:       {machine.StateUninitialized},
	}
	for _, from := range machine.States {
		for _, to := range machine.States {
			clock := now
			s := NewStore(func() time.Time { return clock })
			if err := s.Load([]machine.Machine{mk("m", 1, "cs", from, 100)}); err != nil {
				t.Fatal(err)
			}
			clock = clock.Add(time.Minute)
			m, err := s.SetState("m", to)
			want := from == to || slices.Contains(allowed[from], to)
			switch {
			case want && err != nil:
				t.Errorf("%s -> %s refused: %v", from, to, err)
			case !want && (!errors.Is(err, ErrRefused) || err.Error() != fmt.Sprintf("transition from [ %s ] to [ %s ] is forbidden", lower(from), lower(to))):
				t.Errorf("%s -> %s: error %v, want sabakan's refusal", from, to, err)
			case want && from == to && m.Status.Duration != 60:
				t.Errorf("%s -> %s (same state) reset the duration to %v", from, to, m.Status.Duration)
			case want && from != to && m.Status.Duration != 0:
				t.Errorf("%s -> %s: duration %v, want 0", from, to, m.Status.Duration)
			}
			if got, _ := s.Get("m"); !want && got.Status.State != from {
				t.Errorf("%s -> %s refused but the state changed to %s", from, to, got.Status.State)
			}
		}
	}
}

func TestDurationCounts(t *testing.T) {
	clock := now
	s := NewStore(func() time.Time { return clock })
	m := mk("m", 1, "cs", machine.StateHealthy, 100)
	m.Status.Duration = 30
	if err := s.Load([]machine.Machine{m}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(90 * time.Second)
	got, _ := s.Get("m")
	if got.Status.Duration != 120 || !got.Status.Timestamp.Equal(now.Add(-30*time.Second)) {
		t.Errorf("duration %v timestamp %v, want 120 and %v", got.Status.Duration, got.Status.Timestamp, now.Add(-30*time.Second))
	}
}

// TestConcurrentAccess: searches, reads and state changes from many
// goroutines at once (run with -race).
func TestConcurrentAccess(t *testing.T) {
	s := testStore(t)
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 200; i++ {
				switch (g + i) % 4 {
				case 0:
					_, _ = s.SetState("d2", machine.StateHealthy)
				case 1:
					_, _ = s.SetState("d2", machine.StateUnreachable)
				case 2:
					if got := s.Search(nil, nil); len(got) != 5 {
						t.Errorf("search returned %d machines", len(got))
					}
				default:
					_ = s.SetLabel("e3", "k", fmt.Sprint(i))
					_, _ = s.Get("e3")
				}
			}
		}(g)
	}
	for g := 0; g < 8; g++ {
		<-done
	}
}
