package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// node is the label set the label-constraint tests evaluate on.
var node = LabelMap{
	"topology.kubernetes.io/zone":  "rack3",
	"sabakan.cke.cybozu.com/gpu":   "a100",
	"sabakan.cke.cybozu.com/note":  "rack 3, row (b)",
	"sabakan.cke.cybozu.com/quote": `say "hi"`,
	"sabakan.cke.cybozu.com/empty": "",
	"in":                           "not",
}

func TestLabelConstraintForms(t *testing.T) {
	for _, tc := range []struct {
		in     string
		op     LabelOp
		values []string
		want   bool // on node
	}{
		// equality: every spelling of the seed
		{"topology.kubernetes.io/zone is rack3", LabelEqual, []string{"rack3"}, true},
		{"topology.kubernetes.io/zone = rack3", LabelEqual, []string{"rack3"}, true},
		{"topology.kubernetes.io/zone == rack3", LabelEqual, []string{"rack3"}, true},
		{"topology.kubernetes.io/zone==rack4", LabelEqual, []string{"rack4"}, false},
		{"topology.kubernetes.io/zone=rack3", LabelEqual, []string{"rack3"}, true},
		// non-equality
		{"topology.kubernetes.io/zone is not rack3", LabelNotEqual, []string{"rack3"}, false},
		{"topology.kubernetes.io/zone != rack4", LabelNotEqual, []string{"rack4"}, true},
		{"topology.kubernetes.io/zone!=rack3", LabelNotEqual, []string{"rack3"}, false},
		// inclusion, exclusion
		{"topology.kubernetes.io/zone in (rack0, rack1, rack3)", LabelIn, []string{"rack0", "rack1", "rack3"}, true},
		{"topology.kubernetes.io/zone in (rack0,rack1)", LabelIn, []string{"rack0", "rack1"}, false},
		{"topology.kubernetes.io/zone in(rack3)", LabelIn, []string{"rack3"}, true},
		{"topology.kubernetes.io/zone not in (rack0, rack3)", LabelNotIn, []string{"rack0", "rack3"}, false},
		{"topology.kubernetes.io/zone not in (rack0)", LabelNotIn, []string{"rack0"}, true},
		{"  topology.kubernetes.io/zone\tin ( rack3 , rack3 )  ", LabelIn, []string{"rack3"}, true},
		// quoted values hold spaces, commas, parentheses, the other quote
		{`sabakan.cke.cybozu.com/note is "rack 3, row (b)"`, LabelEqual, []string{"rack 3, row (b)"}, true},
		{`sabakan.cke.cybozu.com/note in ('x', "rack 3, row (b)")`, LabelIn, []string{"x", "rack 3, row (b)"}, true},
		{`sabakan.cke.cybozu.com/quote = 'say "hi"'`, LabelEqual, []string{`say "hi"`}, true},
		{`sabakan.cke.cybozu.com/empty is ""`, LabelEqual, []string{""}, true},
		{`sabakan.cke.cybozu.com/empty != ''`, LabelNotEqual, []string{""}, false},
		{`topology.kubernetes.io/zone is "not"`, LabelEqual, []string{"not"}, false},
		// a keyword as a label key or a value
		{"in is not not", LabelNotEqual, []string{"not"}, false},
		{"in in (in, not)", LabelIn, []string{"in", "not"}, true},
		// a missing label satisfies only is not, != and not in
		{"sabakan.cke.cybozu.com/missing is x", LabelEqual, []string{"x"}, false},
		{"sabakan.cke.cybozu.com/missing = x", LabelEqual, []string{"x"}, false},
		{"sabakan.cke.cybozu.com/missing == ''", LabelEqual, []string{""}, false},
		{"sabakan.cke.cybozu.com/missing in (x, '')", LabelIn, []string{"x", ""}, false},
		{"sabakan.cke.cybozu.com/missing is not x", LabelNotEqual, []string{"x"}, true},
		{"sabakan.cke.cybozu.com/missing != x", LabelNotEqual, []string{"x"}, true},
		{"sabakan.cke.cybozu.com/missing not in (x)", LabelNotIn, []string{"x"}, true},
		// a long list (looked up in a set)
		{"topology.kubernetes.io/zone in (r0, r1, r2, r4, r5, r6, r7, r8, rack3)", LabelIn,
			[]string{"r0", "r1", "r2", "r4", "r5", "r6", "r7", "r8", "rack3"}, true},
		{"topology.kubernetes.io/zone not in (r0, r1, r2, r4, r5, r6, r7, r8, r9)", LabelNotIn,
			[]string{"r0", "r1", "r2", "r4", "r5", "r6", "r7", "r8", "r9"}, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			c, err := ParseLabelConstraint(tc.in)
			if err != nil {
				t.Fatalf("ParseLabelConstraint: %v", err)
			}
			if c.Op != tc.op || !slices.Equal(c.Values, tc.values) {
				t.Errorf("parsed op %d values %q, want op %d values %q", c.Op, c.Values, tc.op, tc.values)
			}
			if got := c.Matches(node); got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
			// The canonical form parses back to the same constraint.
			back, err := ParseLabelConstraint(c.String())
			if err != nil || back.Key != c.Key || back.Op != c.Op || !slices.Equal(back.Values, c.Values) {
				t.Errorf("String() = %q does not parse back: %+v, %v", c.String(), back, err)
			}
		})
	}
}

func TestLabelConstraintErrors(t *testing.T) {
	for _, tc := range []struct {
		in  string
		col int
		msg string // the part of the message saying what was expected
	}{
		{"", 1, "expected a label key, got an empty constraint"},
		{"   ", 4, "expected a label key, got an empty constraint"},
		{"(zone) is x", 1, `expected a label key, got "("`},
		{`"zone" is x`, 1, `expected a label key, got the quoted value zone`},
		{"zone", 5, "expected an operator after the label key (is, =, ==, is not, !=, in, not in), got the end of the constraint"},
		{"zone equals x", 6, `expected an operator after the label key (is, =, ==, is not, !=, in, not in), got "equals"`},
		{"zone IS x", 6, `got "IS"`},
		{"zone < x", 6, `expected an operator after the label key (is, =, ==, is not, !=, in, not in), got "<"`},
		{"zone =< x", 6, `got "=<"`},
		{"zone is", 8, `expected a value after "is", got the end of the constraint`},
		{"zone is not", 12, `expected a value after "is not", got the end of the constraint`},
		{"in is not", 10, `expected a value after "is not", got the end of the constraint`},
		{"zone ==", 8, `expected a value after "==", got the end of the constraint`},
		{"zone = (a)", 8, `expected a value after "=", got "("`},
		{"zone != ,", 9, `expected a value after "!=", got ","`},
		{"zone is a b", 11, `expected the end of the constraint, got "b"`},
		{"zone is 'a' 'b'", 13, `expected the end of the constraint, got the quoted value b`},
		{"zone in a, b", 9, `expected "(" to open the list of values, got "a"`},
		{"zone in", 8, `expected "(" to open the list of values, got the end of the constraint`},
		{"zone in ()", 10, `expected a value in the list, got ")"`},
		{"zone in (a,)", 12, `expected a value in the list, got ")"`},
		{"zone in (a b)", 12, `expected "," or ")" after a value in the list, got "b"`},
		{"zone in (a, b", 14, `expected "," or ")" after a value in the list, got the end of the constraint`},
		{"zone in (a) x", 13, `expected the end of the constraint, got "x"`},
		{"zone not (a)", 10, `expected "in" after "not", got "("`},
		{"zone not", 9, `expected "in" after "not", got the end of the constraint`},
		{"zone ! x", 6, `expected "!=", got "!" alone`},
		{`zone is "rack 1`, 9, `unterminated quoted value: expected a closing "`},
		{`zone in ('a, b)`, 10, `unterminated quoted value: expected a closing '`},
		{"UPPER_/x is y", 1, `invalid label key "UPPER_/x"`},
		{"-bad is y", 1, `invalid label key "-bad"`},
		// columns count characters, not bytes
		{`zone is "ラック" x`, 15, `expected the end of the constraint, got "x"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseLabelConstraint(tc.in)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v, want a *SyntaxError", err)
			}
			if se.Column != tc.col || !strings.Contains(se.Msg, tc.msg) {
				t.Errorf("error %q, want column %d and %q", err, tc.col, tc.msg)
			}
			if want := fmt.Sprintf("character %d of the constraint: ", tc.col); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q does not start with %q", err, want)
			}
		})
	}
}

func TestMetricConstraintForms(t *testing.T) {
	for _, tc := range []struct {
		in    string
		op    MetricOp
		value float64
		// holds on 10, 20, 30 and no value
		want [4]bool
	}{
		{"temp is 20", MetricEqual, 20, [4]bool{false, true, false, false}},
		{"temp = 20", MetricEqual, 20, [4]bool{false, true, false, false}},
		{"temp == 20", MetricEqual, 20, [4]bool{false, true, false, false}},
		{"temp is not 20", MetricNotEqual, 20, [4]bool{true, false, true, false}},
		{"temp != 20", MetricNotEqual, 20, [4]bool{true, false, true, false}},
		{"temp greater than 20", MetricGreater, 20, [4]bool{false, false, true, false}},
		{"temp gt 20", MetricGreater, 20, [4]bool{false, false, true, false}},
		{"temp > 20", MetricGreater, 20, [4]bool{false, false, true, false}},
		{"temp greater than or equal 20", MetricGreaterOrEqual, 20, [4]bool{false, true, true, false}},
		{"temp gte 20", MetricGreaterOrEqual, 20, [4]bool{false, true, true, false}},
		{"temp >= 20", MetricGreaterOrEqual, 20, [4]bool{false, true, true, false}},
		{"temp => 20", MetricGreaterOrEqual, 20, [4]bool{false, true, true, false}},
		{"temp less than 20", MetricLess, 20, [4]bool{true, false, false, false}},
		{"temp lt 20", MetricLess, 20, [4]bool{true, false, false, false}},
		{"temp < 20", MetricLess, 20, [4]bool{true, false, false, false}},
		{"temp less than or equal 20", MetricLessOrEqual, 20, [4]bool{true, true, false, false}},
		{"temp lte 20", MetricLessOrEqual, 20, [4]bool{true, true, false, false}},
		{"temp <= 20", MetricLessOrEqual, 20, [4]bool{true, true, false, false}},
		{"temp =< 20", MetricLessOrEqual, 20, [4]bool{true, true, false, false}},
		{"temp<=20", MetricLessOrEqual, 20, [4]bool{true, true, false, false}},
		{"temp>1.5e1", MetricGreater, 15, [4]bool{false, true, true, false}},
		{"temp > -5", MetricGreater, -5, [4]bool{true, true, true, false}},
		{"node:temp_c.max-1 < 25.5", MetricLess, 25.5, [4]bool{true, true, false, false}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			c, err := ParseMetricConstraint(tc.in)
			if err != nil {
				t.Fatalf("ParseMetricConstraint: %v", err)
			}
			if c.Op != tc.op || c.Value != tc.value {
				t.Errorf("parsed op %d value %v, want op %d value %v", c.Op, c.Value, tc.op, tc.value)
			}
			for i, v := range []float64{10, 20, 30, math.NaN()} {
				if got := c.Holds(v); got != tc.want[i] {
					t.Errorf("Holds(%v) = %v, want %v", v, got, tc.want[i])
				}
			}
			back, err := ParseMetricConstraint(c.String())
			if err != nil || back != c {
				t.Errorf("String() = %q does not parse back: %+v, %v", c.String(), back, err)
			}
		})
	}
}

func TestMetricConstraintErrors(t *testing.T) {
	for _, tc := range []struct {
		in  string
		col int
		msg string
	}{
		{"", 1, "expected a metric name, got an empty constraint"},
		{"9temp < 3", 1, `expected a metric name (a letter or _, then letters, digits, _ : . -), got "9temp"`},
		{"'temp' < 3", 1, "expected a metric name"},
		{"temp", 5, "expected a comparison after the metric name (is, =, ==, is not, !=, greater than, gt, >, greater than or equal, gte, >=, =>, less than, lt, <, less than or equal, lte, <=, =<), got the end of the constraint"},
		{"temp in (1)", 6, `expected a comparison after the metric name`},
		{"temp greater 3", 14, `expected "than" after "greater", got "3"`},
		{"temp less than or 3", 19, `expected "equal" after "or", got "3"`},
		{"temp greater than or", 21, `expected "equal" after "or", got the end of the constraint`},
		{"temp <", 7, "expected a number after the comparison, got the end of the constraint"},
		{"temp < 'x'", 8, "expected a number after the comparison, got the quoted value x"},
		{"temp < hot", 8, `expected a finite number after the comparison, got "hot"`},
		{"temp < Inf", 8, `expected a finite number after the comparison, got "Inf"`},
		{"temp < NaN", 8, `expected a finite number after the comparison, got "NaN"`},
		{"temp < 1e999", 8, `expected a finite number after the comparison, got "1e999"`},
		{"temp < 3 4", 10, `expected the end of the constraint, got "4"`},
		{"temp is not", 12, "expected a number after the comparison, got the end of the constraint"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseMetricConstraint(tc.in)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v, want a *SyntaxError", err)
			}
			if se.Column != tc.col || !strings.Contains(se.Msg, tc.msg) {
				t.Errorf("error %q, want column %d and %q", err, tc.col, tc.msg)
			}
		})
	}
}

func FuzzParseConstraint(f *testing.F) {
	for _, s := range []string{
		"topology.kubernetes.io/zone in (rack0, rack1)", `a not in ("x y", 'z')`, "a is not b", "a != b",
		"temp greater than or equal 3", "temp =< -1e3", `a is "`, "a ! b", "x in (", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if c, err := ParseLabelConstraint(s); err == nil {
			back, err := ParseLabelConstraint(c.String())
			if err != nil || back.Key != c.Key || back.Op != c.Op || !slices.Equal(back.Values, c.Values) {
				t.Fatalf("%q: canonical form %q does not parse back: %v", s, c.String(), err)
			}
			c.Matches(node)
		} else if !errors.As(err, new(*SyntaxError)) {
			t.Fatalf("%q: error %v is not a *SyntaxError", s, err)
		}
		if c, err := ParseMetricConstraint(s); err == nil {
			back, err := ParseMetricConstraint(c.String())
			if err != nil || back != c {
				t.Fatalf("%q: canonical form %q does not parse back: %v", s, c.String(), err)
			}
		} else if !errors.As(err, new(*SyntaxError)) {
			t.Fatalf("%q: error %v is not a *SyntaxError", s, err)
		}
	})
}

// TestInListRepeats: a value listed twice is kept once, in the order of
// its first appearance.
func TestInListRepeats(t *testing.T) {
	c, err := ParseLabelConstraint("topology.kubernetes.io/zone in (b, a, b, c, a)")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Values, ","); got != "b,a,c" {
		t.Errorf("values %s, want b,a,c", got)
	}
}

// BenchmarkInList: parsing "in (...)" with n distinct values grows
// linearly with n (it was quadratic: 100,000 values took seconds).
func BenchmarkInList(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("v%d", i)
		}
		s := "topology.kubernetes.io/zone in (" + strings.Join(vals, ", ") + ")"
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseLabelConstraint(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// LabelMap is a node's labels as a map.
type LabelMap map[string]string

// Label returns the label's value and whether it is set.
func (m LabelMap) Label(key string) (string, bool) {
	v, ok := m[key]
	return v, ok
}
