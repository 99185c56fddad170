package doclinks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// code is an inline code span of Markdown (outside fenced blocks).
var code = regexp.MustCompile("`([^`\n]+)`")

// spans are the code of a Markdown document: its inline code spans, and
// each line of its fenced blocks (commands, the diagram of the layers).
func spans(doc string) []string {
	var out []string
	for _, m := range code.FindAllStringSubmatch(fence.ReplaceAllString(doc, ""), -1) {
		out = append(out, m[1])
	}
	for _, f := range fence.FindAllString(doc, -1) {
		out = append(out, strings.Split(f, "\n")...)
	}
	return out
}

// module is the project's module path: an import path under it names a
// directory of the repository.
const module = "github.com/ckegen/ckegen/"

// ref is what a word of a code span names in the repository: a file or a
// directory, and in the package there, when ident is set, a declaration
// ("Reader"; "Reader.Request", a method or field of a type).
type ref struct{ path, ident string }

// identifier is a Go name after a package: tick.Memory,
// intake.Reader.Request, cmd/ckegen.TestDaemonProcess.
var identifier = regexp.MustCompile(`^([A-Z][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?`)

// refOf is what word names in the repository, if anything: a path whose
// first element is an entry at the top of the repository (`tick/gate.go`,
// `cmd/ckegen/`, `./machine/`, an import path of the module), or a
// package's exported name (`tick.Memory`, `cmd/ckegen.TestDaemonProcess`);
// not an etcd key (`sabakan/status`, `sabakan/history/<rev>`), nor a
// pattern (`internal/testutil/*`). dir is the directory a `cd` before it
// in the same span moved to.
func refOf(word, dir string, top, keys map[string]bool) (ref, bool) {
	word = strings.TrimPrefix(word, "./")
	if rest, ok := strings.CutPrefix(word, module); ok {
		word = rest
	}
	var r ref
	last := strings.LastIndexByte(word, '/') + 1
	if i := strings.IndexByte(word[last:], '.'); i > 0 {
		if m := identifier.FindStringSubmatch(word[last+i+1:]); m != nil {
			r.ident = m[1]
			if m[2] != "" {
				r.ident += "." + m[2]
			}
			word = word[:last+i]
		}
	}
	// A file named with its line (tick/gate.go:42), a key with its value
	// (sabakan/owner: ckegen).
	if i := strings.IndexByte(word, ':'); i > 0 {
		word = word[:i]
	}
	if !strings.Contains(word, "/") && r.ident == "" || strings.ContainsAny(word, "*<>{}$()") {
		return ref{}, false
	}
	if dir != "" {
		word = dir + "/" + word
	}
	if first, _, _ := strings.Cut(word, "/"); !top[first] {
		return ref{}, false
	}
	if keys[word] {
		return ref{}, false
	}
	for k := range keys {
		if strings.HasSuffix(k, "/") && strings.HasPrefix(word, k) {
			return ref{}, false
		}
	}
	r.path = word
	return r, true
}

// etcdKeys are the keys and prefixes storage declares (its Key
// constants): `sabakan/status` names a key, not a file, though sabakan/
// is a directory too.
func etcdKeys(t *testing.T, root string) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	// The keys are declared in storage.go, and where a file of storage
	// keeps records of its own (presence.go).
	for _, name := range []string{"storage.go", "presence.go", "forecast.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "storage", name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		addKeys(t, f, keys)
	}
	if len(keys) < 15 {
		t.Fatalf("only %d etcd keys found in storage/", len(keys))
	}
	return keys
}

// addKeys adds the values of f's Key constants to keys.
func addKeys(t *testing.T, f *ast.File, keys map[string]bool) {
	t.Helper()
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Key") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					keys[v] = true
				}
			}
		}
	}
}

// declared are the names a package declares at its top level, and
// "Type.Name" for each method and field of its types, tests included.
func declared(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if idx, ok := recv.(*ast.IndexExpr); ok {
					recv = idx.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					names[id.Name+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
						st, ok := s.Type.(*ast.StructType)
						if !ok {
							continue
						}
						for _, field := range st.Fields.List {
							for _, n := range field.Names {
								names[s.Name.Name+"."+n.Name] = true
							}
							if len(field.Names) == 0 { // embedded
								typ := field.Type
								if star, ok := typ.(*ast.StarExpr); ok {
									typ = star.X
								}
								switch e := typ.(type) {
								case *ast.Ident:
									names[s.Name.Name+"."+e.Name] = true
								case *ast.SelectorExpr:
									names[s.Name.Name+"."+e.Sel.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
	return names
}

// TestPaths: every repository path the README and docs/*.md name in
// code (spans and fenced blocks) exists, and every exported name of a package of the repository
// they name is declared there; a file that moved, or a name that was
// renamed, fails.
func TestPaths(t *testing.T) {
	root := "../../.."
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			top[e.Name()] = true
		}
	}
	keys := etcdKeys(t, root)
	packages := map[string]map[string]bool{}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	paths, idents := 0, 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, span := range spans(string(data)) {
			words, dir := strings.Fields(span), ""
			for i := 0; i < len(words); i++ {
				word := words[i]
				if word == "cd" && i+1 < len(words) {
					i++
					dir = strings.TrimSuffix(strings.TrimPrefix(words[i], "./"), "/")
					continue
				}
				r, ok := refOf(word, dir, top, keys)
				if !ok {
					continue
				}
				paths++
				where := filepath.Join(root, filepath.FromSlash(r.path))
				if _, err := os.Stat(where); err != nil {
					t.Errorf("%s: `%s` names %s, which is not in the repository", filepath.Base(f), span, r.path)
					continue
				}
				if r.ident == "" {
					continue
				}
				idents++
				if packages[r.path] == nil {
					packages[r.path] = declared(t, where)
				}
				if !packages[r.path][r.ident] {
					t.Errorf("%s: `%s` names %s in %s, which declares no such name", filepath.Base(f), span, r.ident, r.path)
				}
			}
		}
	}
	t.Logf("%d paths checked, %d of them names in a package", paths, idents)
	if paths < 100 || idents < 50 {
		t.Errorf("only %d paths, %d of them names in a package, checked: the documents are not where the test looks", paths, idents)
	}
}

func TestRefOf(t *testing.T) {
	top := map[string]bool{"tick": true, "sabakan": true, "cmd": true, "internal": true, "ckeref": true}
	keys := map[string]bool{"sabakan/status": true, "sabakan/owner": true, "sabakan/history/": true}
	for _, c := range []struct {
		word, dir string
		want      ref
	}{
		{"tick/gate.go", "", ref{"tick/gate.go", ""}},
		{"tick/gate.go:42", "", ref{"tick/gate.go", ""}},
		{"./cmd/ckegen", "", ref{"cmd/ckegen", ""}},
		{"cmd/ckegen/", "", ref{"cmd/ckegen/", ""}},
		{"./cmd/ckegenerate", "ckeref", ref{"ckeref/cmd/ckegenerate", ""}},
		{"build", "ckeref", ref{}},
		{"github.com/ckegen/ckegen/internal/x", "", ref{"internal/x", ""}},
		{"sabakan/schema.graphql", "", ref{"sabakan/schema.graphql", ""}},
		{"tick.Memory", "", ref{"tick", "Memory"}},
		{"tick.Step.Run(ctx,", "", ref{"tick", "Step.Run"}},
		{"cmd/ckegen.TestDaemonProcess", "", ref{"cmd/ckegen", "TestDaemonProcess"}},
		{"sabakan/status", "", ref{}},
		{"sabakan/owner:", "", ref{}},
		{"sabakan/history/<rev>", "", ref{}},
		{"sabakan/history/12", "", ref{}},
		{"internal/testutil/*", "", ref{}},
		{"tick", "", ref{}},
		{"tick.go", "", ref{}},
		{"other/file.go", "", ref{}},
		{"other.Name", "", ref{}},
		{"github.com/cybozu-go/well", "", ref{}},
		{"DecodeList20000/compact", "", ref{}},
	} {
		got, ok := refOf(c.word, c.dir, top, keys)
		if got != c.want || ok != (c.want != ref{}) {
			t.Errorf("refOf(%q, %q) = %+v, %v; want %+v", c.word, c.dir, got, ok, c.want)
		}
	}
}
