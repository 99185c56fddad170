package suggest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"listen", "listen", 0},
		{"lsten", "listen", 1},       // removed
		{"listenn", "listen", 1},     // added
		{"lizten", "listen", 1},      // replaced
		{"lsiten", "listen", 1},      // swapped: one edit, not two
		{"endpiont", "endpoints", 2}, // swapped and removed
		{"ca", "abc", 3},             // no swap over an edit in between
		{"héllo", "hello", 1},        // characters, not bytes
		{"Listen", "listen", 1},      // case counts
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (the same both ways)", c.b, c.a, got, c.want)
		}
	}
}

func TestNear(t *testing.T) {
	known := []string{"set-url", "get-url", "set-template", "status", "history", "xy"}
	for _, c := range []struct {
		name string
		want []string
	}{
		{"set-urll", []string{"set-url"}}, // the nearest only: get-url is two edits away
		{"get-urx", []string{"get-url"}},
		{"set-ur", []string{"set-url"}},
		{"xet-url", []string{"set-url", "get-url"}}, // as near: both, in known's order
		{"stauts", []string{"status"}},
		{"STATUS", []string{"status"}},  // case ignored
		{"hstroy", []string{"history"}}, // two edits
		{"hstr", nil},                   // three
		{"x", nil},                      // no suggestion as short as the name
		{"xz", []string{"xy"}},
		{"zz", nil},
	} {
		if got := Near(c.name, known); !slices.Equal(got, c.want) {
			t.Errorf("Near(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestFor(t *testing.T) {
	known := []string{"machines", "etcd-endpoints", "etcd-prefix", "listen"}
	for _, c := range []struct {
		name string
		want []string
	}{
		{"machine", []string{"machines"}},
		{"etcd-endpoint", []string{"etcd-endpoints"}},
		{"etcd", nil},                 // the start of two
		{"list", []string{"listen"}},  // two edits, before being a start
		{"mac", []string{"machines"}}, // the start of one
		{"ma", nil},                   // too short to be a start
	} {
		if got := For(c.name, known); !slices.Equal(got, c.want) {
			t.Errorf("For(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestOr(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"a"}, "--a"},
		{[]string{"a", "b"}, "--a or --b"},
		{[]string{"a", "b", "c"}, "--a, --b or --c"},
	} {
		if got := Or("--", c.names); got != c.want {
			t.Errorf("Or(%q) = %q, want %q", c.names, got, c.want)
		}
	}
}
