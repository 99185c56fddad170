package cluster

import (
	"strings"
	"testing"
)

// TestCNIConfListFlags: only loadOnlyInlinedPlugins, when true, needs
// plugins; false, in a boolean or a string of any case, does not.
func TestCNIConfListFlags(t *testing.T) {
	for _, data := range []string{
		`{"name":"n","disableCheck":true,"disableGC":"TRUE"}`,
		`{"name":"n","loadOnlyInlinedPlugins":false}`,
		`{"name":"n","loadOnlyInlinedPlugins":"False"}`,
	} {
		if err := cniConfList([]byte(data)); err != nil {
			t.Errorf("cniConfList(%s) = %v, want nil", data, err)
		}
	}
}

// TestCNIConfListOrder: a list with several problems is refused for the
// first in libcni's order: name, versions, flags, plugins.
func TestCNIConfListOrder(t *testing.T) {
	cases := []struct{ data, want string }{
		{`{"cniVersion":1,"cniVersions":["x"],"disableGC":1,"plugins":{}}`, `needs a "name"`},
		{`{"name":"n","cniVersion":1,"cniVersions":["x"],"disableGC":1,"plugins":{}}`, `"cniVersion" must be a string`},
		{`{"name":"n","cniVersions":["x"],"disableGC":1,"plugins":{}}`, `"cniVersions"[0]: invalid version "x"`},
		{`{"name":"n","disableGC":1,"plugins":{}}`, `"disableGC" must be true or false`},
		{`{"name":"n","plugins":{}}`, `"plugins" must be a list`},
	}
	for _, c := range cases {
		err := cniConfList([]byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cniConfList(%s) = %v, want an error with %s", c.data, err, c.want)
		}
	}
}
