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
	// storage knows keys, transactions and its own records: no model,
	// no decision, no report format, nothing above it.
	"storage": {"cluster", "template", "constraints", "machine", "policy", "labels", "taints", "sabakan",
		"generator", "planreport", "intake", "tick", "daemon", "liveview", "reason"},
	// The reason codes are the bottom of every layer.
	"reason": {"storage", "intake", "generator", "tick", "daemon"},
	// The generator is pure: no I/O edge, nothing above it.
	"generator": {"storage", "sabakan", "kubenodes", "intake", "daemon", "liveview"},
	// The world is the generator's with the holds: as pure, and below
	// the decision that makes it.
	"world": {"storage", "sabakan", "kubenodes", "intake", "tick", "daemon", "liveview", "planreport", "decision"},
	// The resilience report is as pure as the world it runs.
	"resilience": {"storage", "sabakan", "kubenodes", "intake", "tick", "daemon", "liveview", "planreport"},
	// So is the forecast.
	"forecast": {"storage", "sabakan", "kubenodes", "intake", "tick", "daemon", "liveview", "planreport"},
	// The input path reads settings for the step and the views; it is
	// not one of them.
	"intake": {"tick", "daemon", "liveview", "planreport"},
	// The step runs in any host: it knows none of them.
	"tick": {"daemon", "liveview", "cmd/ckegen", "cmd/ckegenctl"},
	// The decision is the step's and the views': it knows neither the
	// step that writes it nor any view or host.
	"decision": {"tick", "daemon", "liveview", "cmd/ckegen", "cmd/ckegenctl"},
	// The models parse documents; they know no edge.
	"cluster":       {"storage", "sabakan", "generator"},
	"template":      {"storage", "sabakan", "generator"},
	"constraints":   {"storage", "sabakan", "generator"},
	"machine":       {"storage", "sabakan", "generator"},
	"policy":        {"storage", "sabakan", "generator", "intake"},
	"failuredomain": {"storage", "sabakan", "generator", "policy"},
	"assume":        {"storage", "sabakan", "generator", "intake"},
	// The views (the page, the map, who acts) never write the cluster:
	// they link the decision, not the step that writes it, nor the loop.
	"liveview": {"daemon", "tick", "cmd/ckegen", "cmd/ckegenctl"},
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

// TestDoublesApart: the product links no double and no test harness:
// only the compatible server's own command links the compatible server,
// and nothing outside internal/testutil links a package of it.
func TestDoublesApart(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if strings.HasPrefix(pkg, "internal/testutil/") || strings.HasPrefix(pkg, "mtest") || strings.HasPrefix(pkg, "fakesabakan") {
			continue
		}
		for _, dep := range fields[1:] {
			dep = strings.TrimPrefix(dep, module)
			switch {
			case strings.HasPrefix(dep, "internal/testutil/"):
				t.Errorf("%s links the test harness %s", pkg, dep)
			case (dep == "fakesabakan" || strings.HasPrefix(dep, "fakesabakan/")) && pkg != "cmd/fakesabakan":
				t.Errorf("%s links the compatible server %s, a double", pkg, dep)
			}
		}
	}
}
