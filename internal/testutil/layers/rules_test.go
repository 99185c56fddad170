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

// A rule of the decision has one home, and every view and what-if calls
// it: a second copy would be a bug waiting for the first change. The
// checks below find the copies a caller could keep.

// refusalErrors are the generator's refusals: only generator.Refusal
// turns them into the reason code the status records. A caller asks it
// (generator.Refusal(err) == reason.TooManyNonExistent), never the
// sentinel.
var refusalErrors = []string{"ErrNotEnoughMachines", "ErrTooManyNonExistent"}

// soundStates are the states a node may keep (machine.State.Sound): a
// switch case, a condition or a list naming two of them, one of them
// UPDATING or UNINITIALIZED, is a copy of that rule.
var soundStates = []string{"StateHealthy", "StateUpdating", "StateUninitialized"}

// worldCalls are the generator's functions only the world calls: a plan,
// a tick, the breaker's count and its taints are world.World's (Plan,
// Tick, Breaker), with its holds; a caller of its own would skip them.
var worldCalls = []string{"Run", "Tick", "Taints", "Unhealthy"}

// rulesExempt are the packages that may name what the checks look for:
// the rules' homes, and the double of sabakan (its state transitions).
var rulesExempt = []string{module + "generator", module + "machine", module + "fakesabakan"}

// homes are, for a check, the packages besides rulesExempt that are its
// home: the world runs the generator's loop, the decision and the view
// of who writes decide the gate.
var homes = map[string][]string{
	"world": {module + "world"},
	"gate":  {module + "decision", module + "liveview"},
}

// TestRulesOnce: outside their homes, no production file maps the
// generator's refusals to reason codes or lists the states a node may
// keep.
func TestRulesOnce(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	fset := token.NewFileSet()
	files := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) < 3 || slices.Contains(rulesExempt, fields[0]) ||
			strings.Contains(fields[0], "/internal/testutil") || strings.Contains(fields[0], "/mtest") {
			continue
		}
		for _, name := range fields[2:] {
			f, err := parser.ParseFile(fset, filepath.Join(fields[1], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files++
			for _, bad := range ruleCopies(fset, f, fields[0]) {
				t.Error(bad)
			}
		}
	}
	if files < 100 {
		t.Fatalf("checked %d files: go list found too few of the module's", files)
	}
}

// TestRuleCopiesFinds: the check finds each kind of copy, however the
// package is imported, and passes the calls of the rules' homes.
func TestRuleCopiesFinds(t *testing.T) {
	const src = `package view

import (
	"errors"

	gen "github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/reason"
)

func code(err error) string {
	if err != nil && errors.Is(err, gen.ErrTooManyNonExistent) {
		return reason.TooManyNonExistent
	}
	return gen.Refusal(err)
}

func bad(s machine.State) bool {
	switch s {
	case machine.StateHealthy, machine.StateUpdating:
		return false
	}
	return s != machine.StateUninitialized && s != machine.StateHealthy
}

var keep = []machine.State{machine.StateUninitialized, machine.StateHealthy}

func good(s machine.State) bool {
	return s.Sound() || s == machine.StateHealthy
}

var colours = map[machine.State]string{machine.StateHealthy: "32", machine.StateUpdating: "33", machine.StateUninitialized: "34"}

func plan(in gen.Input, m *machine.Machine) {
	gen.Run(in, nil, false, 10, gen.Tick)
	m.Status.State = machine.StateRetired
	_ = decision.Gate
	decision.Gate(decision.Ownership{}, "", false, time.Time{}, 0)
	m.Status.Duration = 0
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "view.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := ruleCopies(fset, f, "example.com/view")
	want := []string{"view.go:13:34", "view.go:21:2", "view.go:24:9", "view.go:27:12", "view.go:36:2", "view.go:37:2", "view.go:39:2"}
	if len(got) != len(want) {
		t.Fatalf("found %d copies, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w+":") {
			t.Errorf("copy %d at %q, want at %s", i, got[i], w)
		}
	}
}

// ruleCopies lists the copies of a rule in f, of package pkg, at their
// positions.
func ruleCopies(fset *token.FileSet, f *ast.File, pkg string) []string {
	gen, mach, dec := importedAs(f, module+"generator"), importedAs(f, module+"machine"), importedAs(f, module+"decision")
	var out []string
	// names lists the sound states n names, each once.
	names := func(n ast.Node) []string {
		var got []string
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && isPkg(sel.X, mach) && slices.Contains(soundStates, sel.Sel.Name) && !slices.Contains(got, sel.Sel.Name) {
				got = append(got, sel.Sel.Name)
			}
			return true
		})
		return got
	}
	copied := func(n ast.Node) {
		got := names(n)
		if len(got) >= 2 && (slices.Contains(got, "StateUpdating") || slices.Contains(got, "StateUninitialized")) {
			out = append(out, fset.Position(n.Pos()).String()+": names "+strings.Join(got, ", ")+": which states a node may keep is machine.State.Sound")
		}
	}
	inner := map[ast.Node]bool{} // conditions within one already counted
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			switch {
			case !ok:
			case isPkg(sel.X, gen) && slices.Contains(worldCalls, sel.Sel.Name) && !slices.Contains(homes["world"], pkg):
				out = append(out, fset.Position(n.Pos()).String()+": generator."+sel.Sel.Name+": the leader's ticks and plans are world.World's (Tick, Plan, Breaker), holds included")
			case isPkg(sel.X, dec) && sel.Sel.Name == "Gate" && !slices.Contains(homes["gate"], pkg):
				out = append(out, fset.Position(n.Pos()).String()+": decision.Gate: who writes is liveview.Writes")
			}
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "State" {
					if st, ok := sel.X.(*ast.SelectorExpr); ok && st.Sel.Name == "Status" {
						out = append(out, fset.Position(l.Pos()).String()+": sets a machine's state: the state edit is machine.Machine.WithState (world.World.Set through the query)")
					}
				}
			}
		case *ast.SelectorExpr:
			if isPkg(n.X, gen) && slices.Contains(refusalErrors, n.Sel.Name) {
				out = append(out, fset.Position(n.Pos()).String()+": generator."+n.Sel.Name+": the reason code of a refusal is generator.Refusal's")
			}
		case *ast.CaseClause:
			copied(&ast.CompositeLit{Lbrace: n.Pos(), Elts: n.List})
		case *ast.BinaryExpr:
			if (n.Op == token.LAND || n.Op == token.LOR) && !inner[n] {
				copied(n) // one condition, counted once
				ast.Inspect(n, func(m ast.Node) bool { inner[m] = true; return true })
			}
		case *ast.CompositeLit:
			if !slices.ContainsFunc(n.Elts, func(e ast.Expr) bool { _, kv := e.(*ast.KeyValueExpr); return kv }) {
				copied(n)
			}
		}
		return true
	})
	return out
}

// importedAs is the name f uses for the package path ("" when f does not
// import it).
func importedAs(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return filepath.Base(path)
		}
	}
	return ""
}

func isPkg(x ast.Expr, name string) bool {
	id, ok := x.(*ast.Ident)
	return ok && name != "" && id.Name == name
}
