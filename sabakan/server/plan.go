package server

import (
	"fmt"

	"github.com/vektah/gqlparser/v2/ast"
)

// A plan is a query operation compiled against the schema: for each object,
// the fields to write in order, under their response keys, with the
// arguments of the root fields evaluated. Rendering a plan (render.go)
// writes the response straight from the store, where graph-gophers resolves
// every field through reflection and a resolver of its own (about 170
// allocations per machine).
//
// A plan is compiled only for what it renders exactly as graph-gophers
// does: query operations of searchMachines, machine and __typename, with
// aliases, fragments, @skip and @include. Anything else (a mutation,
// introspection, a literal graph-gophers reads differently) has no plan,
// and the request is executed by graph-gophers as before.
type plan struct {
	root []step
}

// fieldKind is one field of the schema.
type fieldKind uint8

const (
	kTypename fieldKind = iota
	kSearchMachines
	kMachine
	kSpec
	kStatus
	kSerial
	kLabels
	kRack
	kIndexInRack
	kRole
	kIPv4
	kRegisterDate
	kRetireDate
	kBMC
	kLabelName
	kLabelValue
	kBMCType
	kBMCIPv4
	kState
	kTimestamp
	kDuration
)

// fieldKinds are the fields a plan renders, by object type and name.
var fieldKinds = map[string]map[string]fieldKind{
	"Query":   {"searchMachines": kSearchMachines, "machine": kMachine},
	"Machine": {"spec": kSpec, "status": kStatus},
	"MachineSpec": {"serial": kSerial, "labels": kLabels, "rack": kRack, "indexInRack": kIndexInRack,
		"role": kRole, "ipv4": kIPv4, "registerDate": kRegisterDate, "retireDate": kRetireDate, "bmc": kBMC},
	"Label":         {"name": kLabelName, "value": kLabelValue},
	"BMC":           {"bmcType": kBMCType, "ipv4": kBMCIPv4},
	"MachineStatus": {"state": kState, "timestamp": kTimestamp, "duration": kDuration},
}

// step is one field of an object in the response.
type step struct {
	// key is the response key as written: `"alias":`.
	key  string
	kind fieldKind
	// typename is the answer of __typename.
	typename string
	// sub is the selection of an object field.
	sub []step
	// The arguments of searchMachines and machine.
	having, notHaving *Query
	serial            string
}

// maxPlanSelections bounds the selections a plan visits, below
// graph-gophers' own limit (selected.DefaultMaxSelections, 100,000), so
// that a query it refuses for its size never has a plan.
const maxPlanSelections = 10_000

// compiler compiles one operation of a validated document.
type compiler struct {
	schema *ast.Schema
	doc    *ast.QueryDocument
	vars   map[string]any
	// visited counts the selections visited, as graph-gophers counts them.
	visited int
}

// compilePlan compiles op, whose document gqlparser validated and whose
// variables it coerced (vars, in canonical form). It returns why there is
// no plan, or "".
func compilePlan(schema *ast.Schema, doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any) (*plan, string) {
	if op.Operation != ast.Query {
		return nil, string(op.Operation)
	}
	c := &compiler{schema: schema, doc: doc, vars: vars}
	root, why := c.selection("Query", op.SelectionSet)
	if why != "" {
		return nil, why
	}
	return &plan{root: root}, ""
}

// selection compiles the selection set sels of an object of type typ.
// Fields are grouped by response key in the order each key is first met,
// and the selections of a key's fields are merged, as graph-gophers does
// (collectFieldsToResolve).
func (c *compiler) selection(typ string, sels ast.SelectionSet) ([]step, string) {
	var order []string
	groups := map[string][]*ast.Field{}
	if why := c.collect(typ, sels, &order, groups); why != "" {
		return nil, why
	}
	steps := make([]step, 0, len(order))
	for _, key := range order {
		fields := groups[key]
		f := fields[0]
		st := step{key: `"` + key + `":`}
		if f.Name == "__typename" {
			st.kind, st.typename = kTypename, typ
			steps = append(steps, st)
			continue
		}
		k, ok := fieldKinds[typ][f.Name]
		if !ok {
			return nil, fmt.Sprintf("field %s.%s", typ, f.Name)
		}
		st.kind = k
		if f.Definition == nil {
			return nil, fmt.Sprintf("field %s.%s: not validated", typ, f.Name)
		}
		if sub := f.Definition.Type.Name(); c.schema.Types[sub] != nil && c.schema.Types[sub].Kind == ast.Object {
			var merged ast.SelectionSet
			for _, gf := range fields {
				merged = append(merged, gf.SelectionSet...)
			}
			var why string
			if st.sub, why = c.selection(sub, merged); why != "" {
				return nil, why
			}
		}
		if why := c.arguments(&st, f); why != "" {
			return nil, why
		}
		steps = append(steps, st)
	}
	return steps, ""
}

// collect adds the fields of sels to the fields of their response keys,
// expanding fragments and leaving out what @skip and @include leave out.
func (c *compiler) collect(typ string, sels ast.SelectionSet, order *[]string, groups map[string][]*ast.Field) string {
	for _, sel := range sels {
		if c.visited++; c.visited > maxPlanSelections {
			return "too many selections"
		}
		var dirs ast.DirectiveList
		switch sel := sel.(type) {
		case *ast.Field:
			dirs = sel.Directives
		case *ast.InlineFragment:
			dirs = sel.Directives
		case *ast.FragmentSpread:
			dirs = sel.Directives
		}
		skip, why := c.skipped(dirs)
		if why != "" {
			return why
		}
		if skip {
			continue
		}
		switch sel := sel.(type) {
		case *ast.Field:
			if groups[sel.Alias] == nil {
				*order = append(*order, sel.Alias)
			}
			groups[sel.Alias] = append(groups[sel.Alias], sel)
		case *ast.InlineFragment:
			if sel.TypeCondition != "" && sel.TypeCondition != typ {
				return "a fragment on " + sel.TypeCondition + " in " + typ
			}
			if why := c.collect(typ, sel.SelectionSet, order, groups); why != "" {
				return why
			}
		case *ast.FragmentSpread:
			def := c.doc.Fragments.ForName(sel.Name)
			if def == nil {
				return "fragment " + sel.Name + " not found"
			}
			if def.TypeCondition != typ {
				return "fragment " + sel.Name + " on " + def.TypeCondition + " in " + typ
			}
			if why := c.collect(typ, def.SelectionSet, order, groups); why != "" {
				return why
			}
		default:
			return fmt.Sprintf("selection %T", sel)
		}
	}
	return ""
}

// skipped evaluates @skip and @include; any other directive has no plan.
func (c *compiler) skipped(dirs ast.DirectiveList) (bool, string) {
	skip := false
	for _, d := range dirs {
		if d.Name != "skip" && d.Name != "include" {
			return false, "directive @" + d.Name
		}
	}
	for _, name := range []string{"skip", "include"} {
		d := dirs.ForName(name)
		if d == nil {
			continue
		}
		a := d.Arguments.ForName("if")
		if a == nil {
			return false, "@" + name + " without if"
		}
		v, err := a.Value.Value(c.vars)
		b, ok := v.(bool)
		if err != nil || !ok {
			return false, fmt.Sprintf("@%s(if: %v)", name, v)
		}
		if name == "skip" && b || name == "include" && !b {
			skip = true
		}
	}
	return skip, ""
}

// arguments evaluates the arguments of a root field into st.
func (c *compiler) arguments(st *step, f *ast.Field) string {
	switch st.kind {
	case kSearchMachines:
		for _, a := range []struct {
			name string
			dst  **Query
		}{{"having", &st.having}, {"notHaving", &st.notHaving}} {
			v, why := c.argument(f, a.name)
			if why != "" {
				return why
			}
			if *a.dst, why = paramsQuery(v); why != "" {
				return a.name + ": " + why
			}
		}
	case kMachine:
		v, why := c.argument(f, "serial")
		if why != "" {
			return why
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Sprintf("serial: %T", v)
		}
		st.serial = s
	default:
		if len(f.Arguments) > 0 {
			return "arguments of " + f.Name
		}
	}
	return ""
}

// argument returns the value of f's argument name, with its variables
// replaced, in the form the variables have (see canonical).
func (c *compiler) argument(f *ast.Field, name string) (any, string) {
	a := f.Arguments.ForName(name)
	if a == nil {
		return nil, ""
	}
	def := f.Definition.Arguments.ForName(name)
	if def == nil {
		return nil, "argument " + name + " not in the schema"
	}
	if why := plainLiteral(a.Value); why != "" {
		return nil, name + ": " + why
	}
	v, err := a.Value.Value(c.vars)
	if err != nil {
		return nil, name + ": " + err.Error()
	}
	return canonical(c.schema, def.Type, v), ""
}

// plainLiteral reports why a literal value may be read differently by
// graph-gophers than by gqlparser, or "". They differ on string literals:
// gqlparser does not join a surrogate pair ("\uD83D\uDE00"), and the two
// trim the lines of a block string differently. A string whose value is
// printable ASCII (a block string of one line) reads the same either way.
// ("\/", which graph-gophers' parser refuses, fails its validation: see
// planBody.)
func plainLiteral(v *ast.Value) string {
	switch v.Kind {
	case ast.StringValue, ast.BlockValue:
		for i := 0; i < len(v.Raw); i++ {
			if c := v.Raw[i]; c < 0x20 || c > 0x7e {
				return fmt.Sprintf("string literal %q", v.Raw)
			}
		}
	case ast.ListValue, ast.ObjectValue:
		for _, ch := range v.Children {
			if why := plainLiteral(ch.Value); why != "" {
				return why
			}
		}
	}
	return ""
}

// paramsQuery turns a MachineParams value into the query graph-gophers
// gives the resolver (paramsInput.query), or says why it cannot.
func paramsQuery(v any) (*Query, string) {
	if v == nil {
		return nil, ""
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Sprintf("want an object, got %T", v)
	}
	var p paramsInput
	for k, fv := range m {
		var why string
		switch k {
		case "labels":
			p.Labels, why = listOf(fv, func(x any) (*labelInput, string) {
				lm, ok := x.(map[string]any)
				if !ok {
					return nil, fmt.Sprintf("label: %T", x)
				}
				n, nok := lm["name"].(string)
				val, vok := lm["value"].(string)
				if !nok || !vok || len(lm) != 2 {
					return nil, fmt.Sprintf("label: %v", lm)
				}
				return &labelInput{Name: n, Value: val}, ""
			})
		case "racks":
			p.Racks, why = listOf(fv, intOf)
		case "roles":
			p.Roles, why = listOf(fv, stringOf)
		case "states":
			p.States, why = listOf(fv, stringOf)
		case "minDaysBeforeRetire":
			if fv != nil {
				var n gqlInt
				if n, why = intOf(fv); why == "" {
					p.MinDaysBeforeRetire = &n
				}
			}
		default:
			why = "field " + k
		}
		if why != "" {
			return nil, k + ": " + why
		}
	}
	return p.query(), ""
}

// listOf converts a list value; null is a nil pointer.
func listOf[T any](v any, elem func(any) (T, string)) (*[]T, string) {
	if v == nil {
		return nil, ""
	}
	xs, ok := v.([]any)
	if !ok {
		return nil, fmt.Sprintf("want a list, got %T", v)
	}
	out := make([]T, len(xs))
	for i, x := range xs {
		var why string
		if out[i], why = elem(x); why != "" {
			return nil, why
		}
	}
	return &out, ""
}

func intOf(v any) (gqlInt, string) {
	var n gqlInt
	if v == nil {
		return 0, "null in a list of Int!"
	}
	if err := n.UnmarshalGraphQL(v); err != nil {
		return 0, err.Error()
	}
	return n, ""
}

func stringOf(v any) (string, string) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Sprintf("want a string, got %T", v)
	}
	return s, ""
}
