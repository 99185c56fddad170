package doclinks

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// code is an inline code span of Markdown (outside fenced blocks).
var code = regexp.MustCompile("`([^`\n]+)`")

// span is a piece of a document's code and the line it is on.
type span struct {
	text string
	line int
}

// spans are the code of a Markdown document: its inline code spans, and
// each line of its fenced blocks (commands, the diagram of the layers).
func spans(doc string) []span {
	var out []span
	// Fenced blocks blanked to their newlines, so that lines still count.
	inline := fence.ReplaceAllStringFunc(doc, func(f string) string {
		return strings.Repeat("\n", strings.Count(f, "\n"))
	})
	line, last := 1, 0
	for _, m := range code.FindAllStringSubmatchIndex(inline, -1) {
		line += strings.Count(inline[last:m[0]], "\n")
		last = m[0]
		out = append(out, span{inline[m[2]:m[3]], line})
	}
	line, last = 1, 0
	for _, m := range fence.FindAllStringIndex(doc, -1) {
		line += strings.Count(doc[last:m[0]], "\n")
		last = m[0]
		for i, l := range strings.Split(doc[m[0]:m[1]], "\n") {
			out = append(out, span{l, line + i})
		}
	}
	return out
}

// module is the path every module of the repository has its path under:
// an import path under it names a directory of the repository.
const module = "github.com/ckegen/ckegen/"

// ref is what a word of a code span names in the repository: a file or a
// directory, and in the package there, when ident is set, a declaration
// ("Reader"; "Reader.Request", a method or field of a type).
type ref struct{ path, ident string }

// identifier is a Go name after a package: tick.Memory,
// intake.Reader.Request, cmd/ckegen.TestDaemonProcess, tick.memory.next.
var identifier = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?`)

// refOf is what word names in the repository, if anything: a path whose
// first element is an entry at the top of the repository (`tick/gate.go`,
// `cmd/ckegen/`, `./machine/`, an import path of the module), or a
// package's name: an exported one (`tick.Memory`,
// `cmd/ckegen.TestDaemonProcess`), or a member of one of its types,
// exported or not (`tick.Step.Run`, `tick.memory.next` when tick declares
// a type memory); not an etcd key (`sabakan/status`,
// `sabakan/history/<rev>`), nor a pattern (`internal/testutil/*`), nor a
// key of a file (`sabakan.spare_node_taint_key`). dir is the directory a
// `cd` before it in the same span moved to; isType says whether a
// directory's package declares a type.
func refOf(word, dir string, top, keys map[string]bool, isType func(dir, name string) bool) (ref, bool) {
	word = strings.TrimPrefix(word, "./")
	if rest, ok := strings.CutPrefix(word, module); ok {
		word = rest
	}
	last := strings.LastIndexByte(word, '/') + 1
	if i := strings.IndexByte(word[last:], '.'); i > 0 {
		if m := identifier.FindStringSubmatch(word[last+i+1:]); m != nil && (exported(m[1]) || m[2] != "") {
			r, ok := pathRef(word[:last+i], dir, true, top, keys)
			if ok && (exported(m[1]) || isType(r.path, m[1])) {
				r.ident = m[1]
				if m[2] != "" {
					r.ident += "." + m[2]
				}
				return r, true
			}
		}
	}
	return pathRef(word, dir, false, top, keys)
}

// pathRef is the path word names, if any; named says a Go name follows it.
func pathRef(word, dir string, named bool, top, keys map[string]bool) (ref, bool) {
	// A file named with its line (tick/gate.go:42), a key with its value
	// (sabakan/owner: ckegen).
	if i := strings.IndexByte(word, ':'); i > 0 {
		word = word[:i]
	}
	if !strings.Contains(word, "/") && !named || strings.ContainsAny(word, "*<>{}$()") {
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
	return ref{path: word}, true
}

func exported(name string) bool { return name[0] >= 'A' && name[0] <= 'Z' }

// member is a Go name of the form Type.Member at the start of a word.
var member = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)`)

// bareMember is the type and member word names when it reads as
// Type.Member without a package (`Memory.next`, `Step.Run(ctx,`,
// `(*Step).Run`): a word without a slash whose first
// part is exported. A lower-case first part reads as a package (CKE's
// `server.Integrator`) or a key of a file (`status.duration`,
// `options.kubelet.cri_endpoint`) as often as an unexported type: a
// document names an unexported type's member with its package
// (`tick.memory.next`), which refOf reads. Whether the first part is a
// type of the repository is for the caller to say.
func bareMember(word string) (typ, mem string, ok bool) {
	if strings.Contains(word, "/") {
		return "", "", false
	}
	// A method expression, (*Step).Run, reads as Step.Run.
	word = strings.Replace(strings.TrimLeft(word, "(*&[!\"'"), ").", ".", 1)
	m := member.FindStringSubmatch(word)
	if m == nil || !exported(m[1]) {
		return "", "", false
	}
	return m[1], m[2], true
}

// checker checks what documents name in code against a repository.
type checker struct {
	fsys  fs.FS           // the repository
	top   map[string]bool // the entries at its top
	keys  map[string]bool // etcd keys and prefixes, which read as paths
	decls *decls

	paths, names, members int // what was checked
}

// check returns what doc names in code that the repository does not
// have, each as "line: what and what to do".
func (c *checker) check(doc string) []string {
	var out []string
	for _, s := range spans(doc) {
		words, dir := strings.Fields(s.text), ""
		for i := 0; i < len(words); i++ {
			if words[i] == "cd" && i+1 < len(words) {
				i++
				dir = strings.TrimSuffix(strings.TrimPrefix(words[i], "./"), "/")
				continue
			}
			if msg := c.word(words[i], dir); msg != "" {
				out = append(out, fmt.Sprintf("%d: `%s` %s", s.line, s.text, msg))
			}
		}
	}
	return out
}

// word checks one word of a span: "" when it names nothing of the
// repository, or what it names is there.
func (c *checker) word(word, dir string) string {
	if r, ok := refOf(word, dir, c.top, c.keys, c.decls.isType); ok {
		return c.ref(r)
	}
	typ, mem, ok := bareMember(word)
	if !ok || len(c.decls.byName[typ]) == 0 {
		return ""
	}
	c.members++
	var pkgs []string
	for _, r := range c.decls.byName[typ] {
		if c.decls.has(r, mem) {
			return ""
		}
		pkgs = append(pkgs, r.pkg)
	}
	return fmt.Sprintf("names %s.%s, but no type %s of the repository (in %s) has a field or method %s: name a member it has, or, if it is not Go, write it so that it does not read as Type.Member",
		typ, mem, typ, strings.Join(pkgs, ", "), mem)
}

// ref checks a path and the Go name in it.
func (c *checker) ref(r ref) string {
	c.paths++
	dir := path.Clean(r.path)
	if _, err := fs.Stat(c.fsys, dir); err != nil {
		return fmt.Sprintf("names %s, which is not in the repository: name the path it has now", r.path)
	}
	if r.ident == "" {
		return ""
	}
	c.names++
	p := c.decls.pkgs[dir]
	if p == nil {
		return fmt.Sprintf("names %s in %s, which holds no Go package", r.ident, r.path)
	}
	typ, mem, ok := strings.Cut(r.ident, ".")
	if !ok {
		if p.names[typ] {
			return ""
		}
		return fmt.Sprintf("names %s in %s, which declares no such name: name what it declares now", typ, r.path)
	}
	c.members++
	switch {
	case p.types[typ] == nil && p.names[typ]:
		return fmt.Sprintf("names %s in %s, but %s is not a type there: name a type and its member", r.ident, r.path, typ)
	case p.types[typ] == nil:
		return fmt.Sprintf("names %s in %s, which declares no type %s: name what it declares now", r.ident, r.path, typ)
	case !c.decls.has(typeRef{dir, typ}, mem):
		return fmt.Sprintf("names %s in %s, but its type %s has no field or method %s: name a member it has", r.ident, r.path, typ, mem)
	}
	return ""
}

// etcdKeys are the keys and prefixes storage declares (its Key
// constants): `sabakan/status` names a key, not a file, though sabakan/
// is a directory too.
func etcdKeys(t *testing.T, root string) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	// The keys are declared in storage.go, and where a file of storage
	// keeps records of its own (presence.go).
	for _, name := range []string{"storage.go", "presence.go", "forecast.go", "orders.go"} {
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

// TestPaths: every repository path the README and docs/*.md name in
// code (inline spans and each word of fenced blocks) exists, and every Go
// name they give is declared there. A Go name is either
//   - after a path of the repository: an exported name of its package
//     (`tick.Memory`), or a field or method of a type of it, exported
//     or not (`tick.Step.Run`, `storage.Status.Pending`,
//     `tick.memory.next` when tick declares a type memory; a lower-case
//     name that is no type there is not Go: `sabakan.spare_node_taint_key`
//     is a key of CKE's settings);
//   - or Type.Member without a package (`Memory.next`, `Step.Run(ctx,`):
//     a word without a slash whose first part is an exported name that a
//     package of the repository, tests included, gives a type. A
//     lower-case first part is not read without a package: `status.state`,
//     `server.Integrator` are a key of a record and CKE's package, not
//     types status and server of the repository; nor is a first part no
//     package gives a type (CKE's `Server.Run`). A name several packages
//     give a type is right when any of them has the member.
//
// A member is a field (an embedded one by its type's name) or method,
// an interface's method, one promoted from an embedded type of the
// repository, or one of the type an alias is of (a defined type, type
// T U: U's fields and promoted members, not U's methods); a type that
// embeds or is made from one outside the repository accepts any member.
// Only the first member is checked (`Decision.Plan.Ops` checks Plan). A
// file that moved, or a name that was renamed, fails with the document's
// line and what to do.
func TestPaths(t *testing.T) {
	root := "../../.."
	c := repoChecker(t, root)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, msg := range c.check(string(data)) {
			t.Errorf("%s:%s", rel, msg)
		}
	}
	t.Logf("%d paths checked, %d of them names in a package; %d members of types", c.paths, c.names, c.members)
	if c.paths < 100 || c.names < 50 || c.members < 20 {
		t.Errorf("only %d paths, %d of them names in a package, and %d members checked: the documents are not where the test looks", c.paths, c.names, c.members)
	}
}

// repoChecker is the checker of the repository at root.
func repoChecker(t *testing.T, root string) *checker {
	t.Helper()
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
	fsys := os.DirFS(root)
	d, err := readDecls(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return &checker{fsys: fsys, top: top, keys: etcdKeys(t, root), decls: d}
}

func TestRefOf(t *testing.T) {
	top := map[string]bool{"tick": true, "sabakan": true, "cmd": true, "internal": true, "ckeref": true}
	keys := map[string]bool{"sabakan/status": true, "sabakan/owner": true, "sabakan/history/": true}
	isType := func(dir, name string) bool { return dir == "tick" && name == "memory" }
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
		got, ok := refOf(c.word, c.dir, top, keys, isType)
		if got != c.want || ok != (c.want != ref{}) {
			t.Errorf("refOf(%q, %q) = %+v, %v; want %+v", c.word, c.dir, got, ok, c.want)
		}
	}
}
