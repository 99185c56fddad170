package machine

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/internal/strictjson"
)

const one = `{"spec":{"serial":"s1","labels":null,"rack":1,"indexInRack":2,"role":"cs","ipv4":["10.0.0.1"],
"registerDate":"2024-01-01T00:00:00Z","retireDate":"2030-01-01T00:00:00Z","bmc":{"bmcType":"IPMI-2.0"}},
"status":{"state":"HEALTHY","duration":12.5}}`

func TestParseShapes(t *testing.T) {
	for _, doc := range []string{"[" + one + "]", `{"data":{"searchMachines":[` + one + `]}}`} {
		ms, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("Parse(%.30s...): %v", doc, err)
		}
		if len(ms) != 1 || ms[0].Spec.Serial != "s1" || ms[0].Status.Duration != 12.5 || ms[0].Address() != "10.0.0.1" {
			t.Errorf("Parse = %+v", ms)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ doc, want string }{
		{``, "empty input"},
		{`"x"`, "want a JSON array"},
		{`{"data":{}}`, "without data.searchMachines"},
		{`{"errors":[{"message":"x"}]}`, "without data.searchMachines"},
		{`[{"spec":{"serial":""},"status":{"state":"HEALTHY"}}]`, "machines[0]: spec.serial: must not be empty"},
		{`[{"spec":{"serial":"s9"},"status":{"state":"BROKEN"}}]`, `machines[0] (serial s9): status.state: unknown state "BROKEN"`},
		{`[{"spec":{"serial":"s9","rack":"1"},"status":{"state":"HEALTHY"}}]`, `machines[0].spec.rack: must be a 64-bit integer, got the string "1" (line 1, column 32)`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) error = %v, want it to contain %q", c.doc, err, c.want)
		}
	}
}

func TestLifetimeDaysTruncates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		retire time.Time
		want   int
	}{
		{now.Add(24*time.Hour - time.Second), 0},
		{now.Add(24 * time.Hour), 1},
		{now.Add(-24*time.Hour + time.Second), 0},
		{now.Add(-24*time.Hour - time.Second), -1},
		{now.AddDate(0, 0, 1000), 1000},
	}
	for _, c := range cases {
		m := Machine{Spec: Spec{RetireDate: c.retire}}
		if got := m.LifetimeDays(now); got != c.want {
			t.Errorf("LifetimeDays(retire %s) = %d, want %d", c.retire, got, c.want)
		}
	}
}

func mk(serial string, ips ...string) Machine {
	reg := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	return Machine{Spec: Spec{Serial: serial, IPv4: ips, RegisterDate: reg, RetireDate: reg.AddDate(5, 0, 0)}, Status: Status{State: StateHealthy}}
}

func TestSanitize(t *testing.T) {
	ms := []Machine{
		mk("b", "10.0.0.1"),
		mk("a", "10.0.0.1"), // same address, smaller serial: kept
		mk("c"),             // no address
		mk("d", "fe80::1"),  // not IPv4
		mk("e", "10.0.0.5"),
		mk("e", "10.0.0.6"), // duplicate serial
		mk("f", "10.0.0.7"),
		mk("g", "10.0.0.8"),  // negative rack
		mk("h", "10.0.0.9"),  // negative index in rack
		mk("i", "10.0.0.10"), // no register date
		mk("j", "10.0.0.11"), // no retire date
	}
	ms[7].Spec.Rack = -1
	ms[8].Spec.IndexInRack = -2
	ms[9].Spec.RegisterDate = time.Time{}
	ms[10].Spec.RetireDate = time.Time{}
	ms[6].Spec.Labels = []Label{{Name: "ok", Value: "1"}, {Name: "bad", Value: "!"}}
	valid := func(name, value string) error {
		if value == "!" {
			return errors.New("bad value")
		}
		return nil
	}
	got, warnings := Sanitize(ms, valid)
	var serials []string
	for _, m := range got {
		serials = append(serials, m.Spec.Serial+"@"+m.Address())
	}
	if s := strings.Join(serials, " "); s != "a@10.0.0.1 e@10.0.0.5 f@10.0.0.7" {
		t.Errorf("kept %s, want a@10.0.0.1 e@10.0.0.5 f@10.0.0.7", s)
	}
	if len(got[2].Spec.Labels) != 1 || got[2].Spec.Labels[0].Name != "ok" {
		t.Errorf("labels of f = %+v, want only ok", got[2].Spec.Labels)
	}
	if len(ms[6].Spec.Labels) != 2 {
		t.Error("Sanitize modified its input")
	}
	wantWarnings := []string{
		"machine b: address 10.0.0.1 is also used by machine a: ignored",
		"machine c: no IPv4 address: ignored",
		`machine d: ipv4[0] "fe80::1" is not an IPv4 address: ignored`,
		"machine e: duplicate serial: later entry ignored",
		`machine f: label "bad" skipped: bad value`,
		"machine g: spec.rack -1 is negative: ignored",
		"machine h: spec.indexInRack -2 is negative: ignored",
		"machine i: spec.registerDate is the zero time (year 1): ignored",
		"machine j: spec.retireDate is the zero time (year 1): ignored",
	}
	if strings.Join(warnings, "\n") != strings.Join(wantWarnings, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(wantWarnings, "\n"))
	}
}

// A serial twice is a broken answer: Validate refuses it, naming it.
func TestValidateRefusesDuplicateSerials(t *testing.T) {
	ms := []Machine{mk("a", "10.0.0.1"), mk("b", "10.0.0.2"), mk("a", "10.0.0.3")}
	err := Validate(ms)
	if err == nil || !strings.Contains(err.Error(), "machines[2]: spec.serial: a is also machines[0]'s") {
		t.Errorf("Validate = %v, want the duplicate serial a named", err)
	}
	if err := Validate(ms[:2]); err != nil {
		t.Errorf("Validate of unique serials: %v", err)
	}
}

func TestParseState(t *testing.T) {
	if s, err := ParseState("retiring"); err != nil || s != StateRetiring {
		t.Errorf("ParseState(retiring) = %v, %v", s, err)
	}
	if _, err := ParseState("gone"); err == nil {
		t.Error("ParseState(gone) succeeded")
	}
}

func TestRoles(t *testing.T) {
	ms := []Machine{
		{Spec: Spec{Serial: "1", Role: "storage"}},
		{Spec: Spec{Serial: "2", Role: "compute"}},
		{Spec: Spec{Serial: "3", Role: "compute"}},
		{Spec: Spec{Serial: "4", Role: ""}},
		{Spec: Spec{Serial: "5", Role: "storage"}},
		{Spec: Spec{Serial: "6", Role: "gpu"}},
	}
	if got, want := strings.Join(Roles(ms), ","), "compute,gpu,storage"; got != want {
		t.Errorf("Roles = %q, want %q", got, want)
	}
	if got := Roles(nil); got == nil || len(got) != 0 {
		t.Errorf("Roles(nil) = %#v, want an empty, non-nil list", got)
	}
}

// TestParseKeepsOffset: dates keep the UTC offset and the fractional
// seconds sabakan returned, in both shapes of the file.
func TestParseKeepsOffset(t *testing.T) {
	m := strings.NewReplacer(`"2024-01-01T00:00:00Z"`, `"2024-04-01T09:00:00.123456+09:00"`,
		`"2030-01-01T00:00:00Z"`, `"2031-08-01T05:00:00-05:30"`).Replace(one)
	for _, doc := range []string{"[" + m + "]", `{"data":{"searchMachines":[` + m + `]}}`} {
		ms, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		reg, ret := ms[0].Spec.RegisterDate, ms[0].Spec.RetireDate
		if got := reg.Format(time.RFC3339Nano); got != "2024-04-01T09:00:00.123456+09:00" {
			t.Errorf("registerDate = %s", got)
		}
		if got := ret.Format(time.RFC3339Nano); got != "2031-08-01T05:00:00-05:30" {
			t.Errorf("retireDate = %s", got)
		}
	}
}

// TestParseRefusesTrailingData: a file holds one JSON value, array or
// GraphQL response; anything after it is refused, whatever it is.
func TestParseRefusesTrailingData(t *testing.T) {
	for _, doc := range []string{"[" + one + "]", `{"data":{"searchMachines":[` + one + `]}}`} {
		for _, tail := range []string{"]", " ]\n", "}", "[]", " {}", " x", "\n" + doc} {
			// Where the trailing data starts.
			line, col := strictjson.Position([]byte(doc+tail), len(doc)+len(tail)-len(strings.TrimLeft(tail, " \n")))
			_, err := Parse([]byte(doc + tail))
			if want := fmt.Sprintf("trailing data after the JSON value, from line %d, column %d: remove it", line, col); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Parse(%.20s...%q) = %v, want trailing data refused", doc, tail, err)
			}
		}
		if _, err := Parse([]byte(doc + " \n\t")); err != nil {
			t.Errorf("Parse with trailing white space: %v", err)
		}
	}
	// Other errors keep their own message.
	for _, doc := range []string{`[{"spec":{"serial":"s","rack":"1"}}]`, `[{"spec":{"serial":"s","rack":"1"}}] `} {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), `machines[0].spec.rack: must be a 64-bit integer, got the string "1" (line 1, column 31)`) {
			t.Errorf("Parse(%s) = %v, want the type error", doc, err)
		}
	}
}

// sanitizeReference is Sanitize as docs/design.md 1.1 states it, without the
// shortcuts: sort by serial, keep the first of each serial and address,
// drop invalid labels.
func sanitizeReference(ms []Machine, valid LabelValidator) []Machine {
	sorted := slices.Clone(ms)
	slices.SortStableFunc(sorted, func(a, b Machine) int { return strings.Compare(a.Spec.Serial, b.Spec.Serial) })
	var out []Machine
	serials, addrs := map[string]bool{}, map[string]bool{}
	for _, m := range sorted {
		if serials[m.Spec.Serial] {
			continue
		}
		serials[m.Spec.Serial] = true
		ip, err := netip.ParseAddr(m.Address())
		if err != nil || !ip.Is4() || addrs[m.Address()] {
			continue
		}
		addrs[m.Address()] = true
		var kept []Label
		for _, l := range m.Spec.Labels {
			if valid(l.Name, l.Value) == nil {
				kept = append(kept, l)
			}
		}
		if len(kept) != len(m.Spec.Labels) {
			m.Spec.Labels = kept
		}
		out = append(out, m)
	}
	return out
}

// TestSanitizeMatchesReference: random inventories (serials and addresses
// that repeat, in any order, labels valid or not anywhere in the list)
// give what the plain statement of the rules gives, and each distinct
// label is checked once.
func TestSanitizeMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var ms []Machine
		for i := range rapid.IntRange(0, 30).Draw(t, "machines") {
			m := mk(rapid.SampledFrom([]string{"a", "b", "c", "d", "e", "f"}).Draw(t, "serial"),
				rapid.SampledFrom([]string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.03", "fd00::1"}).Draw(t, "address"))
			if rapid.IntRange(0, 9).Draw(t, "no address") == 0 {
				m.Spec.IPv4 = nil
			}
			for range rapid.IntRange(0, 4).Draw(t, "labels") {
				m.Spec.Labels = append(m.Spec.Labels, Label{
					Name:  rapid.SampledFrom([]string{"x", "y", "z"}).Draw(t, "name"),
					Value: rapid.SampledFrom([]string{"1", "2", "!"}).Draw(t, "value"),
				})
			}
			m.Spec.IndexInRack = i
			ms = append(ms, m)
		}
		calls := map[Label]int{}
		valid := func(name, value string) error {
			calls[Label{name, value}]++
			if value == "!" {
				return errors.New("bad value")
			}
			return nil
		}
		input := slices.Clone(ms)
		for i := range input {
			input[i].Spec.Labels = slices.Clone(ms[i].Spec.Labels)
		}
		got, _ := Sanitize(ms, valid)
		for l, n := range calls {
			if n != 1 {
				t.Fatalf("label %v checked %d times", l, n)
			}
		}
		want := sanitizeReference(input, func(name, value string) error {
			if value == "!" {
				return errors.New("bad value")
			}
			return nil
		})
		if len(got) != len(want) {
			t.Fatalf("kept %d machines, want %d", len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(*got[i], want[i]) {
				t.Fatalf("machine %d = %+v, want %+v", i, *got[i], want[i])
			}
		}
		if !reflect.DeepEqual(ms, input) {
			t.Fatal("Sanitize modified its input")
		}
	})
}

// TestEchoesAreBounded: a huge serial, address or label from the inventory
// is echoed cut to 1 KiB in warnings and errors, never whole.
func TestEchoesAreBounded(t *testing.T) {
	huge := strings.Repeat("x", 5<<20)
	ms := []Machine{mk(huge + "a"), mk("b", huge), mk("c", "10.0.0.3")}
	ms[2].Spec.Labels = []Label{{Name: huge, Value: huge}}
	valid := func(name, value string) error { return errors.New("invalid value " + value) }
	_, warnings := Sanitize(ms, valid)
	if len(warnings) != 3 {
		t.Fatalf("warnings %d, want 3", len(warnings))
	}
	for _, w := range warnings {
		if len(w) > 3*1024 || !strings.Contains(w, "bytes more)") {
			t.Errorf("warning of %d bytes: %.60q", len(w), w)
		}
	}
	dup := []Machine{mk(huge, "10.0.0.1"), mk(huge, "10.0.0.2")}
	if err := Validate(dup); err == nil || len(err.Error()) > 2*1024 {
		t.Errorf("Validate of a duplicate huge serial: %d bytes", len(fmt.Sprint(err)))
	}
}

// validateByMap is Validate as it was, with a map of every serial: the
// reference of Validate's sorted path.
func validateByMap(ms []Machine) error {
	seen := make(map[string]int, len(ms))
	for i := range ms {
		m := &ms[i]
		if m.Spec.Serial == "" {
			return fmt.Errorf("machines[%d]: spec.serial: must not be empty", i)
		}
		if j, ok := seen[m.Spec.Serial]; ok {
			return fmt.Errorf("machines[%d]: spec.serial: %s is also machines[%d]'s: serials are unique in sabakan, so the list is broken", i, m.Spec.Serial, j)
		}
		seen[m.Spec.Serial] = i
		if !m.Status.State.Valid() {
			return fmt.Errorf("machines[%d] (serial %s): status.state: unknown state %q (want one of %s)",
				i, m.Spec.Serial, string(m.Status.State), stateList())
		}
	}
	return nil
}

// TestValidateMatchesMap: on lists in serial order or not, with serials
// twice, empty or with unknown states anywhere, Validate gives the error
// the map of every serial gives.
func TestValidateMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 12).Draw(t, "machines")
		ms := make([]Machine, n)
		for i := range ms {
			ms[i] = mk(fmt.Sprintf("s%02d", 2*i), "10.0.0.1")
		}
		for range rapid.IntRange(0, 3).Draw(t, "edits") {
			if n == 0 {
				break
			}
			i := rapid.IntRange(0, n-1).Draw(t, "at")
			switch rapid.IntRange(0, 3).Draw(t, "edit") {
			case 0:
				ms[i].Spec.Serial = ms[rapid.IntRange(0, n-1).Draw(t, "copy of")].Spec.Serial
			case 1:
				ms[i].Spec.Serial = rapid.SampledFrom([]string{"", "s", "s05", "t", "a"}).Draw(t, "serial")
			case 2:
				ms[i].Status.State = "ODD"
			default:
				j := rapid.IntRange(0, n-1).Draw(t, "swap with")
				ms[i], ms[j] = ms[j], ms[i]
			}
		}
		if got, want := fmt.Sprint(Validate(ms)), fmt.Sprint(validateByMap(ms)); got != want {
			t.Fatalf("Validate: %s\nwith a map: %s", got, want)
		}
	})
}

// TestSound: a node may keep HEALTHY, UPDATING and UNINITIALIZED, and no
// other state.
func TestSound(t *testing.T) {
	for _, s := range States {
		want := s == StateHealthy || s == StateUpdating || s == StateUninitialized
		if s.Sound() != want {
			t.Errorf("%s.Sound() = %v, want %v", s, s.Sound(), want)
		}
	}
}
