package sabakan

import (
	"os"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// upstreamSchema loads sabakan's published schema from the file named by
// SABAKAN_UPSTREAM_SCHEMA. CI sets it and a missing file fails there;
// elsewhere the tests that need it are skipped with how to run them.
func upstreamSchema(t *testing.T) *ast.Schema {
	t.Helper()
	path := os.Getenv("SABAKAN_UPSTREAM_SCHEMA")
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("SABAKAN_UPSTREAM_SCHEMA is not set; .ci/run sets it to ../shared/sabakan/schema.graphqls")
		}
		t.Skip("set SABAKAN_UPSTREAM_SCHEMA to sabakan's schema.graphqls (e.g. ../shared/sabakan/schema.graphqls) to check conformance")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("SABAKAN_UPSTREAM_SCHEMA: %v", err)
	}
	s, gerr := gqlparser.LoadSchema(&ast.Source{Name: path, Input: string(data)})
	if gerr != nil {
		t.Fatalf("upstream schema: %v", gerr)
	}
	return s
}

func projectSchema(t *testing.T) *ast.Schema {
	t.Helper()
	s, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: Schema})
	if err != nil {
		t.Fatalf("project schema: %v", err)
	}
	return s
}

// TestSchemaConformance: every type, field, argument and enum value of the
// project's schema exists in sabakan's, with the same type.
func TestSchemaConformance(t *testing.T) {
	up, own := upstreamSchema(t), projectSchema(t)
	checked := 0
	for name, def := range own.Types {
		if def.BuiltIn {
			continue
		}
		udef, ok := up.Types[name]
		if !ok {
			t.Errorf("type %s: not in sabakan's schema", name)
			continue
		}
		if udef.Kind != def.Kind {
			t.Errorf("type %s: kind %s, sabakan's is %s", name, def.Kind, udef.Kind)
			continue
		}
		checked++
		for _, f := range def.Fields {
			uf := udef.Fields.ForName(f.Name)
			if uf == nil {
				t.Errorf("%s.%s: not in sabakan's schema", name, f.Name)
				continue
			}
			if f.Type.String() != uf.Type.String() {
				t.Errorf("%s.%s: type %s, sabakan's is %s", name, f.Name, f.Type, uf.Type)
			}
			for _, a := range f.Arguments {
				ua := uf.Arguments.ForName(a.Name)
				if ua == nil {
					t.Errorf("%s.%s(%s): not in sabakan's schema", name, f.Name, a.Name)
				} else if a.Type.String() != ua.Type.String() {
					t.Errorf("%s.%s(%s): type %s, sabakan's is %s", name, f.Name, a.Name, a.Type, ua.Type)
				}
			}
			// Required arguments upstream must be known here too.
			for _, ua := range uf.Arguments {
				if ua.Type.NonNull && f.Arguments.ForName(ua.Name) == nil {
					t.Errorf("%s.%s: lacks sabakan's required argument %s", name, f.Name, ua.Name)
				}
			}
		}
		for _, v := range def.EnumValues {
			if udef.EnumValues.ForName(v.Name) == nil {
				t.Errorf("enum %s: value %s not in sabakan's schema", name, v.Name)
			}
		}
		for _, uv := range udef.EnumValues {
			if def.EnumValues.ForName(uv.Name) == nil {
				t.Errorf("enum %s: lacks sabakan's value %s", name, uv.Name)
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d types checked", checked)
	}
}

// TestQueryValidatesUpstream: the query ckegen sends is valid against
// sabakan's schema as well as the project's.
func TestQueryValidatesUpstream(t *testing.T) {
	for name, s := range map[string]*ast.Schema{"sabakan's": upstreamSchema(t), "the project's": projectSchema(t)} {
		if _, err := gqlparser.LoadQueryWithRules(s, ckeSearch_Operation, nil); err != nil {
			t.Errorf("ckeSearch against %s schema: %v", name, err)
		}
	}
}
