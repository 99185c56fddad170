package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ckegen/ckegen/"

// forbidden lists, for a package, the packages it must not depend on,
// directly or not.
var forbidden = map[string][]string{
	// storage knows CKE's keys and its own records: no decision, no
	// report format, nothing above it.
	"storage": {"generator", "policy", "planreport", "intake", "daemon", "liveview"},
	// The generator is pure: no I/O edge, nothing above it.
	"generator": {"storage", "sabakan", "metricprovider", "kubenodes", "intake", "daemon", "liveview"},
	// The input path reads settings for the loop and the views; it is
	// not one of them.
	"intake": {"daemon", "liveview", "web", "rackmap", "planreport"},
	// The models parse documents; they know no edge.
	"cluster":     {"storage", "sabakan", "generator"},
	"template":    {"storage", "sabakan", "generator"},
	"constraints": {"storage", "sabakan", "generator"},
	"machine":     {"storage", "sabakan", "generator"},
	"policy":      {"storage", "sabakan", "generator", "metricprovider"},
	// The views never write the cluster: they do not link the loop.
	"liveview": {"daemon"},
	"web":      {"daemon"},
}

// TestLayers: no package depends on a package of a layer above it.
func TestLayers(t *testing.T) {
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", module+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := map[string]bool{}
		for _, line := range strings.Fields(string(out)) {
			deps[strings.TrimPrefix(line, module)] = true
		}
		for _, b := range bad {
			if deps[b] {
				t.Errorf("%s depends on %s", pkg, b)
			}
		}
	}
}
