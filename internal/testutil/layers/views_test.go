package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// viewsForbidden are the functions and types a view must not use, by
// package: each reads, sanitizes or counts what the decision does
// (decision.Gatherer.Gather and decision.Decide), so that a view using
// one would show a second computation of it. sabakan's types (Options,
// Variables) stay allowed; its clients do not.
var viewsForbidden = map[string][]string{
	// Asking sabakan: only the gather does.
	module + "sabakan": {"Clients", "Client", "NewClient"},
	// Sanitizing machines: only the gather does.
	module + "machine": {"Sanitize"},
	// Reading the settings and the inputs: only the gather does.
	module + "intake": {"Sanitize", "Reader", "FetchMetrics", "ReadFiles"},
	// Counting the control planes by failure domain: only Decide does.
	module + "failuredomain": {"ControlPlanes", "Limit", "Quorum", "BreaksQuorum"},
	// The worker rate: only of the decision's cluster after its step
	// (Decision.Rate, as the status says it).
	module + "generator": {"RateOf"},
}

// viewsForbiddenMethods are methods a view must not call, whatever their
// receiver: asking sabakan, reading the settings, fetching metrics.
var viewsForbiddenMethods = []string{"SearchMachines", "ReadEach", "FetchMetrics"}

// TestViewsDecideOnce: the views (package liveview: the page, the map,
// who acts, the plan's decision) show what one gather and one decision
// read and decided. Its production files use none of viewsForbidden and
// call none of viewsForbiddenMethods: they query sabakan, read the
// inputs from etcd, sanitize machines and count failure domains and the
// worker rate only through decision.Gatherer and decision.Decide.
func TestViewsDecideOnce(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, module+"liveview").CombinedOutput()
	if err != nil {
		t.Fatalf("go list liveview: %v\n%s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 {
		t.Fatalf("go list liveview: no file: %q", out)
	}
	fset := token.NewFileSet()
	for _, name := range fields[1:] {
		f, err := parser.ParseFile(fset, filepath.Join(fields[0], name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range viewUses(fset, f) {
			t.Errorf("%s: the views read, sanitize and count only through the decision (decision.Gatherer, decision.Decide)", bad)
		}
	}
	// The offline map reads its files (intake.ReadFiles: the gather of
	// a view of files) and decides on them (decision.Files), as the
	// online one decides on etcd and sabakan.
	f, err := parser.ParseFile(fset, "../../../cmd/ckegenctl/sabakan_map.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range viewUses(fset, f) {
		if !strings.Contains(bad, "ReadFiles") {
			t.Errorf("%s: the map reads, sanitizes and counts only through the decision (decision.Files, decision.Decide)", bad)
		}
	}
}

// TestViewUsesFinds: the check finds a forbidden use however the package
// is imported (by its name, renamed, as a method call), and passes the
// allowed ones.
func TestViewUsesFinds(t *testing.T) {
	const src = `package liveview

import (
	"github.com/ckegen/ckegen/machine"
	fd "github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/sabakan"
)

var o sabakan.Options

func draw(ms []machine.Machine, c *sabakan.Client) {
	kept, _ := machine.Sanitize(ms, nil)
	_ = fd.ControlPlanes(fd.Rack(), kept, nil)
	_, _ = c.SearchMachines(nil, sabakan.Variables{})
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := viewUses(fset, f)
	want := []string{
		"x.go:11:36: sabakan.Client",
		"x.go:12:13: machine.Sanitize",
		"x.go:13:6: failuredomain.ControlPlanes",
		"x.go:14:11: .SearchMachines",
	}
	if !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// viewUses lists the forbidden uses in f, at their positions.
func viewUses(fset *token.FileSet, f *ast.File) []string {
	byName := map[string]string{} // the name a package is used by -> its path
	var out []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := viewsForbidden[path]; !ok {
			continue
		}
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name == "." {
			out = append(out, fset.Position(imp.Pos()).String()+": a dot import of "+path)
		}
		byName[name] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok {
			if path, ok := byName[x.Name]; ok {
				if slices.Contains(viewsForbidden[path], sel.Sel.Name) {
					out = append(out, fset.Position(sel.Pos()).String()+": "+filepath.Base(path)+"."+sel.Sel.Name)
				}
				return true
			}
		}
		if slices.Contains(viewsForbiddenMethods, sel.Sel.Name) {
			out = append(out, fset.Position(sel.Sel.Pos()).String()+": ."+sel.Sel.Name)
		}
		return true
	})
	return out
}
