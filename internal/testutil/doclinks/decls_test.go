package doclinks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// decls are the Go declarations of a repository, read from its sources
// with go/parser alone (no type checking, so that the test stays fast):
// each package by its directory, and each type by its name across
// packages, for a document that names a type without its package.
type decls struct {
	pkgs   map[string]*pkgDecls // by directory, slash-separated, "." the root
	byName map[string][]typeRef
}

// pkgDecls are what a directory's Go files declare, tests included (the
// documents name tests too): its top-level names and its types.
type pkgDecls struct {
	names map[string]bool
	types map[string]*typeDecl
}

// typeDecl is what a document may name after a type: its fields (an
// embedded one by its type's name) and methods, an interface's methods,
// the members of the types it embeds (promoted), and those of the type it
// is made from: all of them for an alias (type T = U), the fields and
// promoted members for a defined type (type T U; an interface's methods
// too). A type that embeds or is made from a type outside the repository
// is open: its members cannot be known from the repository's sources, and
// any member is accepted.
type typeDecl struct {
	fields, methods map[string]bool
	embeds          []typeRef
	from            *typeRef
	alias, iface    bool
	open            bool
}

// typeRef is a type of the repository: its package's directory and name.
type typeRef struct{ pkg, name string }

// readDecls parses every Go file of fsys but those under testdata and
// hidden directories. Every module of the repository has a path under
// module, so that an import path under it names a directory of fsys.
func readDecls(fsys fs.FS) (*decls, error) {
	d := &decls{pkgs: map[string]*pkgDecls{}, byName: map[string][]typeRef{}}
	fset := token.NewFileSet()
	err := fs.WalkDir(fsys, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() {
			if p != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		d.addFile(path.Dir(p), f)
		return nil
	})
	return d, err
}

// addFile adds what f, a file of the package in dir, declares.
func (d *decls) addFile(dir string, f *ast.File) {
	imports := importsOf(f)
	pkg := d.pkg(dir)
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil {
				pkg.names[decl.Name.Name] = true
				continue
			}
			if recv, ok := baseType(decl.Recv.List[0].Type).(*ast.Ident); ok {
				d.typ(dir, recv.Name).methods[decl.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range decl.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					pkg.names[s.Name.Name] = true
					t := d.typ(dir, s.Name.Name)
					t.alias = s.Assign.IsValid()
					d.addType(t, s.Type, dir, imports)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						pkg.names[n.Name] = true
					}
				}
			}
		}
	}
}

// addType adds to t the members its type expression declares.
func (d *decls) addType(t *typeDecl, expr ast.Expr, dir string, imports map[string]string) {
	var fields []*ast.Field
	switch e := expr.(type) {
	case *ast.StructType:
		fields = e.Fields.List
	case *ast.InterfaceType:
		fields, t.iface = e.Methods.List, true
	case *ast.Ident, *ast.SelectorExpr, *ast.IndexExpr, *ast.IndexListExpr, *ast.ParenExpr:
		if r, ok := resolve(expr, dir, imports); ok {
			t.from = &r
		} else {
			t.open = true
		}
		return
	default: // a pointer, map, slice, func or channel type: methods only
		return
	}
	for _, field := range fields {
		for _, n := range field.Names {
			if t.iface {
				t.methods[n.Name] = true
			} else {
				t.fields[n.Name] = true
			}
		}
		if len(field.Names) > 0 {
			continue
		}
		switch e := baseType(field.Type).(type) {
		case *ast.Ident:
			t.fields[e.Name] = !t.iface // an embedded interface is no field
		case *ast.SelectorExpr:
			t.fields[e.Sel.Name] = !t.iface
		}
		if r, ok := resolve(field.Type, dir, imports); ok {
			t.embeds = append(t.embeds, r)
		} else {
			t.open = true
		}
	}
}

// resolve is the type of the repository expr names, written in a file
// of the package in dir; not ok when it is a type from outside the
// repository.
func resolve(expr ast.Expr, dir string, imports map[string]string) (typeRef, bool) {
	switch e := baseType(expr).(type) {
	case *ast.Ident: // a type of the package, or a predeclared one (no members)
		return typeRef{dir, e.Name}, true
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && imports[x.Name] != "" {
			return typeRef{imports[x.Name], e.Sel.Name}, true
		}
	}
	return typeRef{}, false
}

// importsOf maps the names f gives the packages it imports to their
// directories in the repository ("" for a package outside it). A package
// imported without a name is taken to be named as the last element of
// its path: the repository's packages are.
func importsOf(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, s := range f.Imports {
		p, err := strconv.Unquote(s.Path.Value)
		if err != nil {
			continue
		}
		name := path.Base(p)
		if s.Name != nil {
			name = s.Name.Name
		}
		dir := ""
		if rest, ok := strings.CutPrefix(p, module); ok {
			dir = rest
		}
		m[name] = dir
	}
	return m
}

// baseType is the type expr names without a pointer, parentheses or type
// arguments: *T, (T), T[int] are T.
func baseType(expr ast.Expr) ast.Expr {
	for {
		switch e := expr.(type) {
		case *ast.StarExpr:
			expr = e.X
		case *ast.ParenExpr:
			expr = e.X
		case *ast.IndexExpr:
			expr = e.X
		case *ast.IndexListExpr:
			expr = e.X
		default:
			return expr
		}
	}
}

func (d *decls) pkg(dir string) *pkgDecls {
	p := d.pkgs[dir]
	if p == nil {
		p = &pkgDecls{names: map[string]bool{}, types: map[string]*typeDecl{}}
		d.pkgs[dir] = p
	}
	return p
}

// typ is the type name of the package in dir, made when first met (a
// method may come before its type's declaration).
func (d *decls) typ(dir, name string) *typeDecl {
	p := d.pkg(dir)
	t := p.types[name]
	if t == nil {
		t = &typeDecl{fields: map[string]bool{}, methods: map[string]bool{}}
		p.types[name] = t
		d.byName[name] = append(d.byName[name], typeRef{dir, name})
	}
	return t
}

// isType says whether the package in dir declares a type name.
func (d *decls) isType(dir, name string) bool {
	p := d.pkgs[dir]
	return p != nil && p.types[name] != nil
}

// has says whether the type r has member: declared, promoted, or from
// the type it is made from.
func (d *decls) has(r typeRef, member string) bool {
	// Each type to look in, and whether its own methods count (not those
	// of the type a defined type is made from).
	type visit struct {
		typeRef
		methods bool
	}
	seen := map[visit]bool{}
	todo := []visit{{r, true}}
	for len(todo) > 0 {
		v := todo[0]
		todo = todo[1:]
		if seen[v] {
			continue
		}
		seen[v] = true
		p := d.pkgs[v.pkg]
		if p == nil || p.types[v.name] == nil {
			continue
		}
		t := p.types[v.name]
		if t.open || t.fields[member] || (v.methods || t.iface) && t.methods[member] {
			return true
		}
		for _, e := range t.embeds {
			todo = append(todo, visit{e, true})
		}
		if t.from != nil {
			todo = append(todo, visit{*t.from, t.alias && v.methods})
		}
	}
	return false
}
